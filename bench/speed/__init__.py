"""The speed benchmark: training throughput of get_core against the authors' implementation, in the same run.

``python -m bench.speed --help``; ``reference`` times the authors' code (``python -m bench.speed.reference``).
"""
