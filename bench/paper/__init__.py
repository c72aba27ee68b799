"""The paper benchmark: test R2 against the paper (its Table 2) and training optimality (its Tables 3 and 4).

``python -m bench.paper --help``; ``run`` is the command line, ``sweep`` runs and stores cells, ``methods`` fits
them, ``report`` summarizes them, ``reference_r2`` runs the authors' code on the same splits.
"""
