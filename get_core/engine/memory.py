"""What a fit will hold in memory, estimated before it allocates anything, and the refusal when it cannot fit.

Without it a fit asks torch for its buffers and fails late: ``n_starts=10**9`` got torch's raw "can't allocate
36 GB", a legal 1,000,000 x 192-input table at depth 4 passed 6 GB, and 10,000 classes on 20,000 rows passed 6 GB. The
estimate counts what the fit adds to the caller's table, growing with it, the starts and the classes (see
``optimize``): the table's scaled float64 copy, its float32 ``Problems`` (X with a ones column, and its transpose) and
targets (a classifier's one-hot, float64 and float32); the CART start's float32 copy of the rows; per start, the
parameters with their Adam moments, gradient and best copies; without the fused CPU kernel (``native``), the soft
pass's (starts, nodes, rows) buffers on the rows of one soft epoch, in row chunks of at most
``optimize.CHUNK_ELEMENTS`` elements (the kernel holds a few rows per thread); and the hard-loss checkpoints
over every row: per start and row the leaf index and the prediction's error, a classifier's (starts, rows, classes)
shares and errors, linear leaves' (starts, rows, inputs) slopes and products, and their float64 least-squares rows.
``bench.studies.memory_peaks`` checks it against measured peaks.

A budgeted fit is planned in memory as in time: its probe times ``optimize.PROBE_MODELS`` starts (the least it
holds), and its race, like each level of its polish (``polish_bytes``: a fit on the subtrees' rows beside the fit's
own table), takes no more starts than ``max_starts`` allows.
"""

from __future__ import annotations

import os
import resource

from get_core.config import GETConfig, polishes, soft_rows
from get_core.data.columns import DataError
from get_core.engine import native
from get_core.engine.optimize import CHUNK_ELEMENTS, PROBE_MODELS, resolve_device
from get_core.engine.race import LADDER

PARAM_COPIES = 8  # per start: parameters, gradient, Adam's two moments, the stage's and the fit's best, slack
WORKSPACE_ARRAYS = 5  # soft.Workspace: s, diff (branch nodes) and resid, ping, pong (leaves)
ROUTING_BYTES = 16  # per start and row at a checkpoint: the leaf index (int64), the prediction and its error
CLASS_ROUTING_BYTES = 8  # per start, row and class at a checkpoint: the gathered shares and their squared errors
#: the same where a race holds several problems (a polish level's subtrees): each start's copy of its problem's
#: one-hot targets (``leaves._per_model``), in the node statistics and the loss, comes on top
SUBTREE_CLASS_ROUTING_BYTES = 12
LINEAR_ROUTING_BYTES = 8  # per start, row and input at a checkpoint: each row's leaf slopes and their products
HEADROOM = 1.0  # the estimate aims at the peak itself; MEMORY_SHARE leaves the margin
#: A fit may plan at most this share of the machine's memory, and never more than is free: the rest is the app's,
#: the other runs' and the system's.
MEMORY_SHARE = 0.5


class FitTooLarge(DataError):
    """A fit whose estimated memory exceeds what it may use; the message says what to reduce (a ``DataError``, so
    the worker shows the sentence as the run's failure)."""


