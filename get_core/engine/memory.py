"""What a fit will hold in memory, estimated before it allocates anything, and the refusal when it cannot fit.

Without it a fit asks torch for its buffers and fails late: ``n_starts=10**9`` got torch's raw "can't allocate
36 GB", and a legal 1,000,000 x 192-input table at depth 4 passed 6 GB. The estimate counts what the fit adds to the
caller's table, growing with it and with the starts (see ``optimize``): the table's scaled float64 copy and its float32
``Problems`` (X with a ones column, and its transpose); per start, the parameters with their Adam moments, gradient and
best copies; the soft pass's (starts, nodes, rows) ``soft.Workspace`` buffers, in row chunks of at most
``optimize.CHUNK_ELEMENTS`` elements; and the hard-loss checkpoints' (starts, rows) routing over every row.
"""

from __future__ import annotations

import os
import resource

from get_core.config import GETConfig
from get_core.data.columns import DataError
from get_core.engine.optimize import CHUNK_ELEMENTS
from get_core.engine.race import LADDER

PARAM_COPIES = 8  # per start: parameters, gradient, Adam's two moments, the stage's and the fit's best, slack
WORKSPACE_ARRAYS = 5  # soft.Workspace: s, diff (branch nodes) and resid, ping, pong (leaves)
ROUTING_BYTES = 16  # per start and row at a checkpoint: the leaf index (int64), the prediction and its error
HEADROOM = 1.25  # the estimate leaves out Python, torch's own allocations and fragmentation


class FitTooLarge(DataError):
    """A fit whose estimated memory exceeds what this machine has free; the message says what to reduce (a
    ``DataError``, so the worker shows the sentence as the run's failure)."""


def fit_bytes(n_rows: int, n_features: int, depth: int, linear: bool, n_starts: int) -> int:
    """Bytes a fit of ``n_starts`` starts holds at its peak (the module docstring lists what is counted)."""
    p1, branches, leaves = n_features + 1, 2 ** depth - 1, 2 ** depth
    data = n_rows * n_features * 8 + n_rows * p1 * 4 * 2
    params = n_starts * (branches * p1 + leaves * (p1 if linear else 1)) * 4 * PARAM_COPIES
    per_row = n_starts * (2 * branches + 3 * leaves)
    chunk = min(n_rows, max(64, CHUNK_ELEMENTS // max(1, n_starts * branches)))
    workspace = per_row * chunk * 4
    routing = n_starts * n_rows * ROUTING_BYTES
    return int(HEADROOM * (data + params + workspace + routing))


def available_bytes() -> int | None:
    """Memory this process may still take: the system's available memory (Linux ``MemAvailable``), less where an
    address-space limit (``RLIMIT_AS``) leaves less; None where neither can be read."""
    free = None
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    free = int(line.split()[1]) * 1024
    except OSError:
        pass
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft != resource.RLIM_INFINITY:
        with open("/proc/self/statm") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        free = soft - mapped if free is None else min(free, soft - mapped)
    return free


def refuse_oversized_fit(n_rows: int, n_features: int, config: GETConfig) -> None:
    """Raise ``FitTooLarge`` before a fit allocates when its estimate exceeds the free memory. A budgeted fit is
    counted at the fewest starts its race may take (``race.LADDER[0]``)."""
    starts = LADDER[0] if config.time_budget is not None else config.n_starts
    need, free = fit_bytes(n_rows, n_features, config.depth, config.leaf == "linear", starts), available_bytes()
    if free is None or need <= free:
        return
    raise FitTooLarge(
        f"This fit needs about {need / 2**30:,.1f} GB of memory ({starts:,} starts of a depth-{config.depth} tree on "
        f"{n_rows:,} rows x {n_features:,} inputs) and {free / 2**30:,.1f} GB is free: use fewer starts (n_starts), "
        "a smaller depth, fewer rows or fewer inputs (one-hot columns count one input per level).")
