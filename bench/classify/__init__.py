"""The classification benchmark (issue 32): ``python -m bench.classify``."""
