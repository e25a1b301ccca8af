"""Measurement: profile one GPU (PyTorch, optional), validate predictions against published runs,
and calibrate the system parameters from measured rows."""
