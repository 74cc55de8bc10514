"""Evaluation scripts and benchmarks (run as ``python -m eval.<name>``)."""
