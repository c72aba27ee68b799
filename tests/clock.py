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
