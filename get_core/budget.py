"""Time budgets (``time_budget=seconds``): one clock, and the rules that share a budget's seconds out.

One clock, ``now()``. Outside a fit it is ``time.monotonic`` (a deadline must not move when the wall clock is set).
Inside one (``counting``, which ``engine.train`` holds for the whole fit) it counts the seconds the fit's thread was
not kept waiting for a core: wall seconds minus the thread's run-queue delay (Linux's ``schedstat``; where that is
not readable, wall seconds). On a free machine the two clocks agree; on a busy one a budget second takes more wall
seconds and buys the same work, so the race's plan (``engine.race``) holds: at load 5-9 on 2 cores a wall-clock
``time_budget=10`` on a planted depth-3 tree fell from 98% of its noise ceiling to 47%, CART's level (issue 34).
Why not the process's CPU seconds: a fit's threads run in parallel only part of the time (on 2 cores, 1.0 to 2.0
cores' worth), so CPU seconds over threads runs slower than the wall clock even on a free machine, and the thread's
own CPU seconds miss its waits for its helper threads. The clock never runs slower than ``1 / STRETCH`` of the wall
clock, so a fit still ends by about ``STRETCH`` times its budget however busy the machine (the race stops past
``race.HARD_LIMIT``); below that share the budget buys less work and the fit is marked starved (``train``).
The race's pacing, the probes, the node refit's deadline and the polish's shares all read ``now()``; the worker's
heartbeats and the progress reports' rate stay on the wall clock. A ``Budget`` is seconds counted from a start on
that clock: the fit's (``engine.train``), the optimization's first part of it, a polish level's share
(``engine.polish``); a budget is read on the thread that counts it. GETRegressorCV's search shares its budget over
its fits in advance (``split_budget``), so its shares are seconds, not clocks. Torch-free: the run-time estimate
(``runs.estimate``) reads ``search_seconds`` without the trainer.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import time
from dataclasses import dataclass, field
from typing import Iterator

#: The share of a GETRegressorCV budget that its search fits split equally; the refit, the returned tree, gets the
#: rest (and the shares of the fits the early stop skipped).
SEARCH_SHARE = 2.0 / 3.0
#: The least seconds one search fit gets. Below it the probes, the CART start and the smallest race alone overrun,
#: so a long search takes longer than its budget.
MIN_SEARCH_FIT_SECONDS = 1.0


# Every share of a budget lives here (the search's above, a fit's parts and an app run's counterpart below); the
# engine, the estimators, the app's runs and their estimate read them.
#: With polish on (by default with a budget: ``config.polishes``), the polish's share of the budget (its levels
#: share it, ``polish.level_seconds``; the optimization gets the rest). Planted depth 4, 10 s, seeds 0-9: 0.5 reached
#: 95.9-98.3% of the noise ceiling on 9 seeds and 70.8% on one (a wrong root), 0.35 95.8-98.5% on all ten (medians
#: 96.8 both); a single miss is within luck, so the even split stays.
POLISH_SHARE = 0.5
#: The node refit's share of the optimization's seconds (``node_refit``, run on the race's best tree): measured at
#: 0.1-1.1 s of 10 on 12,000 rows, depth 4; no pass starts after it (the first always runs, unless the fit's budget
#: is spent).
REFIT_SHARE = 0.1
#: A budgeted fit's CART start costs at most about this share of its budget: it runs before the race and cannot be
#: paced. On every row of 300,000 x 19 at depth 4 it took 7.3 s of a 10-s fit (a busy 2-core machine), outside the
#: race's plan. ``CART_PROBE_ROWS`` rows time its cost first.
CART_SHARE = 0.1
#: A budgeted fit with logistic leaves (``engine.logistic``) keeps this share of its budget for the per-leaf fits
#: after the tree (the training, polish included, gets the rest); leaves not taken up by the budget's end keep their
#: class shares. Before (issue 52) the leaf fits ran after the budget: up to 78 s of wall time for a 10-s search on
#: phoneme (5,404 rows, depth 7) on a loaded machine.
LOGISTIC_SHARE = 0.2
#: A budgeted fit's second probe (``engine.optimize.budgeted``) runs only when it should cost at most this share of
#: the budget (else at fewer starts).
PROBE_SHARE = 0.05
#: The most of a budgeted optimization's seconds kept, after its race, for the passes over every row that follow it
#: (``engine.train.FINISH_CHECKPOINTS``).
MAX_FINISH_SHARE = 0.25
#: A budgeted app run's GET fit with the other kind of splits (``runs.spec.counterpart_config``, the Compare
#: page's counterpart) gets this share of the run's budget. The run's own fit or search gets all of it, and the
#: baselines (CART, the forest, HistGradientBoosting) none: they are fitted at their usual settings, never cut by
#: GET's budget (issue 48), and may finish after GET does.
COUNTERPART_SHARE = 0.5


#: The most wall seconds one budget second takes: the clock runs at least at 1 / STRETCH of the wall clock. Below
#: ``race.HARD_LIMIT`` (2), so that what follows the race's deadline (leaf refits, the last scores) still ends
#: within twice the budget.
STRETCH = 1.8
#: This thread's scheduler statistics: seconds on a core, seconds waiting on a run queue, time slices (nanoseconds).
SCHEDSTAT = "/proc/thread-self/schedstat"


class ThreadWaits:
    """The seconds this thread has waited for a core (its ``SCHEDSTAT``, read again at each call); the descriptor
    stays this thread's whichever thread reads it. ``open`` gives None where the machine does not say."""

    def __init__(self, descriptor: int):
        self.descriptor = descriptor

    @classmethod
    def open(cls) -> "ThreadWaits | None":
        try:
            waits = cls(os.open(SCHEDSTAT, os.O_RDONLY))
        except OSError:
            return None
        try:
            waits()
        except (OSError, ValueError, IndexError):
            waits.close()
            return None
        return waits

    def __call__(self) -> float:
        return int(os.pread(self.descriptor, 128, 0).split()[1]) / 1e9

    def close(self) -> None:
        os.close(self.descriptor)


