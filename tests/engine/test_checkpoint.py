"""Depth-search checkpoints: a resumed search ends exactly as an uninterrupted one, and never reuses a foreign fit."""

import json

import numpy as np
import pytest

from get_core import GETRegressorCV
from get_core.engine.checkpoint import SearchCheckpoint

SEARCH = dict(depths=(1, 2, 3), n_starts=2, n_epochs=6, patience=5, random_state=0)


def _data(seed: int = 0, n: int = 120):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 3))
    return X, np.where(X[:, 0] + X[:, 1] > 1, 1.0, 0.0) + 0.3 * X[:, 2]


def _stored(directory, n_rows: int) -> dict:
    """The search's stored fits on its ``n_rows`` training rows, by depth (the refit, on all rows, is left out)."""
    fits = [(json.loads(p.read_text()), p) for p in directory.glob("*.json")]
    return {data["depth"]: p for data, p in fits if data["n_samples"][0] == n_rows}


def test_a_search_with_a_checkpoint_ends_as_one_without_and_stores_every_depth(tmp_path):
    X, y = _data()
    plain = GETRegressorCV(**SEARCH).fit(X, y)
    stored = GETRegressorCV(**SEARCH).fit(X, y, checkpoint=SearchCheckpoint(tmp_path / "ck"))
    assert stored.cv_results_ == plain.cv_results_
    np.testing.assert_array_equal(stored.predict(X), plain.predict(X))
    assert sorted(_stored(tmp_path / "ck", 80)) == [1, 2, 3]
    assert len(list((tmp_path / "ck").glob("*.json"))) == 4  # and the refit


def test_a_rerun_takes_stored_fits_instead_of_fitting_them_again(tmp_path):
    X, y = _data()
    checkpoint = SearchCheckpoint(tmp_path)
    first = GETRegressorCV(**SEARCH).fit(X, y, checkpoint=checkpoint)
    path = _stored(tmp_path, 80)[2]
    data = json.loads(path.read_text())
    data["meta"]["train_r2"] = 0.123456  # a mark a refit could not reproduce
    path.write_text(json.dumps(data))
    again = GETRegressorCV(**SEARCH).fit(X, y, checkpoint=checkpoint)
    assert [r["train_r2"] for r in again.cv_results_] == [first.cv_results_[0]["train_r2"], 0.123456,
                                                          first.cv_results_[2]["train_r2"]]
    assert [r["validation_r2"] for r in again.cv_results_] == [r["validation_r2"] for r in first.cv_results_]
    np.testing.assert_array_equal(again.predict(X), first.predict(X))
    refit = next(p for p in tmp_path.glob("*.json") if json.loads(p.read_text())["n_samples"][0] == 120)
    data = json.loads(refit.read_text())
    data["y_min"] += 1.0  # the refit, too, is taken as stored
    refit.write_text(json.dumps(data))
    np.testing.assert_allclose(GETRegressorCV(**SEARCH).fit(X, y, checkpoint=checkpoint).predict(X),
                               first.predict(X) + 1.0)


@pytest.mark.parametrize("change", [{"y": "other"}, {"n_epochs": 7}, {"random_state": 1}, {"leaf": "linear"}])
def test_a_fit_stored_for_other_data_or_settings_is_not_reused(tmp_path, change):
    X, y = _data()
    checkpoint = SearchCheckpoint(tmp_path)
    GETRegressorCV(**SEARCH).fit(X, y, checkpoint=checkpoint)
    params = {**SEARCH, **{k: v for k, v in change.items() if k != "y"}}
    y2 = _data(seed=1)[1] if "y" in change else y
    resumed = GETRegressorCV(**params).fit(X, y2, checkpoint=checkpoint)
    assert resumed.cv_results_ == GETRegressorCV(**params).fit(X, y2).cv_results_
    assert len(list(tmp_path.glob("*.json"))) == 8  # the other search's three depths and refit beside the first


def test_an_unreadable_stored_fit_is_refitted_and_replaced(tmp_path):
    X, y = _data()
    checkpoint = SearchCheckpoint(tmp_path)
    first = GETRegressorCV(**SEARCH).fit(X, y, checkpoint=checkpoint)
    path = _stored(tmp_path, 80)[1]
    path.write_text('{"schema": "get-explorer/oblique-tree", "depth": 1, "weig')  # torn by a kill
    again = GETRegressorCV(**SEARCH).fit(X, y, checkpoint=checkpoint)
    assert again.cv_results_ == first.cv_results_
    assert json.loads(path.read_text())["depth"] == 1


def test_a_cancelled_fit_is_not_stored(tmp_path):
    X, y = _data()
    GETRegressorCV(**SEARCH).fit(X, y, on_progress=lambda progress: True, checkpoint=SearchCheckpoint(tmp_path))
    assert list(tmp_path.glob("*.json")) == []


def test_a_checkpoint_that_cannot_be_written_warns_and_the_search_still_finishes(tmp_path):
    X, y = _data()
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.warns(RuntimeWarning, match="checkpoint"):
        search = GETRegressorCV(**SEARCH).fit(X, y, checkpoint=SearchCheckpoint(blocker / "ck"))
    assert search.cv_results_ == GETRegressorCV(**SEARCH).fit(X, y).cv_results_


def test_a_checkpoint_stored_before_weight_decay_existed_is_still_found():
    """The digest below is the one computed before GETConfig had ``weight_decay`` (and when ``polish`` defaulted to
    False), with the engine version since bumped:
    at its default the option leaves fingerprints alone (the stored paper-budget searches stay valid); any other
    value is a fit of its own."""
    from dataclasses import replace

    import torch

    from get_core.engine.checkpoint import fit_fingerprint
    from get_core.config import GETConfig

    X, y = np.arange(12.0).reshape(6, 2), np.arange(6.0)
    config = GETConfig(depth=2, n_starts=1, n_epochs=5, random_state=0, device="cpu")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        before = fit_fingerprint(X, y, config, ["a", "b"])
        decayed = fit_fingerprint(X, y, replace(config, weight_decay=0.01), ["a", "b"])
        unpolished, polished = (fit_fingerprint(X, y, replace(config, polish=p), ["a", "b"]) for p in (False, True))
    finally:
        torch.set_num_threads(threads)
    # engine v8's digest (a fingerprint holds ENGINE_VERSION: a bump makes every stored fit a new one, by design)
    assert before == "ca8a859ea0ae3db6dc3721279369a1515427a884e50aca8cda778ea952dd5202"
    assert decayed != before
    # polish="auto" (the default since) without a budget does not polish: the old default False's fingerprint
    assert unpolished == before and polished != before
