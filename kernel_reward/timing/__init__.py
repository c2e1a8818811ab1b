"""The judge's clock: timed batches, calibration of fixed costs, statistics, the roofline check, the output
seal and the GPU's state around a timing."""
