"""Time budgets (``time_budget=seconds``): one clock, and the rules that share a budget's seconds out.

One clock, ``time.monotonic``: a deadline must not move when the wall clock is set, the race's pacing
(``engine.race``), the progress reports and the worker's heartbeats already read it, and the race tests move it
through ``race.time``. (``time.perf_counter`` reads the same clock on Linux; what matters is that no subtraction
mixes two.) A ``Budget`` is seconds counted from a start on that clock: the fit's (``engine.train``), the
optimization's first part of it, a polish level's share (``engine.polish``). GETRegressorCV's search shares its
budget over its fits in advance (``split_budget``), so its shares are seconds, not clocks. Torch-free: the run-time
estimate (``runs.estimate``) reads ``search_seconds`` without the trainer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

#: The share of a GETRegressorCV budget that its search fits split equally; the refit, the returned tree, gets the
#: rest (and the shares of the fits the early stop skipped).
SEARCH_SHARE = 2.0 / 3.0
#: The least seconds one search fit gets. Below it the probes, the CART start and the smallest race alone overrun,
#: so a long search takes longer than its budget.
MIN_SEARCH_FIT_SECONDS = 1.0


def now() -> float:
    """The budgets' clock."""
    return time.monotonic()


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
