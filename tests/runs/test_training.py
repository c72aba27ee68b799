"""A run on a table with holes (issue 47): with the missing values policy "keep" the worker hands them to the
estimator, no row is lost, and the stored model, predictions, baselines and views agree."""

from __future__ import annotations

import numpy as np
import pandas as pd

from get_core.data import columns
from get_core.data.encoding import DataSpec
from get_core.model import model_file
from get_core.runs import worker
from get_core.runs.results import load_results
from get_core.runs.store import RunStatus, RunStore
from get_core.views import labels, node, summary
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


def _run(store: RunStore, table: pd.DataFrame, target: str, task: str) -> int:
    spec = DataSpec(target=target, features=("income", "age", "colour"), missing="keep", task=task)
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
