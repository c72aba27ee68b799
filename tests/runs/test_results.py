"""Run results for the explorer pages: the tree with the exact rows it was trained and tested on."""

import json

import numpy as np
import pytest

from get_core.runs.results import ResultsUnavailable, load_results, model_inputs, runs_with_models
from get_core.runs.store import RunStore
from tests.explorer_runs import finished_run


@pytest.fixture
def store():
    store = RunStore(":memory:")
    yield store
    store.close()


def test_results_rebuild_the_runs_split(store):
    run_id = finished_run(store, depth=2, n_rows=80)
    results = load_results(store, run_id)
    assert results.has_data and results.target == "yield"
    assert len(results.y_train) + len(results.y_test) == 80
    predictions = store.get_json(run_id, "predictions")
    np.testing.assert_array_equal(results.tree.predict(results.X_test), predictions["y_pred"])
    assert results.baselines["models"]["cart"]["name"].startswith("CART (depth ")
    assert results.alphas == pytest.approx([15.0, 100.0])  # no drawn alphas stored: the stages' midpoints
    results.tree.meta["alphas"] = [[6.0, 60.0], [10.0, 100.0], [20.0, 140.0]]  # (starts, stages) as train stores
    assert results.alphas == pytest.approx([10.0, 100.0])  # the median start's alpha per stage
    assert [r.run_id for r in runs_with_models(store)] == [run_id]


def test_a_run_without_a_model_is_reported(store):
    run_id = store.create_run({"data": {}, "config": {}}, b"x", "d.csv", n_rows=1, n_features=1)
    with pytest.raises(ResultsUnavailable, match="no trained tree"):
        load_results(store, run_id)
    assert runs_with_models(store) == []


def test_a_run_whose_rows_cannot_be_rebuilt_keeps_its_tree(store):
    run_id = finished_run(store, depth=2, n_rows=60)
    encoding = {**store.get_json(run_id, "encoding"), "columns": ["nope"], "numeric": ["nope"]}
    store._conn.execute("UPDATE artifacts SET data = ? WHERE run_id = ? AND name = 'encoding'",
                        (json.dumps(encoding).encode(), run_id))
    results = load_results(store, run_id)
    assert not results.has_data and "could not be rebuilt" in results.data_note
    assert results.tree.depth == 2


def test_model_inputs_come_from_the_runs_encoding_once_it_is_stored(store):
    run_id = store.create_run({"data": {}, "config": {}}, b"x", "d.csv", n_rows=30, n_features=5)
    assert model_inputs(store, store.get_run(run_id)) == 5  # queued: the Data page's preview count
    store.start_run(run_id)
    store.put_json(run_id, "encoding", {"feature_names": ["a", "b=1", "b=2"]})  # a level only test rows had: gone
    assert model_inputs(store, store.get_run(run_id)) == 3
