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


def test_time_left_is_the_budgets_rest_for_a_budgeted_run_and_none_during_an_unbudgeted_runs_baselines(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    budgeted = _running(store, 10.0, "baselines", 0.3)
    assert budgeted.eta_seconds(now=budgeted.started_at + 4) == pytest.approx(6.0)
    assert budgeted.eta_seconds(now=budgeted.started_at + 12) is None  # past its budget: no invented figure
    plain = _running(store, None, "baselines", 0.12)
    assert plain.eta_seconds(now=plain.started_at + 60) is None  # was 7 min 20 s, growing, at a standing 12%
    training = dataclasses.replace(plain, phase="optimize")
    assert training.eta_seconds(now=plain.started_at + 10) == pytest.approx(10 * 0.88 / 0.12)
    text = run_panel.progress_text(dataclasses.replace(plain, started_at=time.time() - 60))
    assert "fitting the baselines" in text and "left" not in text
