"""A run's training body, free of any store: the same function trains a run in a local worker process and on a
Dask worker that cannot see the SQLite file. The worker side of runs/: it fits through the estimators, the one door
into training (``GETRegressor`` / ``GETClassifier``, or their CV searches for a run that chooses depth or features
per split, ``runs.search``); pages never import it (``runs.spec`` holds what they share with it).

``train_run(dataset, params, channel)`` takes the run's inputs (the table as Parquet bytes, its JSON parameters,
``runs.spec``) and a ``Channel`` that carries everything out: progress and metric points (returning whether to stop),
JSON artifacts, the cancel flag. The local worker's channel writes to the store as results arrive
(``worker.StoreChannel``); the Dask channel sends progress over Dask and returns the artifacts as the task's result
(``remote_task.RemoteChannel``).

One body for both tasks: split the usable rows train/test with the run's seed (stratified by class for a class
target), encode them with ``get_core.data.encoding.prepare`` (fill values and category levels learned from the
training rows only), fit the estimator of the run's task (a class run's weighted by its ``class_weight``), score it
on the test rows, then fit the baselines (``get_core.baselines``: depth-tuned CART, a 100-tree random forest and
HistGradientBoosting at their usual settings) and the same GET fit with the other kind of splits
(``runs.spec.counterpart_config``). Artifacts ``encoding``, ``split``, ``target_scale`` (regression), ``model``,
``class_scores`` (classes), ``predictions``, ``baselines`` (or ``baselines_error``).

A budgeted run's seconds (the Train page's "about 10 s") are its GET fit's or search's, all of them; the counterpart
gets ``budget.COUNTERPART_SHARE`` of them, and the baselines are never cut by GET's budget (issue 48): a forest of
as many trees as a budget allowed made the comparison depend on the machine's load.
"""

from __future__ import annotations

import errno
import traceback
from dataclasses import replace
from typing import Any, Mapping

import numpy as np

from get_core import metrics
from get_core.baselines import (class_metrics, evaluate_class_tree, evaluate_tree, fit_baselines,
                                fit_class_baselines)
from get_core.budget import COUNTERPART_SHARE
from get_core.config import GETConfig
from get_core.data.classes import class_labels
from get_core.data.columns import DataError, from_parquet_bytes
from get_core.data.encoding import DataSpec, Encoding, model_frame, prepare, usable_rows
from get_core.estimator import GETClassifier, GETRegressor, estimator_params
from get_core.model import model_file
from get_core.model.tree import ObliqueTree
from get_core.runs.channel import Channel, Ending
from get_core.runs.records import MetricPoint, RunFinishedError, RunStatus, StoreError
from get_core.runs.search import FitWindow, search_fit
from get_core.runs.spec import counterpart_config, search_spec, split_rows, stratified_split

BASELINES_SKIPPED = ("Cancelled by request while fitting the baselines: the trained tree and its test scores are kept; "
                     "the baseline comparison was skipped.")


