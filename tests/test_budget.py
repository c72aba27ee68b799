"""Time budgets: one clock, a budget's parts, and GETRegressorCV's shares of its budget."""

from __future__ import annotations

import pytest

import get_core.budget as budget_module
from get_core.budget import MIN_SEARCH_FIT_SECONDS, Budget, search_seconds, split_budget
from tests.clock import Clock


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(budget_module, "time", fake)
    return fake


def test_a_budget_counts_its_seconds_from_its_start_on_one_clock(clock):
    fit = Budget(10.0)
    assert fit.start == Clock.START and fit.end == Clock.START + 10.0
    clock.now += 4.0
    assert fit.left() == pytest.approx(6.0)
    first = fit.first(0.5)  # the optimization's part when a polish follows: same start, half the seconds
    assert (first.start, first.end) == (Clock.START, Clock.START + 5.0) and first.left() == pytest.approx(1.0)
    clock.now += 10.0
    assert fit.left() == pytest.approx(-4.0)  # past its end


def test_a_search_fits_share_of_a_budget_never_falls_under_its_floor():
    per_fit, base = split_budget(10.0, 40)
    assert per_fit == MIN_SEARCH_FIT_SECONDS and base == pytest.approx(10.0 / 3)
    assert split_budget(60.0, 4)[0] == pytest.approx(10.0)  # two thirds of 60 s over 4 fits
    assert search_seconds(10.0, 40) == pytest.approx(40 + 10.0 / 3) and search_seconds(60.0, 4) == 60.0
