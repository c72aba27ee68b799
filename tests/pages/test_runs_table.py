"""The Runs page's table says what budget each run had: a time budget's seconds (the race chose the starts and
epochs, so the config's starts x epochs would mislead), else the starts x epochs it was given."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from get_core.runs.store import RunStatus, RunStore

ROOT = Path(__file__).resolve().parents[2]


def test_the_budget_column_shows_a_time_budget_or_the_starts_and_epochs(tmp_path, monkeypatch):
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    store = RunStore(path)
    config = {"depth": 2, "leaf": "constant", "n_starts": 10, "n_epochs": 3000, "n_alphas": 2}
    for extra in ({"time_budget": 10.0}, {"time_budget": None, "n_starts": 4, "n_epochs": 600}):
        params = {"config": {**config, **extra}, "seed": 0, "data": {"target": "y", "features": ["x"]}}
        run_id = store.create_run(params, b"x,y\n", "toy.csv", n_rows=1, n_features=1)
        store.start_run(run_id)
        store.set_status(run_id, RunStatus.FINISHED, test_r2=0.5, test_rmse=1.0)
    at = AppTest.from_file(str(ROOT / "pages" / "runs.py"), default_timeout=60).run()
    assert not at.exception, [e.message for e in at.exception]
    table = at.dataframe[0].value
    assert dict(zip(table["id"], table["budget"])) == {1: "10 s, raced", 2: "4 × 600"}