@dataclass(frozen=True)
class Counting:
    """Where a fit's clock started: the wall clock, and the thread's waits for a core then (``waits``: None where
    the machine does not say, and the clock is the wall clock)."""

    wall: float
    waited: float
    waits: ThreadWaits | None

    def elapsed(self) -> float:
        """Budget seconds since the start: the wall seconds not spent waiting, at least 1 / ``STRETCH`` of them."""
        wall = time.monotonic() - self.wall
        waited = 0.0 if self.waits is None else self.waits() - self.waited
        return max(wall - waited, wall / STRETCH)

    def run_share(self) -> float | None:
        """The share of the wall seconds since the start that the thread was not kept waiting for a core (1 on a
        free machine); None where the machine does not say."""
        wall = time.monotonic() - self.wall
        if self.waits is None:
            return None
        return 1.0 - (self.waits() - self.waited) / wall if wall > 0 else 1.0


_counting: contextvars.ContextVar[Counting | None] = contextvars.ContextVar("budget_counting", default=None)


@contextlib.contextmanager
def counting() -> Iterator[Counting]:
    """Within it, ``now()`` on this thread counts the seconds it was not kept waiting for a core (module docstring)."""
    waits = ThreadWaits.open()
    start = Counting(time.monotonic(), 0.0 if waits is None else waits(), waits)
    token = _counting.set(start)
    try:
        yield start
    finally:
        _counting.reset(token)
        if waits is not None:
            waits.close()


def now() -> float:
    """The budgets' clock (module docstring): the wall clock, or within ``counting`` the fit's own seconds."""
    start = _counting.get()
    return time.monotonic() if start is None else start.wall + start.elapsed()


@dataclass(frozen=True)
class Budget:
    """``seconds`` counted from ``start`` (``now()`` when made)."""

    seconds: float
    start: float = field(default_factory=now)

    @property
    def end(self) -> float:
        return self.start + self.seconds

    def left(self) -> float:
        """Seconds until the end; negative once past it."""
        return self.end - now()

    def first(self, share: float) -> "Budget":
        """The first ``share`` of this budget: same start, that share of its seconds."""
        return Budget(self.seconds * share, self.start)


def split_budget(budget: float | None, n_search_fits: int) -> tuple[float | None, float | None]:
    """GETRegressorCV's shares of ``budget``: (seconds per search fit, the refit's base seconds). The search's fits
    share ``SEARCH_SHARE`` equally, counting every fit it may make (the early stop usually makes fewer), at least
    ``MIN_SEARCH_FIT_SECONDS`` each; the refit gets the rest plus the shares of the fits the search skipped
    (``refit_seconds``)."""
    if budget is None:
        return None, None
    return max(MIN_SEARCH_FIT_SECONDS, SEARCH_SHARE * budget / max(1, n_search_fits)), budget * (1.0 - SEARCH_SHARE)


def refit_seconds(per_fit: float, base: float, n_search_fits: int, n_made: int) -> float:
    """The refit's budget: its base and the shares of the search fits that the early stop left unmade."""
    return base + per_fit * max(0, n_search_fits - n_made)


def search_seconds(budget: float, n_search_fits: int) -> float:
    """The most seconds a budgeted GETRegressorCV of ``n_search_fits`` search fits (the refit not included) takes:
    ``budget``, unless its fits' least shares (``split_budget``) and the refit's base add up to more."""
    return max(budget, n_search_fits * MIN_SEARCH_FIT_SECONDS + budget * (1.0 - SEARCH_SHARE))
