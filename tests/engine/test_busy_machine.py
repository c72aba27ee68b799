"""A time budget on a busy machine (issue 34), on a fake clock: the fit's work costs fixed fake seconds, and the
machine keeps its thread waiting for a core a set share of the wall time. A budget counts the seconds the thread ran
(``budget.counting``), so the plan and the tree are those of a free machine; however busy the machine, the fit ends
within twice its budget in wall seconds, every phase (the CART start, the probes, the race) on the fit's own count."""

from __future__ import annotations

import numpy as np
import pytest

from get_core.budget import STRETCH
from get_core.config import GETConfig
from get_core.engine import optimize
from get_core.engine.race import HARD_LIMIT
from get_core.engine import train as train_module
from get_core.budget import CART_SHARE
from get_core.engine.train import CART_PROBE_ROWS, train
from tests.clock import Clock
from tests.planted import planted_depth2

SOFT_PASS, EVALUATION, CART_PER_ROW = 0.0047, 0.0113, 4e-5  # fake seconds of work, off round figures


def busy_machine(monkeypatch, run_share: float) -> tuple[Clock, list[int]]:
    """The fake clock, on which the thread runs ``run_share`` of the wall time, and the rows each CART start saw."""
    clock, cart_rows = Clock().install(monkeypatch), []

    def work(seconds: float) -> None:
        clock.now += seconds / run_share
        clock.waited += seconds / run_share - seconds

    def costs(function, seconds):
        def timed(*args, **kwargs):
            work(seconds(*args))
            return function(*args, **kwargs)
        return timed

    def cart_seconds(X, *rest):
        cart_rows.append(len(X))
        return CART_PER_ROW * len(X)

    monkeypatch.setattr(optimize, "_soft_pass", costs(optimize._soft_pass, lambda *a: SOFT_PASS))
    monkeypatch.setattr(optimize, "_hard_evaluate", costs(optimize._hard_evaluate, lambda *a: EVALUATION))
    monkeypatch.setattr(optimize, "cart_splits", costs(optimize.cart_splits, cart_seconds))  # the CART start
    monkeypatch.setattr(train_module, "cart_splits", costs(train_module.cart_splits, cart_seconds))  # its probe
    return clock, cart_rows


def test_a_busy_machine_makes_the_same_budgeted_tree_as_a_free_one_in_more_wall_seconds(monkeypatch):
    X, y, _ = planted_depth2(1500, seed=8)
    config = GETConfig(depth=3, time_budget=3.0, random_state=0)
    fits = {}
    for share in (1.0, 0.75):
        clock, _ = busy_machine(monkeypatch, share)
        fits[share] = (train(X, y, config), clock.now - Clock.START)
        monkeypatch.undo()
    (free, free_wall), (busy, busy_wall) = fits[1.0], fits[0.75]
    assert free.meta["config"]["n_starts"] == busy.meta["config"]["n_starts"]  # the same plan
    assert free.meta["config"]["n_epochs"] == busy.meta["config"]["n_epochs"]
    assert np.array_equal(free.weights, busy.weights) and np.array_equal(free.thresholds, busy.thresholds)
    assert busy_wall == pytest.approx(free_wall / 0.75) and busy_wall <= HARD_LIMIT * 3.0
    assert free.meta["polish_nodes_visited"] > 0 and busy.meta["polish_nodes_visited"] > 0
    assert free.meta["starved"] is False and busy.meta["starved"] is False  # 75% of the wall time on a core
    assert busy.meta["cpu_share"] == pytest.approx(0.75)


def test_a_starved_fit_with_a_slow_cart_start_ends_within_twice_its_budget(monkeypatch):
    """A quarter of the wall time on a core, on a table whose CART start on every row would cost more than the whole
    budget: the CART start sees the rows its share of the budget buys, the clock runs at its floor, the race stops
    short of twice the budget."""
    rng = np.random.default_rng(0)
    X = rng.random((100_000, 3))
    y = X[:, 0] + (X[:, 1] > 0.5) + rng.normal(scale=0.1, size=len(X))
    budget = 4.0
    assert CART_PER_ROW * len(X) >= budget
    clock, cart_rows = busy_machine(monkeypatch, 0.25)
    tree = train(X, y, GETConfig(depth=2, time_budget=budget, random_state=0))
    assert len(cart_rows) == 2 and cart_rows[0] == CART_PROBE_ROWS  # timed on a few rows, then fitted on its share
    assert CART_PROBE_ROWS < cart_rows[1] and CART_PER_ROW * cart_rows[1] <= CART_SHARE * budget
    assert clock.now - Clock.START <= HARD_LIMIT * budget
    assert tree.meta["optimize_seconds"] >= CART_PER_ROW * sum(cart_rows)  # the CART start on the fit's count
    assert tree.meta["starved"] is True and tree.meta["cpu_share"] == pytest.approx(0.25)
    assert 1.0 / STRETCH > 0.25 and np.isfinite(tree.predict(X)).all()
