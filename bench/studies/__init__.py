"""One-off studies behind statements in docs/BENCHMARKS.md, each ``python -m bench.studies.NAME --help``."""