def fit_bytes(n_rows: int, n_features: int, depth: int, linear: bool, n_starts: int, n_classes: int = 0,
              soft: int | None = None, fused: bool = False, subtrees: bool = False) -> int:
    """Bytes a fit of ``n_starts`` starts holds at its peak (the module docstring lists what is counted);
    ``n_classes``: a classifier's class count (0: regression); ``soft``: the rows of a soft epoch (None: all);
    ``fused``: the soft pass runs in the fused CPU kernel; ``subtrees``: the rows are several problems'."""
    n, p, p1, branches, leaves = n_rows, n_features, n_features + 1, 2 ** depth - 1, 2 ** depth
    targets = max(1, n_classes)
    data = _data_bytes(n, p, n_classes) + n * p * 4
    params = n_starts * (branches * p1 + leaves * (p1 if linear else targets)) * 4 * PARAM_COPIES
    chunk = min(soft or n, max(64, CHUNK_ELEMENTS // max(1, n_starts * branches)))
    workspace = 0 if fused else n_starts * (2 * branches + 3 * leaves) * chunk * 4
    per_class = SUBTREE_CLASS_ROUTING_BYTES if subtrees else CLASS_ROUTING_BYTES
    per_row = ROUTING_BYTES + per_class * n_classes + (LINEAR_ROUTING_BYTES * p if linear else 0)
    checkpoint = n_starts * n * per_row + (n * (2 * p1 + 2) * 8 if linear else 0)
    return int(HEADROOM * (data + params + workspace + checkpoint))


def _data_bytes(n_rows: int, n_features: int, n_classes: int) -> int:
    """The table's scaled float64 copy, its float32 ``Problems`` and the targets and row weights."""
    return n_rows * (n_features * 8 + (n_features + 1) * 4 * 2 + max(1, n_classes) * (8 + 4) + 4)


def polish_bytes(n_rows: int, level_rows: int, n_features: int, config: GETConfig, n_classes: int, level: int,
                 n_starts: int) -> int:
    """Bytes at the peak of a budgeted polish's ``level`` racing ``n_starts`` starts per subtree on ``level_rows``
    rows in all (its subtrees' rows, each padded to the largest): its own fit of depth ``config.depth - level`` on
    them beside the fit's table, which stays held."""
    return int(HEADROOM * _data_bytes(n_rows, n_features, n_classes)) + fit_bytes(
        level_rows, n_features, config.depth - level, config.leaf == "linear", n_starts, n_classes, None,
        native.available(resolve_device(config.device), n_features), subtrees=True)


def least_starts(config: GETConfig) -> int:
    """The fewest starts a fit of ``config`` holds at once: its own, or a budgeted fit's probe's."""
    return max(PROBE_MODELS, LADDER[0]) if config.time_budget is not None else config.n_starts


def config_bytes(n_rows: int, n_features: int, config: GETConfig, n_classes: int = 0,
                 n_starts: int | None = None) -> int:
    """``fit_bytes`` of a fit of ``config`` at ``n_starts`` (default: ``least_starts``)."""
    return fit_bytes(n_rows, n_features, config.depth, config.leaf == "linear", n_starts or least_starts(config),
                     n_classes, soft_rows(config.batch_rows, n_rows),
                     native.available(resolve_device(config.device), n_features))


def least_bytes(n_rows: int, n_features: int, config: GETConfig, n_classes: int = 0) -> int:
    """The least a fit of ``config`` holds at its peak: ``config_bytes``, or where a budgeted polish follows
    (``config.polishes``) its first level's probe, if more."""
    need = config_bytes(n_rows, n_features, config, n_classes)
    if config.time_budget is None or not polishes(config, n_rows) or config.depth < 2:
        return need
    return max(need, polish_bytes(n_rows, n_rows, n_features, config, n_classes, 1, least_starts(config)))


def max_starts(n_rows: int, n_features: int, config: GETConfig, n_classes: int = 0,
               level: tuple[int, int] | None = None) -> int:
    """The most starts of ``race.LADDER`` a budgeted race may take within ``allowed_bytes``: the fit's own, or with
    ``level`` = (polish level, its rows in all) that level's (``polish_bytes``); the fewest where none fits, all of
    them where the memory cannot be read."""
    allowed = allowed_bytes()

    def need(starts: int) -> int:
        if level is None:
            return config_bytes(n_rows, n_features, config, n_classes, starts)
        return polish_bytes(n_rows, level[1], n_features, config, n_classes, level[0], starts)

    return max((s for s in LADDER if allowed is None or need(s) <= allowed), default=LADDER[0])


def available_bytes() -> int | None:
    """Memory this process may still take: the system's available memory (Linux ``MemAvailable``), less where an
    address-space limit (``RLIMIT_AS``) leaves less; None where neither can be read."""
    free = _meminfo("MemAvailable")
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft != resource.RLIM_INFINITY:
        with open("/proc/self/statm") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        free = soft - mapped if free is None else min(free, soft - mapped)
    return free


def allowed_bytes() -> int | None:
    """What a fit may plan: ``MEMORY_SHARE`` of the machine's memory, and no more than ``available_bytes``; None
    where neither can be read."""
    total, free = _meminfo("MemTotal"), available_bytes()
    bounds = [b for b in (None if total is None else int(MEMORY_SHARE * total), free) if b is not None]
    return min(bounds) if bounds else None


def _meminfo(field: str) -> int | None:
    """A field of Linux's /proc/meminfo in bytes; None where it cannot be read."""
    try:
        with open("/proc/meminfo") as meminfo:
            return next((int(line.split()[1]) * 1024 for line in meminfo if line.startswith(field + ":")), None)
    except OSError:
        return None


def refuse_oversized_fit(n_rows: int, n_features: int, config: GETConfig, n_classes: int = 0) -> None:
    """Raise ``FitTooLarge`` before a fit allocates when its estimate (``least_bytes``) exceeds what it may plan
    (``allowed_bytes``)."""
    need, free = least_bytes(n_rows, n_features, config, n_classes), allowed_bytes()
    if free is None or need <= free:
        return
    classes = f" of {n_classes:,} classes" if n_classes else ""
    raise FitTooLarge(
        f"This fit needs about {need / 2**30:,.1f} GB of memory ({least_starts(config):,} starts of a "
        f"depth-{config.depth} tree{classes} on {n_rows:,} rows x {n_features:,} inputs) and may use "
        f"{free / 2**30:,.1f} GB (at most {MEMORY_SHARE:.0%} of this machine's memory, and what is free): use fewer "
        "starts (n_starts), a smaller depth, fewer rows or fewer inputs (one-hot columns count one input per level)"
        + (", or fewer classes." if n_classes else "."))
