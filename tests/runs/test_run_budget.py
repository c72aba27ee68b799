"""A budgeted run's seconds are its GET fit's (issue 48: the baselines are fitted after it at their usual settings,
never cut by its budget), and its time left is honest while the baselines are fitted (the forest reports no progress,
so an extrapolation from the standing bar grew while the run was nearly done: issue 35)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pandas as pd
import pytest

from get_core.data.columns import to_parquet_bytes
from get_core.data.encoding import DataSpec
from get_core.runs.records import RunStatus
from get_core.runs.store import RunStore
from get_core.runs.training import train_run
from pages import run_panel
from tests.runs.test_search_run import RecordingChannel

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "examples" / "airfoil_self_noise.csv"


def params(budget: float | None) -> dict:
    frame = pd.read_csv(EXAMPLE, nrows=300)
    features = [c for c in frame.columns if c != "target"]
    config = {"depth": 2, "leaf": "constant", "n_starts": 2, "n_epochs": 40, "n_alphas": 2, "time_budget": budget,
              "polish": "auto"}
    return {"data": DataSpec(target="target", features=tuple(features)).to_dict(), "seed": 0, "test_fraction": 0.25,
            "config": config}, to_parquet_bytes(frame)


@pytest.mark.slow
def test_a_budgeted_runs_gets_fit_takes_the_whole_budget_the_counterpart_its_share_and_the_forest_every_tree():
    run, data = params(3.0)
    channel = RecordingChannel()
    ending = train_run(data, run, channel)
    assert ending.status is RunStatus.FINISHED
    assert channel.artifacts["model"]["meta"]["config"]["time_budget"] == pytest.approx(3.0)
    models = channel.artifacts["baselines"]["models"]
    assert "get_sparse" in models  # 5 features: the 3-feature counterpart
    assert models["random_forest"]["n_trees"] == 100 and "hist_gradient_boosting" in models  # never cut by GET's
    assert models["cart"]["name"] == f"CART (depth {models['cart']['depth']}, tuned)"
    assert channel.progress == sorted(channel.progress) and channel.progress[-1] == pytest.approx(1.0)


def _running(store: RunStore, budget: float | None, phase: str, progress: float):
    run_params, data = params(budget)
    run_id = store.create_run(run_params, data, "airfoil.csv", n_rows=300, n_features=5)
    store.start_run(run_id)
    return dataclasses.replace(store.get_run(run_id), phase=phase, progress=progress)


def test_without_an_estimate_time_left_is_a_budgets_rest_while_training_and_none_during_the_baselines(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    budgeted = _running(store, 10.0, "optimize", 0.3)
    assert budgeted.eta_seconds(now=budgeted.started_at + 4) == pytest.approx(6.0)  # training: the budget's rest
    assert budgeted.eta_seconds(now=budgeted.started_at + 12) is None  # past its budget: no invented figure
    fitting = dataclasses.replace(budgeted, phase="baselines")  # without the run's estimate, nothing honest to say
    assert fitting.eta_seconds(now=budgeted.started_at + 4) is None
    plain = _running(store, None, "baselines", 0.12)
    assert plain.eta_seconds(now=plain.started_at + 60) is None  # was 7 min 20 s, growing, at a standing 12%
    training = dataclasses.replace(plain, phase="optimize")
    assert training.eta_seconds(now=plain.started_at + 10) == pytest.approx(10 * 0.88 / 0.12)
    text = run_panel.progress_text(dataclasses.replace(plain, started_at=time.time() - 60))
    assert "fitting the baselines" in text and "left" not in text


def test_time_left_counts_down_from_the_whole_runs_estimate_through_every_phase_search_included(tmp_path):
    """Issue 48: the Train page stores the run's estimate (search, refit, polish, counterpart, baselines); the time
    left is that estimate's rest in every phase, so it only ever shrinks; past it, the old rules."""
    store = RunStore(tmp_path / "runs.sqlite")
    run_params, data = params(10.0)
    run_params = {**run_params, "search": {"depths": [1, 2, 3], "split_features": None}, "estimated_seconds": 40.0}
    run_id = store.create_run(run_params, data, "airfoil.csv", n_rows=300, n_features=5)
    store.start_run(run_id)
    run = store.get_run(run_id)
    lefts = [dataclasses.replace(run, phase=phase, progress=progress).eta_seconds(now=run.started_at + t)
             for t, phase, progress in ((2, "search: depth 1", 0.05), (15, "refit", 0.5), (30, "baselines", 0.8),
                                        (39, "baselines", 0.9))]
    assert lefts == pytest.approx([38.0, 25.0, 10.0, 1.0])
    late = dataclasses.replace(run, phase="baselines", progress=0.9)
    assert late.eta_seconds(now=run.started_at + 45) is None  # past the estimate while the forest fits: no guess
    assert dataclasses.replace(run, progress=0.3371).percent == 34  # one figure on every page

