"""A class target's run through the real worker and store: a stratified split, a classification tree, its test
scores in words a person reads, and classification baselines with confusion matrices."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from get_core.data import columns
from get_core.data.encoding import DataSpec
from get_core.runs import worker
from get_core.runs.results import fit_missing_baselines, load_results
from get_core.runs.store import RunStatus, RunStore
from get_core.model import model_file
from get_core.runs.search import SEARCH, TREE_PREFIX
from get_core.runs.training import stratified_split
from tests.runs.test_worker import TINY


def three_classes(n: int = 150, seed: int = 0) -> pd.DataFrame:
    """Three classes cut by two oblique lines, with text labels, a boolean and a categorical feature."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    label = np.where(a + b < 0.8, "low", np.where(a - b > 0.1, "mid", "high"))
    return pd.DataFrame({"a": a, "b": b, "flag": rng.random(n) < 0.5,
                         "colour": rng.choice(["red", "blue"], n), "kind": label})


def class_run(store: RunStore, table: pd.DataFrame, extra: dict | None = None, config: dict | None = None) -> int:
    spec = DataSpec(target="kind", features=("a", "b", "flag", "colour"), task="classification")
    params = {"config": {**TINY, **(config or {})}, "data": spec.to_dict(), "test_fraction": 0.25, "seed": 1,
              **(extra or {})}
    return store.create_run(params, columns.to_parquet_bytes(table), "kinds.csv", n_rows=len(table), n_features=4)


