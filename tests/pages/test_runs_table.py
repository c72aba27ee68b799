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
    assert [tree.rsplit("; ", 1)[1] for tree in table["tree"]] == ["4 × 600", "10 s, raced"]  # newest first


def test_a_class_run_reads_its_test_accuracy_and_no_cell_or_setting_reads_none(tmp_path, monkeypatch):
    """Issue 48: every class run read "None" under test R² and test RMSE, and unset settings read "None" in Compare
    two."""
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    store = RunStore(path)
    config = {"depth": 2, "leaf": "constant", "n_starts": 4, "n_epochs": 600, "n_alphas": 2, "time_budget": None}
    for task in ("classification", "regression"):
        params = {"config": config, "seed": 0, "data": {"target": "y", "features": ["x"], "task": task}}
        run_id = store.create_run(params, b"x,y\n", "toy.csv", n_rows=1, n_features=1)
        store.start_run(run_id)
        if task == "classification":
            store.put_json(run_id, "class_scores", {"accuracy": 0.925})
        scores = {"test_r2": 0.5, "test_rmse": 1.0} if task == "regression" else {}
        store.set_status(run_id, RunStatus.FINISHED, **scores)
    at = AppTest.from_file(str(ROOT / "pages" / "runs.py"), default_timeout=60).run()
    assert not at.exception, [e.message for e in at.exception]
    table = at.dataframe[0].value
    assert dict(zip(table["id"], table["test score"])) == {1: "accuracy 92.5%", 2: "R\u00b2 0.5, RMSE 1"}
    assert not table.astype(str).isin(["None", "nan"]).any().any()
    at.multiselect[0].set_value([1, 2]).run()
    settings = at.dataframe[1].value
    assert "None" not in settings.to_string(), settings
