"""The Runs page's rename form: a refused name is explained in place and the rest of the page stays."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from get_core.runs.store import RunStatus, RunStore

ROOT = Path(__file__).resolve().parents[2]
DELETE_CONFIRM = "Yes, delete run #1 with its metrics and model"


def test_an_empty_name_is_refused_with_a_message_and_the_delete_controls_stay(tmp_path, monkeypatch):
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    store = RunStore(path)
    params = {"config": {"depth": 2, "leaf": "constant", "n_starts": 1, "n_epochs": 5, "n_alphas": 1}, "seed": 0,
              "data": {"target": "y", "features": ["x"]}}
    run_id = store.create_run(params, b"x,y\n", "toy.csv", n_rows=1, n_features=1, name="first try")
    store.start_run(run_id)
    store.set_status(run_id, RunStatus.FINISHED, test_r2=0.5, test_rmse=1.0)
    at = AppTest.from_file(str(ROOT / "pages" / "runs.py"), default_timeout=60).run()
    next(t for t in at.text_input if t.label == "New name").set_value("   ")
    next(b for b in at.button if b.label == "Rename").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert [e.value for e in at.error] == ["A run name cannot be empty: type a name."]
    assert store.get_run(run_id).name == "first try"
    assert any(c.label == DELETE_CONFIRM for c in at.checkbox)
    assert any(b.label == "Delete run" for b in at.button)


def test_a_renamed_run_stays_chosen_in_its_picker_and_the_picker_shows_the_new_name(tmp_path, monkeypatch):
    """The pickers' keys change with their labels (a Streamlit selectbox keeps old labels on screen otherwise), so
    the Rename / delete picker keeps its own choice: after renaming run 2 while run 1 is open, run 2 stays chosen."""
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    store = RunStore(path)
    params = {"config": {"depth": 2, "leaf": "constant", "n_starts": 1, "n_epochs": 5, "n_alphas": 1}, "seed": 0,
              "data": {"target": "y", "features": ["x"]}}
    for name in ("first", "second"):
        run_id = store.create_run(params, b"x,y\n", "toy.csv", n_rows=1, n_features=1, name=name)
        store.start_run(run_id)
        store.set_status(run_id, RunStatus.FINISHED, test_r2=0.5, test_rmse=1.0)
    at = AppTest.from_file(str(ROOT / "pages" / "runs.py"), default_timeout=60).run()

    def manage_picker():
        return next(s for s in at.selectbox if s.label == "Run to rename or delete")

    opened = next(s for s in at.selectbox if s.label == "Run").value
    other = 2 if opened == 1 else 1
    manage_picker().set_value(other).run()
    next(t for t in at.text_input if t.label == "New name").set_value("renamed")
    next(b for b in at.button if b.label == "Rename").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert store.get_run(other).name == "renamed"
    assert manage_picker().value == other
    assert f"#{other} renamed (finished)" in manage_picker().options
    assert next(s for s in at.selectbox if s.label == "Run").value == opened


def test_a_delete_says_what_it_deleted(tmp_path, monkeypatch):
    """Issue 35, minors: a delete left no message."""
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    store = RunStore(path)
    params = {"config": {"depth": 2, "leaf": "constant", "n_starts": 1, "n_epochs": 5, "n_alphas": 1}, "seed": 0,
              "data": {"target": "y", "features": ["x"]}}
    run_id = store.create_run(params, b"x,y\n", "toy.csv", n_rows=1, n_features=1, name="old try")
    store.start_run(run_id)
    store.set_status(run_id, RunStatus.FINISHED, test_r2=0.5, test_rmse=1.0)
    at = AppTest.from_file(str(ROOT / "pages" / "runs.py"), default_timeout=60).run()
    next(c for c in at.checkbox if c.label == DELETE_CONFIRM).check().run()
    next(b for b in at.button if b.label == "Delete run").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert store.list_runs() == []
    assert [t.value for t in at.toast] == ["Deleted run #1 (old try) with its metrics and model."]


def test_compare_two_lists_the_settings_that_differ_first_and_what_a_budgeted_run_raced(tmp_path, monkeypatch):
    """Issue 35, minors: 26 settings with the 4 that differ at the bottom, "10 starts x 3,000 epochs" for a budgeted
    run that raced 4 x 357, and Python's None in the table."""
    from get_core.model import model_file
    from tests.trees import make_tree

    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    store = RunStore(path)
    base = {"depth": 2, "leaf": "constant", "n_starts": 10, "n_epochs": 3000, "n_alphas": 2}
    for config in (base, {**base, "time_budget": 10.0, "leaf": "linear"}):
        params = {"config": config, "seed": 0, "data": {"target": "y", "features": ["x"]}}
        run_id = store.create_run(params, b"x,y\n", "toy.csv", n_rows=1, n_features=1)
        store.start_run(run_id)
        tree, _, _ = make_tree(depth=2, p=1, names=["x"])
        tree.meta["config"] = {**config, "n_starts": 4, "n_epochs": 357}  # what the race ran, as train records it
        store.put_json(run_id, "model", model_file.to_dict(tree))
        store.set_status(run_id, RunStatus.FINISHED, test_r2=0.5, test_rmse=1.0)
    at = AppTest.from_file(str(ROOT / "pages" / "runs.py"), default_timeout=60).run()
    assert not at.exception, [e.message for e in at.exception]
    table = next(d.value for d in at.dataframe if "same" in d.value.columns).set_index("setting")
    same = table["same"].tolist()
    assert same == sorted(same) and not same[0]  # every differing row before every equal one
    starts = next(row for row in table.index if "start" in row.lower())
    assert table.loc[starts, "#2"] == "4 raced" and table.loc[starts, "#1"] == "10"
    assert not table.isin(["None"]).any().any()
