"""The live run panel's loss curves name one unit from the first draw to the last (issue 48: "MSE (scaled y)" on
the waiting chart, then "RMSE (target units)" once the worker had written the target's scale)."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from get_core.runs.store import RunStore

ROOT = Path(__file__).resolve().parents[2]


def test_a_started_regression_runs_waiting_chart_already_reads_rmse_in_target_units(tmp_path, monkeypatch):
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    params = {"config": {"depth": 2, "leaf": "constant", "n_starts": 1, "n_epochs": 5, "n_alphas": 1}, "seed": 0,
              "data": {"target": "y", "features": ["x"]}}
    store = RunStore(path)
    store.start_run(store.create_run(params, b"x,y\n", "toy.csv", n_rows=1, n_features=1))  # no worker: no scale yet
    at = AppTest.from_file(str(ROOT / "pages" / "runs.py"), default_timeout=60)
    at.query_params["run"] = "1"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    curves = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "curves-1" in c.proto.id)
    assert curves["layout"]["yaxis"]["title"]["text"] == "RMSE (target units)"
