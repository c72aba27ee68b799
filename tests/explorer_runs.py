"""Finished runs with a hand-made tree, inserted through the store API (for page and browser tests)."""

from __future__ import annotations

import pandas as pd

from get_core import baselines as baseline_models

from get_core.model import model_file
from get_core.data.columns import to_parquet_bytes
from get_core.data.encoding import DataSpec, prepare
from get_core.runs.store import RunStatus, RunStore
from get_core.config import GETConfig
from get_core.metrics import scores
from get_core.runs.spec import split_rows
from get_core.runs.training import fit_all_baselines
from tests.trees import make_tree

TARGET = "yield"


def finished_run(store: RunStore, *, depth: int = 3, leaf: str = "constant", names=None, n_rows: int = 160,
                 seed: int = 0, baselines: bool = True, name: str | None = None,
                 status: RunStatus = RunStatus.FINISHED, counterpart: bool = False, owner: str | None = None,
                 **shape) -> int:
    """A finished run (FINISHED unless ``status`` says otherwise) whose model, split, encoding, predictions and
    (optionally) baselines are all consistent; with ``counterpart`` the baselines hold the worker's GET fit with the
    other kind of splits too (a real, tiny fit: ``training.fit_all_baselines``); ``owner``: whose run (the local
    user's by default, ``get_core.runs.access``); ``shape`` goes to ``make_tree``."""
    names = list(names or ["temp", "pressure", "wind"])
    tree, X, y = make_tree(depth=depth, p=len(names), leaf=leaf, seed=seed, names=names, n_rows=n_rows, **shape)
    frame = pd.DataFrame(X, columns=names)
    frame[TARGET] = y
    params = {"data": DataSpec(target=TARGET, features=tuple(names)).to_dict(), "seed": seed, "test_fraction": 0.25,
              "config": {"depth": depth, "leaf": leaf, "n_starts": 1, "n_epochs": 10, "alpha_range": [5.0, 150.0],
                         "n_alphas": 2, "learning_rate": 0.01, "l1": 0.0, "polish": False}}
    run_id = store.create_run(params, to_parquet_bytes(frame), "demo.csv", n_rows=n_rows, n_features=len(names),
                              name=name, owner=owner)
    store.start_run(run_id)
    prepared = prepare(frame, DataSpec.from_dict(params["data"]))
    train, test = split_rows(n_rows, 0.25, seed)
    store.put_json(run_id, "encoding", prepared.encoding.to_dict())
    store.put_json(run_id, "split", {"seed": seed, "train": train.tolist(), "test": test.tolist(),
                                     "row_ids": prepared.row_ids.tolist()})
    store.put_json(run_id, "model", model_file.to_dict(tree))
    y_pred = tree.predict(prepared.X[test])
    store.put_json(run_id, "predictions", {"test": test.tolist(), "y_true": prepared.y[test].tolist(),
                                           "y_pred": y_pred.tolist()})
    if baselines and counterpart:
        config = GETConfig(**{**params["config"], "random_state": seed, "device": "cpu"})
        store.put_json(run_id, "baselines", fit_all_baselines(
            prepared.X[train], prepared.y[train], prepared.X[test], prepared.y[test], config, names))
    elif baselines:
        store.put_json(run_id, "baselines", baseline_models.fit_baselines(
            prepared.X[train], prepared.y[train], prepared.X[test], prepared.y[test], depth, seed,
            feature_names=names, n_repeats=1))
    r2, rmse = scores(prepared.y[test], y_pred)
    store.set_status(run_id, status, test_r2=r2, test_rmse=rmse)
    return run_id
