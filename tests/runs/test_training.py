"""A run on a table with holes (issue 47): with the missing values policy "keep" the worker hands them to the
estimator, no row is lost, and the stored model, predictions, baselines and views agree."""

from __future__ import annotations

import numpy as np
import pandas as pd

from get_core import export
from get_core.baselines import evaluate_tree
from get_core.data import columns
from get_core.data.encoding import DataSpec
from get_core.model import model_file
from get_core.runs import worker
from get_core.runs.results import fit_missing_baselines, load_results, model_inputs
from get_core.runs.store import RunStatus, RunStore
from get_core.views import explain, labels, node, summary
from tests.runs.test_worker import TINY


def _holed(n: int = 160, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    table = pd.DataFrame({"income": rng.normal(50, 10, n), "age": rng.normal(40, 5, n),
                          "colour": rng.choice(["red", "blue"], n)})
    table["y"] = table["income"] / 10 + (table["colour"] == "red") * 2 + rng.normal(0, 0.1, n)
    table["kind"] = np.where(table["y"] > table["y"].median(), "high", "low")
    table.loc[rng.random(n) < 0.25, "income"] = np.nan
    table.loc[rng.random(n) < 0.05, "colour"] = None
    return table


def _run(store: RunStore, table: pd.DataFrame, target: str, task: str, one_hot: bool = True) -> int:
    """A run of the three feature columns with their holes kept: 'colour' one-hot encoded by the app (``one_hot``,
    the runs before issue 47's item 4) or handed to the estimator as a category."""
    spec = DataSpec(target=target, features=("income", "age", "colour"), missing="keep", task=task, one_hot=one_hot)
    params = {"config": TINY, "data": spec.to_dict(), "test_fraction": 0.25, "seed": 0}
    return store.create_run(params, columns.to_parquet_bytes(table.drop(columns="kind" if target == "y" else "y")),
                            "holes.csv", n_rows=len(table), n_features=3)


def test_a_run_keeps_every_row_with_a_hole_and_its_tree_learns_where_they_go(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    table = _holed()
    run_id = _run(store, table, "y", "regression")
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    results = load_results(store, run_id)
    tree = results.tree
    assert len(results.y_train) + len(results.y_test) == len(table)  # no row dropped
    assert np.isnan(results.X_train).any() and tree.inputs is not None
    assert "income=missing" in tree.feature_names and labels.row_names(tree) == list(results.encoding.feature_names)
    assert model_file.from_dict(model_file.to_dict(tree)).inputs == tree.inputs
    predictions = store.get_json(run_id, "predictions")
    assert np.allclose(predictions["y_pred"], tree.predict(results.X_test))
    assert {"cart", "random_forest", "hist_gradient_boosting"} <= set(store.get_json(run_id, "baselines")["models"])
    stats = node.node_stats(tree, 1, results.X_train, results.y_train, results.X_test, results.y_test)
    assert stats["n_train"] == len(results.y_train)
    assert "income=missing" not in dict(summary.feature_shares(tree, results.X_train))


def test_a_class_run_keeps_its_holes_too(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = _run(store, _holed(seed=1), "kind", "classification")
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    results = load_results(store, run_id)
    scores = store.get_json(run_id, "class_scores")
    assert scores["accuracy"] == np.mean(results.tree.predict(results.X_test) == results.y_test)


def _category_run(store: RunStore, table: pd.DataFrame, target: str, task: str, one_hot: bool = False) -> int:
    return _run(store, table, target, task, one_hot)


def test_a_run_hands_a_category_column_to_the_estimator_as_one_group(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    table = _holed()
    run_id = _category_run(store, table, "y", "regression")
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    results = load_results(store, run_id)
    tree, encoding = results.tree, results.encoding
    assert not encoding.one_hot and tree.inputs.names == ["income", "age", "colour"]
    colour = tree.inputs.columns[2]
    assert colour.kind == "category" and colour.categories == ("blue", "red") and colour.missing
    assert set(results.X_train[:, 2]) <= {"blue", "red", None}  # raw labels, rebuilt from the stored table
    assert np.allclose(store.get_json(run_id, "predictions")["y_pred"], tree.predict(results.X_test))
    baselines = store.get_json(run_id, "baselines")  # one-hot numbers of their own
    assert baselines["feature_names"] == ["income", "age", "colour=blue", "colour=red"]
    assert len(baselines["forest"]["feature_importances"]) == 4
    assert model_inputs(store, store.get_run(run_id)) == 4
    assert "colour" in dict(summary.feature_shares(tree, results.X_train))
    summary.summarize(tree, results.X_test, results.y_test, results.baselines, results.target)
    stats = node.node_stats(tree, 1, results.X_train, results.y_train, results.X_test, results.y_test)
    assert stats["n_train"] == len(results.y_train)
    entry = evaluate_tree(tree, results.X_test, results.y_test, n_repeats=1)  # the Tree page's report, on raw rows
    assert entry["test_predictions"] == store.get_json(run_id, "predictions")["y_pred"]
    report = export.html_report(tree, baselines={**results.baselines, "get": entry}, encoding=results.encoding)
    assert '"one_hot": false' in report  # the embedded model file scores the run's raw columns


def test_a_category_runs_model_file_scores_raw_rows_with_an_unseen_level_and_a_blank(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = _category_run(store, _holed(seed=2), "y", "regression")
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    results = load_results(store, run_id)
    loaded = model_file.load_model_json(model_file.model_json(results.tree, encoding=results.encoding))
    encoding = model_file.model_encoding(loaded)
    assert encoding == results.encoding
    upload = pd.DataFrame({"colour": ["red", "green", None], "age": [40.0, 41.0, None], "income": [50, None, 55]})
    rows = explain.rows_to_X(loaded, upload, encoding)
    assert not rows.problems and rows.X[1, 2] == "green" and rows.X[2, 2] is None
    assert np.array_equal(loaded.predict(rows.X), results.tree.predict(rows.X))
    assert encoding.unseen_levels(upload) == {"colour": (1, ("green",))}
    green, none = results.tree.inputs.encode(rows.X[1:])[:, -3:]  # colour=blue, colour=red, colour=missing
    assert list(green) == [0, 0, 0] and list(none) == [0, 0, 1]  # unseen adds nothing; a blank is "missing"


def test_a_class_run_with_categories_and_its_missing_baselines(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = _category_run(store, _holed(seed=3), "kind", "classification")
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    results = load_results(store, run_id)
    assert results.tree.inputs.columns[2].kind == "category"
    scores = store.get_json(run_id, "class_scores")
    assert scores["accuracy"] == np.mean(results.tree.predict(results.X_test) == results.y_test)
    before = store.get_json(run_id, "baselines")
    cancelled = _category_run(store, _holed(seed=3), "kind", "classification")  # stopped before its baselines
    store.start_run(cancelled)
    for name in set(store.list_artifacts(run_id)) - {"baselines", "baselines_error"}:
        store.put_json(cancelled, name, store.get_json(run_id, name))
    store.set_status(cancelled, RunStatus.CANCELLED, error="Cancelled by request.")
    fit_missing_baselines(store, cancelled)  # the Compare page's refit, from the rebuilt raw rows
    after = store.get_json(cancelled, "baselines")
    assert after["feature_names"] == before["feature_names"] == ["income", "age", "colour=blue", "colour=red"]
    assert after["models"]["random_forest"]["accuracy"] == before["models"]["random_forest"]["accuracy"]


def test_a_one_hot_run_still_encodes_its_categories_as_before(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = _category_run(store, _holed(seed=4), "y", "regression", one_hot=True)
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    results = load_results(store, run_id)
    assert "one_hot" not in store.get_json(run_id, "encoding") and results.encoding.one_hot
    assert results.tree.inputs.names == ["income", "age", "colour=blue", "colour=red"]
    assert results.X_train.dtype == np.float64
