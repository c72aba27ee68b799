"""python -m bench.studies.large_budget: one budgeted fit of a planted table, one JSON line of where its time went."""

from __future__ import annotations

import json

import numpy as np

from bench.studies import large_budget
from tests.engine.cpu_clock import use_ticking_clock


def test_a_small_table_prints_the_fits_seconds_plan_and_score(monkeypatch, capsys):
    use_ticking_clock(monkeypatch, 0.01)  # the budget's decisions are the code's, not the machine's
    large_budget.main(["--rows", "3000", "--features", "5", "--budget", "1.5", "--depth", "2", "--seed", "1"])
    record = json.loads(capsys.readouterr().out)
    assert (record["rows"], record["features"], record["budget"], record["depth"]) == (3000, 5, 1.5, 2)
    assert record["fit_seconds"] <= 2 * 1.5  # on the budget's clock: within twice the budget
    assert record["decisions"][0][0] == "race" and 0 < record["train_r2"] <= 1
    assert record["wall_s"] > 0 and record["cpu_s"] > 0 and "starved" in record


def test_a_class_table_times_each_step_of_the_fit_and_leaves_the_trainer_as_it_was(monkeypatch, capsys):
    from get_core import GETClassifier
    from get_core.engine import optimize, train

    before = [vars(owner)[attribute] for owner, attribute, _ in large_budget.PHASES]
    use_ticking_clock(monkeypatch, 0.01)
    large_budget.main(["--rows", "3000", "--features", "5", "--budget", "1.5", "--depth", "2", "--classes", "3"])
    record = json.loads(capsys.readouterr().out)
    assert record["classes"] == 3 and 0 < record["train_r2"] <= 1
    assert {name for name, _, _ in record["phases"]} <= {name for _, _, name in large_budget.PHASES}  # the long ones
    rng = np.random.default_rng(0)
    X = rng.random((600, 4))
    with large_budget.phases() as timed:
        GETClassifier(depth=2, time_budget=1.0, random_state=0).fit(X, (X[:, 0] > X[:, 1]).astype(int))
    steps = [name for name, wall, clock in timed]
    assert {"tensors", "probes", "starts (CART start)", "race", "leaf refit"} <= set(steps)
    assert steps.index("probes") < steps.index("starts (CART start)") < steps.index("race")
    assert all(wall >= 0 and clock >= 0 for _, wall, clock in timed)
    assert [vars(owner)[attribute] for owner, attribute, _ in large_budget.PHASES] == before
    assert isinstance(vars(train.MinMax)["fit"], classmethod) and optimize._probed is before[6]
