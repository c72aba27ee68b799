"""A fake ``time`` module for the time-budget tests: its ``monotonic`` reads ``now``, which the test moves; and the
seconds a fit's thread waited for a core (``get_core.budget.ThreadWaits``), ``waited``, which the test moves too."""

from __future__ import annotations

import pytest


class Clock:
    """Patched in as a module's ``time`` (``get_core.budget`` reads only ``time.monotonic``; ``install`` also makes
    its ``ThreadWaits`` read ``waited``)."""

    START = 100.0

    def __init__(self) -> None:
        self.now = self.START
        self.waited = 0.0

    def monotonic(self) -> float:
        return self.now

    def install(self, monkeypatch: pytest.MonkeyPatch) -> "Clock":
        """Make this the budgets' clock: the wall clock ``now`` and the thread's waits ``waited``."""
        from get_core import budget

        monkeypatch.setattr(budget, "time", self)
        monkeypatch.setattr(budget.ThreadWaits, "open", classmethod(lambda cls: Waits(self)))
        return self


class Waits:
    """A ``ThreadWaits`` that reads the clock's ``waited``."""

    def __init__(self, clock: Clock):
        self.clock, self.closed = clock, False

    def __call__(self) -> float:
        return self.clock.waited

    def close(self) -> None:
        self.closed = True


class Ticking:
    """A clock that moves ``tick`` seconds each time it is read (``monotonic`` and ``perf_counter``): a fit's
    clock-dependent decisions then follow from its code path alone, the same on any machine under any load."""

    def __init__(self, tick: float) -> None:
        self.tick, self.now = tick, Clock.START

    def monotonic(self) -> float:
        self.now += self.tick
        return self.now

    perf_counter = monotonic
