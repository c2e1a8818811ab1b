"""The untrusted runner: the only process that holds the candidate's code. It builds the candidate, runs the
calls the judge hands it and observes launches and coverage."""
