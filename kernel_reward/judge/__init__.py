"""The trusted judge: one evaluation's pipeline, the verdict, correctness, the resized-input check, reference runs,
output comparisons and feedback. Runs in a process the candidate cannot reach."""
