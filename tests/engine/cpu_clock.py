"""A budgeted fit timed by this process's CPU seconds instead of the wall clock (or by a ticking fake clock), for tests.

A time budget is wall-clock seconds by design, so on a busy machine (other processes sharing the cores) a budgeted
fit gets less work done and its plan goes wrong: a test of what a budget buys would then test the machine's load.
Under this clock the engine's budget counts only the seconds its own process ran, the same work on a busy machine
as on a quiet one (the budget's arithmetic is what such tests check; the wall-clock behaviour is the benchmarks').
The engine's own clock already leaves out the seconds a fit waits for a core (``budget.counting``), but only down to
a floor (``budget.STRETCH``) that a loaded test machine passes; this one has none.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from get_core import budget
from get_core.engine import node_refit, progress, train
from tests.clock import Ticking

#: every module whose clock a fit reads (``get_core.budget.now`` serves the budgets: the race's, the probes', the
#: node refit's, the polish's)
ENGINE_MODULES = (budget, node_refit, progress, train)


def use_cpu_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every clock the engine reads (``time.monotonic``, ``time.perf_counter``) becomes ``time.process_time``, and
    the fit's clock subtracts no waits (process time has none)."""
    cpu = SimpleNamespace(monotonic=time.process_time, perf_counter=time.process_time, process_time=time.process_time)
    for module in ENGINE_MODULES:
        monkeypatch.setattr(module, "time", cpu)
    monkeypatch.setattr(budget.ThreadWaits, "open", classmethod(lambda cls: None))


def use_ticking_clock(monkeypatch: pytest.MonkeyPatch, tick: float) -> None:
    """Every clock the engine reads becomes a ``Ticking`` one (its CPU share stays the process's): its decisions
    depend on ``tick`` and the code alone."""
    clock = Ticking(tick)
    ticking = SimpleNamespace(monotonic=clock.monotonic, perf_counter=clock.perf_counter,
                              process_time=time.process_time)
    for module in ENGINE_MODULES:
        monkeypatch.setattr(module, "time", ticking)
    monkeypatch.setattr(budget.ThreadWaits, "open", classmethod(lambda cls: None))  # the fit's clock: the ticks