def train_run(dataset: bytes, params: Mapping[str, Any], channel: Channel, share: float = 1.0) -> Ending:
    """Train one run from its inputs to its ending; every result goes through ``channel``. Training fills ``share``
    of the progress bar and the baselines the rest, so the bar never reads 100% while they still run."""
    df, spec = from_parquet_bytes(dataset), DataSpec.from_dict(params["data"])
    classify = spec.task == "classification"
    seed, test_fraction = int(params.get("seed", 0)), float(params.get("test_fraction", 0.25))
    rows = usable_rows(df, spec)
    train_idx, test_idx = (stratified_split(class_labels(df[spec.target])[rows], test_fraction, seed) if classify
                           else split_rows(len(rows), test_fraction, seed))
    prepared = prepare(df, spec, fit_rows=train_idx)  # fill values and category levels from training rows only
    channel.put_json("encoding", prepared.encoding.to_dict())
    channel.put_json("split", {"seed": seed, "train": train_idx.tolist(), "test": test_idx.tolist(),
                               "row_ids": prepared.row_ids.tolist(), **({"stratified": True} if classify else {})})
    config = GETConfig(**{**params["config"], "random_state": seed})
    X_train, y_train = prepared.X[train_idx], prepared.y[train_idx]
    X_test, y_test = prepared.X[test_idx], prepared.y[test_idx]
    if not classify:  # the loss curves show RMSE in the target's units (views.curves)
        channel.put_json("target_scale", {"y_scale": metrics.target_span(y_train)})
    class_weight = params.get("class_weight") if classify else None
    reached = [0.0]  # the last progress fraction reported, for the cancel message
    window = FitWindow()
    on_progress = _progress_reporter(channel, window, share, reached)
    search, stopped = search_spec(params), None
    if search is None:
        tree = fit_tree(X_train, y_train, config, prepared.feature_names, on_progress, classify, class_weight)
    else:
        tree, stopped = search_fit(X_train, y_train, config, search, prepared.feature_names, channel, window,
                                   on_progress, class_weight=class_weight, classify=classify)
    if classify:
        tree.meta["target"] = spec.target
    if channel.ended_elsewhere():
        raise RunFinishedError("The run was ended while training.")
    channel.put_json("model", model_file.to_dict(tree))
    channel.on_stop(stopped or Ending(RunStatus.CANCELLED, "Cancelled by request; the best tree found so far is kept."))
    scores = _test_scores(channel, tree, X_test, y_test, test_idx)
    if stopped is not None:
        return replace(stopped, scores=scores)
    if tree.meta.get("cancelled") or channel.cancelled():
        return Ending(RunStatus.CANCELLED, f"Cancelled by request at {100 * reached[0]:.0f}%; the best tree found "
                      "so far is kept.", scores)
    channel.on_stop(Ending(RunStatus.CANCELLED, BASELINES_SKIPPED, scores))
    ran = GETConfig(**tree.meta["config"])  # with a time budget, the starts and epochs the race chose
    _fit_baselines(channel, X_train, y_train, X_test, y_test, ran, prepared.feature_names, share,
                   classify=classify, class_weight=class_weight, budget=params["config"].get("time_budget"),
                   splits=not tree.meta.get("single_model"), encoding=prepared.encoding)
    if channel.cancelled():
        return Ending(RunStatus.CANCELLED, "Cancelled by request while fitting the baselines, which finished first: "
                      "the trained tree, its test scores and the baseline comparison are kept.", scores)
    return Ending(RunStatus.FINISHED, scores=scores)


def fit_tree(X: np.ndarray, y: np.ndarray, config: GETConfig, feature_names: list[str], on_progress: Any,
             classify: bool = False, class_weight: Any = None) -> ObliqueTree:
    """One GET fit of ``config`` through the estimator of the task (``GETClassifier`` on labels, weighted by
    ``class_weight``, or ``GETRegressor``); its tree."""
    cls = GETClassifier if classify else GETRegressor
    estimator = cls(**estimator_params(cls, config), **({"class_weight": class_weight} if classify else {}))
    return estimator.fit(model_frame(X, feature_names), y, on_progress=on_progress).tree_


def _test_scores(channel: Channel, tree: ObliqueTree, X_test: np.ndarray, y_test: np.ndarray,
                 test_idx: np.ndarray) -> tuple[float | None, float | None]:
    """Store the tree's test predictions (and a class tree's ``class_scores``); the run's R2 and RMSE (None, None
    for classes, whose scores are their artifact)."""
    y_pred = tree.predict(X_test)
    predictions = {"test": test_idx.tolist(), "y_true": y_test.tolist(), "y_pred": y_pred.tolist()}
    if not tree.is_classifier:
        channel.put_json("predictions", predictions)
        return metrics.scores(y_test, y_pred)
    proba, classes = tree.predict_proba(X_test), np.asarray(tree.classes)
    channel.put_json("class_scores", class_metrics(y_test, y_pred, proba, classes))
    channel.put_json("predictions", {**predictions, "proba": proba.tolist(), "classes": classes.tolist()})
    return None, None


def _progress_reporter(channel: Channel, window: FitWindow, share: float, reached: list[float]) -> Any:
    """The trainer's progress callback: progress and loss points to ``channel``, True to stop. The fit under way
    fills its ``window`` of the bar; a search's fits follow one another on the loss curves' epoch axis (each fit's
    stages are numbered after the previous fits'), so one fit's points never overwrite another's."""

    def on_progress(progress: Any) -> bool:
        reached[0] = (window.index + progress.fraction) / window.planned * share
        window.n_stages = max(window.n_stages, progress.n_stages)
        offset = window.first_stage
        metrics = [MetricPoint(progress.phase, r.start, offset + progress.stage, progress.epoch,
                               (offset + progress.stage) * progress.n_epochs + progress.epoch, r.alpha, r.soft_loss,
                               r.hard_loss, r.hard_accuracy) for r in progress.records]
        stop = channel.report(progress=reached[0], phase=window.label or progress.phase, stage=progress.stage,
                              n_stages=progress.n_stages, epoch=progress.epoch, n_epochs=progress.n_epochs,
                              best_hard_r2=progress.best_hard_r2, metrics=metrics)
        return stop or channel.cancelled()

    return on_progress


