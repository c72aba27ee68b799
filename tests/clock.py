"""A fake ``time`` module for the time-budget tests: its ``monotonic`` reads ``now``, which the test moves."""

from __future__ import annotations


class Clock:
    """Patched in as a module's ``time`` (``get_core.engine.race`` and ``get_core.budget`` read only
    ``time.monotonic``)."""

    START = 100.0

    def __init__(self) -> None:
        self.now = self.START

    def monotonic(self) -> float:
        return self.now


class Ticking:
    """A clock that moves ``tick`` seconds each time it is read (``monotonic`` and ``perf_counter``): a fit's
    clock-dependent decisions then follow from its code path alone, the same on any machine under any load."""

    def __init__(self, tick: float) -> None:
        self.tick, self.now = tick, Clock.START

    def monotonic(self) -> float:
        self.now += self.tick
        return self.now

    perf_counter = monotonic
