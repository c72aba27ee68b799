"""Time budgets: one clock, a budget's parts, and GETRegressorCV's shares of its budget."""

from __future__ import annotations

import pytest

import get_core.budget as budget_module
from get_core.budget import (MIN_SEARCH_FIT_SECONDS, STRETCH, Budget, ThreadWaits, counting, now, search_seconds,
                              split_budget)
from tests.clock import Clock


@pytest.fixture
def clock(monkeypatch) -> Clock:
    return Clock().install(monkeypatch)


def test_a_budget_counts_its_seconds_from_its_start_on_one_clock(clock):
    fit = Budget(10.0)
    assert fit.start == Clock.START and fit.end == Clock.START + 10.0
    clock.now += 4.0
    assert fit.left() == pytest.approx(6.0)
    first = fit.first(0.5)  # the optimization's part when a polish follows: same start, half the seconds
    assert (first.start, first.end) == (Clock.START, Clock.START + 5.0) and first.left() == pytest.approx(1.0)
    clock.now += 10.0
    assert fit.left() == pytest.approx(-4.0)  # past its end


def test_within_a_fit_a_budget_counts_the_seconds_its_thread_was_not_kept_waiting(clock):
    with counting() as start:
        fit = Budget(10.0)
        clock.now += 4.0
        assert fit.left() == pytest.approx(6.0) and start.run_share() == pytest.approx(1.0)  # a free machine
        clock.now, clock.waited = clock.now + 8.0, clock.waited + 4.0  # 8 wall seconds, 4 of them waiting
        assert fit.left() == pytest.approx(2.0) and start.run_share() == pytest.approx(8.0 / 12.0)
        clock.now, clock.waited = clock.now + 4.0, clock.waited + 2.0
        assert fit.left() == pytest.approx(0.0)  # the budget's 10 seconds of work took 16 wall seconds
    clock.now += 1.0
    assert now() == clock.now  # outside a fit: the wall clock


def test_however_busy_the_machine_a_budget_ends_by_its_stretch_of_wall_seconds(clock):
    with counting() as start:
        fit = Budget(10.0)
        clock.now, clock.waited = clock.now + 9.0 * STRETCH, clock.waited + 9.0 * STRETCH  # waited throughout
        assert fit.left() == pytest.approx(1.0)  # the clock's floor: 1 / STRETCH of the wall clock
        clock.now, clock.waited = clock.now + 1.0 * STRETCH, clock.waited + 0.9 * STRETCH
        assert fit.left() == pytest.approx(0.0) and start.run_share() == pytest.approx(0.01)
        assert STRETCH < 2.0  # what follows a deadline still ends within twice the budget


def test_the_fits_clock_is_the_wall_clock_where_the_machine_does_not_say(monkeypatch, clock):
    monkeypatch.setattr(ThreadWaits, "open", classmethod(lambda cls: None))
    with counting() as start:
        fit = Budget(10.0)
        clock.now, clock.waited = clock.now + 4.0, 4.0
        assert fit.left() == pytest.approx(6.0) and start.run_share() is None


def test_this_threads_waits_for_a_core_read_as_growing_seconds():
    waits = ThreadWaits.open()
    if waits is None:
        pytest.skip("this machine does not report a thread's run-queue delay")
    try:
        first = waits()
        sum(range(200_000))
        assert 0.0 <= first <= waits()
    finally:
        waits.close()


def test_a_search_fits_share_of_a_budget_never_falls_under_its_floor():
    per_fit, base = split_budget(10.0, 40)
    assert per_fit == MIN_SEARCH_FIT_SECONDS and base == pytest.approx(10.0 / 3)
    assert split_budget(60.0, 4)[0] == pytest.approx(10.0)  # two thirds of 60 s over 4 fits
    assert search_seconds(10.0, 40) == pytest.approx(40 + 10.0 / 3) and search_seconds(60.0, 4) == 60.0
