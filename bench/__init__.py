"""Benchmarks of get_core, run from the repository root as modules (figures and commands in docs/BENCHMARKS.md).

``bench.paper`` reproduces the paper's tables, ``bench.speed`` times training against the authors' code, and
``bench.studies`` holds one-off studies; ``bench.common`` is what their command lines share. get_core never
imports bench.
"""
