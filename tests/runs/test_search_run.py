"""Runs whose depth or features per split are chosen for the user: each search fit travels to the store as it is
scored, with its tree, and the run's pages can open any of them."""

from __future__ import annotations

import time

import numpy as np
import pytest

from get_core.model import model_file
from get_core.runs import launch, worker
from get_core.runs.results import ResultsUnavailable, load_results
from get_core.runs.search import SEARCH, TREE_PREFIX, tree_key
from get_core.runs.store import RunStatus, RunStore
from tests.runs.test_worker import (CANCEL_MARGIN_S, LONG, TINY, file_store,  # noqa: F401 (a fixture)
                                    submit, wait_for)


def _search_run(store: RunStore, config: dict, search: dict, dispatch: bool = False) -> int:
    return submit(store, config, extra={"search": search}, dispatch=dispatch)


def test_a_depth_search_run_stores_every_depth_with_its_tree_and_refits_the_chosen_one(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = _search_run(store, {**TINY, "depth": 3}, {"depths": [1, 2, 3], "split_features": None})
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    search = store.get_json(run_id, SEARCH)
    n_train = len(store.get_json(run_id, "split")["train"])
    assert search["status"] == "done" and [p["depth"] for p in search["points"]] == [1, 2, 3]
    for point in search["points"]:
        tree = model_file.from_dict(store.get_json(run_id, TREE_PREFIX + point["key"]))
        assert tree.depth == point["depth"] and point["key"] == tree_key(point["depth"], None)
        assert tree.n_samples[0] == n_train - round(n_train / 3)  # the search's train part, not a refit
        assert point["n_parameters"] == tree.n_nonzero_parameters and -1 < point["validation_r2"] <= 1
    chosen = search["chosen"]
    assert chosen["validation_r2"] == max(p["validation_r2"] for p in search["points"])
    model = model_file.from_dict(store.get_json(run_id, "model"))
    assert model.depth == chosen["depth"] and model.n_samples[0] == n_train  # refit on every training row
    assert store.get_json(run_id, "baselines")["depth"] == chosen["depth"]  # CART of the chosen depth


def test_a_search_fit_opens_with_the_runs_rows_and_an_unknown_one_is_refused_in_words(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = _search_run(store, {**TINY, "depth": 2}, {"depths": [1, 2], "split_features": None})
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    shallow = load_results(store, run_id, tree_key(1, None))
    run_model = load_results(store, run_id)
    assert shallow.tree.depth == 1 and shallow.search_point["depth"] == 1 and run_model.search_point is None
    np.testing.assert_array_equal(shallow.X_test, run_model.X_test)
    with pytest.raises(ResultsUnavailable, match="has no tree 'd7-kany'"):
        load_results(store, run_id, "d7-kany")


def test_features_per_split_chosen_for_the_user_tries_each_k_and_keeps_splits_that_narrow(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = _search_run(store, {**TINY, "depth": 2}, {"depths": [2], "split_features": "auto"})
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    points = store.get_json(run_id, SEARCH)["points"]
    assert [p["max_split_features"] for p in points] == [1, 2, 3, None]  # airfoil has 5 inputs: k=5 is dense
    for point in points:
        tree = model_file.from_dict(store.get_json(run_id, TREE_PREFIX + point["key"]))
        limit = point["max_split_features"] or tree.n_features
        assert int(tree.split_widths.max()) == point["widest_split"] <= limit
    chosen = store.get_json(run_id, SEARCH)["chosen"]
    model = model_file.from_dict(store.get_json(run_id, "model"))
    assert int(model.split_widths.max()) <= (chosen["max_split_features"] or model.n_features)


def test_a_fixed_number_of_features_per_split_reaches_the_trainer(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = submit(store, {**TINY, "max_split_features": 2})
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    assert int(model_file.from_dict(store.get_json(run_id, "model")).split_widths.max()) <= 2


@pytest.mark.slow
def test_cancel_during_a_search_stops_the_worker_promptly_and_keeps_the_best_validated_tree(file_store):
    config = {**LONG, "n_epochs": 300, "depth": 6}  # seconds per depth: the cancel lands inside the search
    run_id = _search_run(file_store, config, {"depths": [1, 2, 3, 4, 5, 6], "split_features": None}, dispatch=True)
    wait_for(lambda: len((file_store.get_json(run_id, SEARCH) or {}).get("points", [])) >= 1, 120)
    assert file_store.get_run(run_id).status is RunStatus.RUNNING  # the first depth is shown while the run goes on
    asked = time.monotonic()
    launch.cancel_run(file_store, run_id)
    run = wait_for(lambda: (r := file_store.get_run(run_id)).status.is_finished() and r, 30, interval=0.02)
    assert time.monotonic() - asked < CANCEL_MARGIN_S
    assert run.status is RunStatus.CANCELLED and "best tree validated so far" in run.error
    points = file_store.get_json(run_id, SEARCH)["points"]
    best = max(points, key=lambda p: p["validation_r2"])
    kept = model_file.from_dict(file_store.get_json(run_id, "model"))
    searched = model_file.from_dict(file_store.get_json(run_id, TREE_PREFIX + best["key"]))
    assert kept.depth == best["depth"] and np.array_equal(kept.weights, searched.weights)


class RecordingChannel:
    """A channel that keeps what a run reports, as the local and Dask channels pass it on."""

    def __init__(self) -> None:
        self.progress: list[float] = []
        self.phases: list[str] = []
        self.metrics: dict[tuple, object] = {}
        self.artifacts: dict[str, object] = {}

    def report(self, *, progress, phase=None, metrics=(), **fields) -> bool:
        self.progress.append(progress)
        self.phases.append(phase)
        for m in metrics:
            key = (m.phase, m.start, m.stage, m.epoch)  # the store's primary key
            assert key not in self.metrics or self.metrics[key] == m, f"a later fit overwrote {key}"
            self.metrics[key] = m
        return False

    def put_json(self, name, value) -> None:
        self.artifacts[name] = value

    def cancelled(self) -> bool:
        return False

    def ended_elsewhere(self) -> bool:
        return False

    def on_stop(self, ending) -> None:
        pass


@pytest.mark.parametrize("search, fits, phase", [
    ({"depths": [1, 2, 3], "split_features": None}, 4, "search: depth 3"),  # three depths and the refit
    ({"depths": [2], "split_features": "auto"}, 5, "search: depth 2, 3 features per split")])  # k = 1, 2, 3, any
def test_a_search_runs_progress_only_grows_and_its_fits_follow_one_another_on_the_loss_curves(search, fits, phase):
    from get_core.data import columns
    from get_core.data.encoding import DataSpec
    from get_core.runs.training import train_run
    from tests.runs.test_worker import example

    table = example(200)
    spec = DataSpec(target="target", features=tuple(c for c in table.columns if c != "target"))
    params = {"config": {**TINY, "depth": 3, "n_epochs": 40}, "data": spec.to_dict(), "seed": 0, "search": search}
    channel = RecordingChannel()  # refuses a loss point that would overwrite another fit's
    ending = train_run(columns.to_parquet_bytes(table), params, channel, share=0.8)
    assert ending.status is RunStatus.FINISHED
    training = [p for p, phase in zip(channel.progress, channel.phases) if phase != "baselines"]
    assert training == sorted(training) and training[-1] <= 0.8 + 1e-9
    assert phase in channel.phases and any(p.startswith("refit of depth") for p in channel.phases if p)
    starts_of_fits = {m.stage for m in channel.metrics.values() if m.epoch == 0 and m.start == 0}
    assert len(starts_of_fits) >= fits * TINY["n_alphas"]  # every fit's stages have their own numbers
    listed = channel.artifacts["fits"]  # each fit's first stage, so the curves draw it on its own epochs
    assert len(listed) == fits and listed[-1]["name"].startswith("refit, depth")
    assert [f["first_stage"] for f in listed] == sorted({f["first_stage"] for f in listed})


def test_the_stored_search_trees_are_the_estimators_own_fits_through_a_round_trip(tmp_path):
    import pandas as pd

    from get_core import GETRegressorCV

    store = RunStore(tmp_path / "runs.sqlite")
    run_id = _search_run(store, {**TINY, "depth": 2}, {"depths": [1, 2], "split_features": None})
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    results = load_results(store, run_id)
    names = results.tree.feature_names
    cv = GETRegressorCV(depths=[1, 2], random_state=3, **{k: v for k, v in TINY.items() if k != "depth"}).fit(
        pd.DataFrame(results.X_train, columns=names), results.y_train)
    for fitted, point in zip(cv.search_trees_, store.get_json(run_id, SEARCH)["points"]):
        stored = model_file.from_dict(store.get_json(run_id, TREE_PREFIX + point["key"]))
        np.testing.assert_array_equal(stored.predict(results.X_test), fitted.predict(results.X_test))
    np.testing.assert_array_equal(results.tree.predict(results.X_test), cv.tree_.predict(results.X_test))
