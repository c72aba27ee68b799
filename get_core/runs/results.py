"""A run's results as the explorer pages need them: the fitted tree, its train/test rows, baselines, encoding.

Rebuilds X and y exactly as the worker did (the run's stored ``Encoding`` applied to the stored table's rows named by
the ``split`` artifact), so node statistics count the rows the tree was trained and tested on.
Read-only: it only calls the store's read methods.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from get_core import schedule
from get_core.baselines import fit_baselines, fit_class_baselines
from get_core.config import DEFAULTS
from get_core.data.columns import from_parquet_bytes
from get_core.data.encoding import Encoding
from get_core.metrics import scores
from get_core.model.model_file import ModelFormatError, from_dict
from get_core.runs.spec import SEARCH, TREE_PREFIX
from get_core.runs.store import Run, RunStore, StoreError
from get_core.model.tree import ObliqueTree


class ResultsUnavailable(StoreError):
    """The run has no usable model (yet); the message says why."""


@dataclass(frozen=True)
class RunResults:
    run: Run
    tree: ObliqueTree
    X_train: np.ndarray | None  # None when the run's data could not be rebuilt (the tree still works)
    y_train: np.ndarray | None
    X_test: np.ndarray | None
    y_test: np.ndarray | None
    encoding: Encoding | None
    baselines: Mapping[str, Any] | None
    baselines_error: str | None
    data_note: str | None  # why X/y are missing, if they are
    search_point: Mapping[str, Any] | None = None  # the search fit shown instead of the run's model (runs.search)

    @property
    def target(self) -> str:
        if self.encoding is not None:
            return self.encoding.target
        return str(self.run.params.get("data", {}).get("target", "target"))

    @property
    def alphas(self) -> list[float]:
        """One alpha per stage for the teaching view: the median over starts of the alphas the run drew (stored in
        the model's meta), or, for models without them, the middle of each stage's interval."""
        drawn = np.asarray(self.tree.meta.get("alphas") or [], dtype=float)
        if drawn.ndim == 2 and drawn.size and np.all(np.isfinite(drawn)) and np.all(drawn > 0):
            return [float(a) for a in np.median(drawn, axis=0)]
        config = self.run.params.get("config", {})
        lo, hi = (config.get("alpha_range") or DEFAULTS.alpha_range)[:2]
        return schedule.stage_midpoints((float(lo), float(hi)), int(config.get("n_alphas") or DEFAULTS.n_alphas))

    @property
    def test_scores(self) -> tuple[float | None, float | None]:
        """(R2, RMSE) on the test rows of the tree shown: the run's stored ones for its model, computed for a search
        fit (None without the rows)."""
        if self.search_point is None:
            return self.run.test_r2, self.run.test_rmse
        if self.X_test is None:
            return None, None
        return scores(self.y_test, self.tree.predict(self.X_test))

    @property
    def has_data(self) -> bool:
        return self.X_train is not None


def load_results(store: RunStore, run_id: int, search_tree: str | None = None) -> RunResults:
    """Everything the Tree, Compare and Predict pages show for run ``run_id``: its model, or with ``search_tree``
    (a ``runs.search.tree_key``) that fit of the run's search, with the same rows, encoding and baselines.

    Raises ResultsUnavailable when the run has no model artifact (or no such search fit) or the model is malformed.
    """
    run = store.get_run(run_id)
    point = None
    if search_tree is not None:
        point = next((p for p in (store.get_json(run_id, SEARCH) or {}).get("points", [])
                      if p.get("key") == search_tree), None)
        if point is None:
            raise ResultsUnavailable(f"Run {run_id}'s search has no tree '{search_tree}'.")
    model = store.get_json(run_id, "model" if point is None else TREE_PREFIX + search_tree)
    if model is None:
        state = run.status.value.lower()
        raise ResultsUnavailable(f"Run {run_id} ({state}) has no trained tree yet: open a finished run.")
    try:
        tree = from_dict(model)
    except ModelFormatError as exc:
        raise ResultsUnavailable(f"Run {run_id}'s stored model cannot be read: {exc}") from None
    encoding_data = store.get_json(run_id, "encoding")
    encoding = Encoding.from_dict(encoding_data) if encoding_data else None
    X_train = y_train = X_test = y_test = None
    note = None
    split = store.get_json(run_id, "split")
    try:
        if split is None:
            raise ValueError("the run stored no train/test split")
        if encoding is None:
            raise ValueError("the run stored no encoding")
        X, y = encoding.rows(from_parquet_bytes(store.get_dataset(run_id).data), np.asarray(split["row_ids"]))
        if X.shape[1] != (tree.n_features if tree.inputs is None else len(tree.inputs.names)):  # raw columns
            raise ValueError("the rebuilt table does not have the model's columns")
        train, test = np.asarray(split["train"], dtype=np.int64), np.asarray(split["test"], dtype=np.int64)
        X_train, y_train, X_test, y_test = X[train], y[train], X[test], y[test]
    except Exception as exc:  # the tree stays usable without its rows; say why they are missing
        note = f"The run's training rows could not be rebuilt ({exc}); statistics that need rows are hidden."
    error = store.get_json(run_id, "baselines_error")
    return RunResults(run=run, tree=tree, X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test,
                      encoding=encoding, baselines=store.get_json(run_id, "baselines"),
                      baselines_error=(error or {}).get("error") if isinstance(error, dict) else None,
                      data_note=note, search_point=point)


def model_inputs(store: RunStore, run: Run) -> int:
    """How many model inputs the run trains on: its stored encoding's count once the worker has written it (learned
    from the training rows, so a level only its test rows hold is not one; a category column one per level, also
    where the estimator encodes it), else the Data page's preview count."""
    encoding = store.get_json(run.run_id, "encoding")
    if not isinstance(encoding, dict):
        return run.n_features
    return len(Encoding.from_dict(encoding).baseline_names if encoding.get("one_hot") is False
               else encoding["feature_names"])


def runs_with_models(store: RunStore) -> list[Run]:
    """Finished or cancelled runs that stored a model, newest first."""
    return [run for run in store.list_runs()
            if run.status.is_finished() and "model" in store.list_artifacts(run.run_id)]


def fit_missing_baselines(store: RunStore, run_id: int) -> None:
    """Fit the baselines of a finished run that stopped before them (cancelled while training) on its stored split,
    as the worker would have, and store them (``RunStore.add_baselines``): called by the Compare page. The baselines
    only (tuned CART, the forest, HistGradientBoosting; a class run's weighted by its ``class_weight``): the GET fit
    with the other kind of splits (``training.fit_all_baselines``) would hold the page as long as the run that was
    cancelled, so such a run is compared without it."""
    results = load_results(store, run_id)
    if not results.has_data:
        raise StoreError(f"Run {run_id}'s rows could not be rebuilt ({results.data_note}), so its baselines cannot "
                         "be fitted.")
    params, encoding = results.run.params, results.encoding  # rows were rebuilt: the encoding is there
    rows = (encoding.for_baselines(results.X_train), results.y_train, encoding.for_baselines(results.X_test),
            results.y_test, results.tree.depth, int(params.get("seed", 0)))
    names = list(encoding.baseline_names)
    if results.tree.is_classifier:
        fitted = fit_class_baselines(*rows, feature_names=names, class_weight=params.get("class_weight"))
    else:
        fitted = fit_baselines(*rows, feature_names=names)
    store.add_baselines(run_id, fitted)