def test_a_class_run_trains_a_classification_tree_and_stores_its_scores_and_baselines(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = class_run(store, three_classes(), extra={"class_weight": "balanced"})
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    results = load_results(store, run_id)
    tree = results.tree
    assert tree.is_classifier and tree.classes == ["high", "low", "mid"] and tree.meta["target"] == "kind"
    assert results.y_test.dtype.kind == "U" and set(results.y_test) == set(tree.classes)  # stratified: all tested
    scores = store.get_json(run_id, "class_scores")
    assert scores["accuracy"] == pytest.approx(np.mean(tree.predict(results.X_test) == results.y_test))
    assert scores["accuracy"] > 0.5 and np.sum(scores["confusion"]) == len(results.y_test)
    baselines = store.get_json(run_id, "baselines")
    assert baselines["task"] == "classification" and baselines["classes"] == tree.classes
    models = baselines["models"]
    assert {"cart", "random_forest", "hist_gradient_boosting", "get_sparse"} <= set(models)  # 5 inputs > 3: sparse
    for entry in models.values():
        assert 0 <= entry["accuracy"] <= 1 and entry["log_loss"] > 0 and 0 <= entry["roc_auc"] <= 1
        assert np.asarray(entry["test_proba"]).shape == (len(results.y_test), 3)
    predictions = store.get_json(run_id, "predictions")
    assert predictions["y_pred"] == tree.predict(results.X_test).tolist() and predictions["classes"] == tree.classes
    live = [p.hard_accuracy for p in store.list_metrics(run_id, "optimize")]
    assert live and all(a is not None and 0 <= a <= 1 for a in live)  # at every report: the last checkpoint's
    assert max(live) >= 1 / 3  # the hard splits' majority classes beat a guess among three classes


def test_a_class_run_chooses_its_depth_by_validation_accuracy_and_refits_the_choice(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = class_run(store, three_classes(), extra={"search": {"depths": [1, 2], "split_features": None},
                                                      "class_weight": "balanced"})
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    search = store.get_json(run_id, SEARCH)
    n_train = len(store.get_json(run_id, "split")["train"])
    assert search["status"] == "done" and search["score"] == "validation_accuracy"
    assert [p["depth"] for p in search["points"]] == [1, 2]
    for point in search["points"]:
        fitted = model_file.from_dict(store.get_json(run_id, TREE_PREFIX + point["key"]))
        assert fitted.is_classifier and fitted.depth == point["depth"] and 0 <= point["validation_accuracy"] <= 1
        assert fitted.n_samples[0] < n_train  # fitted on the search's train part
    chosen = search["chosen"]
    assert chosen["validation_accuracy"] == max(p["validation_accuracy"] for p in search["points"])
    results = load_results(store, run_id)
    assert results.tree.is_classifier and results.tree.depth == chosen["depth"]
    assert results.tree.n_samples[0] == n_train and results.tree.meta["target"] == "kind"  # refit on every row
    scores = store.get_json(run_id, "class_scores")
    assert scores["accuracy"] == pytest.approx(np.mean(results.tree.predict(results.X_test) == results.y_test))
    assert store.get_json(run_id, "baselines")["depth"] == chosen["depth"]
    fits = store.get_json(run_id, "fits")
    assert [f["name"] for f in fits] == ["depth 1", "depth 2", f"refit, depth {chosen['depth']}"]
    stages = {p.stage for p in store.list_metrics(run_id, "optimize") if p.hard_accuracy is not None}
    assert max(stages) >= fits[-1]["first_stage"]  # every fit's accuracy reached the curves, the refit's too


def test_a_class_run_chooses_its_features_per_split_on_the_path(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = class_run(store, three_classes(), extra={"search": {"depths": [2], "split_features": "auto"}})
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    search = store.get_json(run_id, SEARCH)
    assert [p["max_split_features"] for p in search["points"]] == [1, 2, 3, None]  # 5 inputs: k=5 is dense
    tree = load_results(store, run_id).tree
    k = search["chosen"]["max_split_features"]
    assert tree.is_classifier and int(tree.split_widths.max()) <= (k or tree.n_features)


def test_the_stratified_split_tests_every_class_and_trains_on_every_class():
    labels = np.array(["a"] * 50 + ["b"] * 8 + ["c"] * 2, dtype=object)
    train, test = stratified_split(labels, 0.25, seed=4)
    assert sorted([*train, *test]) == list(range(60)) and not set(train) & set(test)
    assert [int(np.sum(labels[test] == k)) for k in "abc"] == [12, 2, 1]
    assert set(labels[train]) == {"a", "b", "c"}
    again = stratified_split(labels, 0.25, seed=4)
    assert np.array_equal(again[1], test)


def cancelled_before_baselines(store: RunStore, done: int, table: pd.DataFrame, **params) -> int:
    """A class run as the worker leaves it when cancelled between its tree and its baselines: the finished run
    ``done``'s artifacts, all but the baselines, copied to a new run of the same ``table`` and ``params``
    (``class_run``'s), then cancelled."""
    run_id = class_run(store, table, **params)
    store.start_run(run_id)
    for name in set(store.list_artifacts(done)) - {"baselines", "baselines_error"}:
        store.put_json(run_id, name, store.get_json(done, name))
    store.set_status(run_id, RunStatus.CANCELLED, error="Cancelled by request.")
    return run_id


def test_a_class_run_cancelled_before_its_baselines_gets_class_baselines_on_demand(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    done = class_run(store, three_classes(), extra={"class_weight": "balanced"})
    assert worker.execute(store, done, hard_stop=False) is RunStatus.FINISHED
    run_id = cancelled_before_baselines(store, done, three_classes(), extra={"class_weight": "balanced"})
    assert "baselines" not in store.list_artifacts(run_id)
    fit_missing_baselines(store, run_id)
    results = load_results(store, run_id)
    baselines = store.get_json(run_id, "baselines")
    assert baselines["task"] == "classification" and baselines["classes"] == results.tree.classes
    assert {"cart", "random_forest", "hist_gradient_boosting"} <= set(baselines["models"])
    for entry in baselines["models"].values():  # scored on the run's own test rows, as class labels
        assert np.asarray(entry["test_proba"]).shape == (len(results.y_test), 3)
        assert set(entry["test_predictions"]) <= set(results.tree.classes)
        assert entry["accuracy"] == pytest.approx(np.mean(np.asarray(entry["test_predictions"]) == results.y_test))
    assert store.get_run(run_id).status is RunStatus.CANCELLED


def test_a_class_run_with_logistic_leaves_fits_them_and_its_counterpart_keeps_them(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = class_run(store, three_classes(), config={"class_leaf": "logistic"})
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    results = load_results(store, run_id)
    assert results.tree.has_logistic_leaves and results.tree.depth == 2
    np.testing.assert_allclose(store.get_json(run_id, "predictions")["proba"],
                               results.tree.predict_proba(results.X_test), atol=1e-12)
    sparse = store.get_json(run_id, "baselines")["models"]["get_sparse"]  # the same fit with 3-feature splits
    assert 0 <= sparse["accuracy"] <= 1 and np.asarray(sparse["test_proba"]).shape == (len(results.y_test), 3)


def test_an_old_class_run_without_a_leaf_choice_reads_as_class_shares():
    from get_core.runs.spec import leaves_text, search_leaf

    old = {"config": {**TINY}, "data": {"task": "classification"}, "search": {"depths": [1, 2]}}
    assert search_leaf(old) == "constant" and leaves_text(old) == "constant"
    assert search_leaf({**old, "search": {**old["search"], "leaf": "auto"}}) == "auto"
    assert leaves_text({**old, "search": {"leaf": "auto"}}) == "chosen"
    assert leaves_text({**old, "config": {**TINY, "class_leaf": "logistic"}, "search": None}) == "logistic"
    assert leaves_text({"config": {"leaf": "linear"}, "data": {}}) == "linear"


def test_a_class_search_that_chooses_the_leaf_keeps_both_trees_of_each_depth_and_depth_0(tmp_path):
    """leaf="auto": each depth is scored with its logistic leaves and with its class shares; both trees are stored
    under their own keys (no overwrite), depth 0 is one logistic model without a curve or a counterpart."""
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = class_run(store, three_classes(), config={"class_leaf": "logistic"},
                       extra={"search": {"depths": [0, 1, 2], "split_features": None, "leaf": "auto"}})
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    search = store.get_json(run_id, SEARCH)
    pairs = [(p["depth"], p["leaf"]) for p in search["points"]]
    assert pairs[0] == (0, "logistic") and {(1, "constant"), (1, "logistic")} <= set(pairs)
    keys = [p["key"] for p in search["points"]]
    assert len(set(keys)) == len(keys) and "d0-kany-logistic" in keys and {"d1-kany", "d1-kany-logistic"} <= set(keys)
    for point in search["points"]:
        tree = model_file.from_dict(store.get_json(run_id, TREE_PREFIX + point["key"]))
        assert tree.has_logistic_leaves == (point["leaf"] == "logistic")
        assert bool(tree.meta.get("single_model")) == (point["depth"] == 0)
    chosen = search["chosen"]
    assert chosen["key"] in keys and chosen["leaf"] in ("constant", "logistic")
    assert load_results(store, run_id).tree.has_logistic_leaves == (chosen["leaf"] == "logistic")
    fits = store.get_json(run_id, "fits")
    assert fits[0] == {"first_stage": 0, "name": "depth 0 (one logistic model)", "curve": False}
    assert [f["name"] for f in fits[1:3]] == ["depth 1", "depth 2"]


def test_a_class_search_that_chooses_depth_0_refits_one_logistic_model_without_a_counterpart(tmp_path):
    rng = np.random.default_rng(0)  # classes linear in the inputs: one logistic model is the tree to keep
    X = rng.normal(size=(240, 4))
    table = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "flag": X[:, 2] > 0,
                          "colour": np.where(X[:, 3] > 0, "red", "blue"),
                          "kind": np.where(X[:, 0] + 0.5 * X[:, 1] > 0, "yes", "no")})
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = class_run(store, table, config={"class_leaf": "logistic"},
                       extra={"search": {"depths": [0, 1], "split_features": None, "leaf": "logistic"}})
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    search = store.get_json(run_id, SEARCH)
    assert search["chosen"]["depth"] == 0 and search["chosen"]["key"] == "d0-kany-logistic"
    tree = load_results(store, run_id).tree
    assert tree.meta.get("single_model") and tree.has_logistic_leaves
    assert store.get_json(run_id, "fits")[-1]["name"] == "refit, depth 0 (one logistic model)"
    models = store.get_json(run_id, "baselines")["models"]
    assert "get_sparse" not in models and "get_dense" not in models  # one model has no splits to change
    assert {"cart", "random_forest"} <= set(models)