def _fit_baselines(channel: Channel, X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray,
                   y_test: np.ndarray, config: GETConfig, feature_names: list[str], share: float,
                   classify: bool = False, class_weight: Any = None, budget: float | None = None,
                   splits: bool = True, encoding: Encoding | None = None) -> None:
    """The baselines on the same split, then the GET counterpart (``fit_all_baselines``; none for a tree without
    ``splits``); a failing baseline never fails the run."""
    # Training is complete: its last stage and epoch, so the loss curves keep their stage lines (n_stages, n_epochs).
    done = {"phase": "baselines", "stage": config.n_alphas - 1, "n_stages": config.n_alphas,
            "epoch": config.n_epochs, "n_epochs": config.n_epochs}
    channel.report(progress=share, **done)

    def on_progress(progress: Any) -> bool:  # the counterpart fills the rest of the bar; a cancel stops it
        stop = channel.report(progress=share + (1.0 - share) * progress.fraction, **done)
        return stop or channel.cancelled()

    try:
        result = fit_all_baselines(X_train, y_train, X_test, y_test, config, feature_names, on_progress, classify,
                                   class_weight, budget, splits, encoding)
    except Exception as exc:
        traceback.print_exc()
        channel.put_json("baselines_error", {"error": describe(exc)})
        return
    channel.put_json("baselines", result)


def fit_all_baselines(X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray,
                      config: GETConfig, feature_names: list[str], on_progress: Any = None, classify: bool = False,
                      class_weight: Any = None, budget: float | None = None, splits: bool = True,
                      encoding: Encoding | None = None) -> dict:
    """The baselines at their usual settings (``baselines.fit_baselines`` / ``fit_class_baselines``, a class run's
    weighted by ``class_weight``) plus, under ``models["get_sparse"]`` or ``models["get_dense"]``, the run's GET fit
    again with the other kind of splits (``counterpart_config``), on the same split; a budgeted run's counterpart gets
    ``COUNTERPART_SHARE`` of its ``budget``. The counterpart is left out when it would be the same tree, when the
    run's tree has no ``splits`` (a class search's depth 0: one logistic model) or when it was cancelled part way.
    Rows of raw categories (``encoding`` without ``one_hot``) reach the baselines one-hot encoded
    (``Encoding.for_baselines``), the GET fits as they are."""
    fit, evaluate = ((fit_class_baselines, evaluate_class_tree) if classify else (fit_baselines, evaluate_tree))
    numbers, names = ((encoding.for_baselines, list(encoding.baseline_names)) if encoding is not None
                      else (lambda X: X, feature_names))
    result = fit(numbers(X_train), y_train, numbers(X_test), y_test, config.depth, config.random_state,
                 feature_names=names, **({"class_weight": class_weight} if classify else {}))
    other = counterpart_config(config, X_train.shape[1]) if splits else None
    if other is None:
        return result
    if budget is not None:
        other = replace(other, time_budget=COUNTERPART_SHARE * float(budget))
    tree = fit_tree(X_train, y_train, other, feature_names, on_progress, classify, class_weight)
    if not tree.meta.get("cancelled"):
        key = "get_dense" if other.max_split_features is None else "get_sparse"
        name = ("GET, dense splits" if other.max_split_features is None else
                f"GET, at most {other.max_split_features} features per split")
        result["models"][key] = evaluate(tree, X_test, y_test, name=name, random_state=config.random_state)
    return result


def describe(exc: BaseException) -> str:
    """A run's failure as one sentence for its page."""
    if isinstance(exc, (DataError, StoreError)):
        return str(exc)
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return f"The disk is full ({exc}): free some space, then start the run again."
    if isinstance(exc, MemoryError) or (isinstance(exc, RuntimeError) and "can't allocate" in str(exc)):
        return "Out of memory: use fewer rows, starts or a smaller depth."
    return f"The worker failed: {type(exc).__name__}: {exc}. The full traceback is kept as the run's 'traceback'."
