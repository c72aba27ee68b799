"""A run's training body, free of any store: the same function trains a run in a local worker process and on a
Dask worker that cannot see the SQLite file.

``train_run(dataset, params, channel)`` takes the run's inputs (the table as Parquet bytes, its JSON parameters) and
a ``Channel`` that carries everything out: progress and metric points (returning whether to stop), JSON artifacts,
the cancel flag. The local worker's channel writes to the store as results arrive (``worker.StoreChannel``); the Dask
channel sends progress over Dask and returns the artifacts as the task's result (``remote.RemoteChannel``).

Steps: split the usable rows train/test with the run's seed, encode them with ``get_core.data.encoding.prepare`` (fill
values and category levels learned from the training rows only), train GET, fit the baselines of issue 5 (CART of
the same depth and a random forest, ``get_core.baselines.fit_baselines``) and the same GET fit with the other kind
of splits (sparse beside dense, dense beside sparse: ``fit_all_baselines``). Artifacts ``encoding``, ``split``,
``model``, ``predictions``, ``baselines`` (or ``baselines_error``). A run whose depth or features per split are
chosen for the user runs ``GETRegressorCV`` instead of one fit (``get_core.runs.search``), and its baselines take the
chosen depth; a class target's search runs ``GETClassifierCV``, scored by validation accuracy.

A budgeted run's seconds (the Train page's "about 10 s") are the whole run's, baselines included (issue 35): its GET
fit gets ``MAIN_SHARE`` of them, then CART and the forest run (the forest grows ``FOREST_STEP`` trees at a time while
its ``forest_seconds`` last, ``baselines.grow_forest``), and the GET counterpart gets what is left of the budget (at
least ``COUNTERPART_MIN_S``). The run overruns by what no budget paces: each GET fit's probes, node refit and leaf
refits (on ailerons' 40 features, before the leaf sums went by blocks, most of 62 s), and a forest whose first
``FOREST_STEP`` trees outlast its share.
"""

from __future__ import annotations

import errno
import time
import traceback
from dataclasses import replace
from typing import Any, Mapping

import numpy as np

from get_core import metrics
from get_core.config import GETConfig
from get_core.runs.channel import Channel, Ending
from get_core.runs.records import MetricPoint, RunFinishedError, RunStatus, StoreError
from get_core.runs.search import FitWindow, search_fit, search_spec

#: A budgeted run's GET fit gets this share of its seconds; CART, the forest and the GET counterpart the rest.
MAIN_SHARE = 0.6
#: The fewest seconds the counterpart of a budgeted run gets when the forest took the rest of the budget.
COUNTERPART_MIN_S = 1.0
#: The forest's share of a budgeted run's seconds left after the GET fit (and CART); the counterpart has the rest.
#: With a counterpart to fit: 0.6 of 40% of the budget; without one, the forest has all that is left.
FOREST_SHARE = 0.6


def forest_seconds(budget: float | None, left: float, counterpart: bool) -> float | None:
    """The seconds a budgeted run's forest may grow trees in (None: no budget, all ``FOREST_TREES``): its share of
    the ``left`` seconds until the run's deadline, and never less than its share of a run whose GET fit kept to its
    ``MAIN_SHARE``, so a GET fit that overran does not shrink the forest it is compared with."""
    if budget is None:
        return None
    share = FOREST_SHARE if counterpart else 1.0
    return share * max(left, budget * (1.0 - MAIN_SHARE))


BASELINES_SKIPPED = ("Cancelled by request while fitting the baselines: the trained tree and its test scores are kept; "
                     "the baseline comparison was skipped.")


def train_run(dataset: bytes, params: Mapping[str, Any], channel: Channel, share: float = 1.0) -> Ending:
    """Train one run from its inputs to its ending; every result goes through ``channel``. Training fills ``share``
    of the progress bar and the baselines the rest, so the bar never reads 100% while they still run."""
    from get_core.model import model_file
    from get_core.data.columns import from_parquet_bytes
    from get_core.data.encoding import DataSpec, prepare, usable_rows
    from get_core.engine.train import MinMax, train  # torch: only the training path loads it

    started, seed = time.monotonic(), int(params.get("seed", 0))
    df, spec = from_parquet_bytes(dataset), DataSpec.from_dict(params["data"])
    if spec.task == "classification":
        return _train_classes(df, spec, params, channel, share, started)
    n_rows = len(usable_rows(df, spec))
    train_idx, test_idx = split_rows(n_rows, float(params.get("test_fraction", 0.25)), seed)
    prepared = prepare(df, spec, fit_rows=train_idx)  # fill values and category levels from training rows only
    channel.put_json("encoding", prepared.encoding.to_dict())
    channel.put_json("split", {"seed": seed, "train": train_idx.tolist(), "test": test_idx.tolist(),
                               "row_ids": prepared.row_ids.tolist()})
    config, deadline = _whole_run_budget(GETConfig(**{**params["config"], "random_state": seed}), started)
    X_train, y_train = prepared.X[train_idx], prepared.y[train_idx]
    X_test, y_test = prepared.X[test_idx], prepared.y[test_idx]
    # the trainer's y scale: the loss curves show RMSE in the target's units (views.curves)
    channel.put_json("target_scale", {"y_scale": MinMax.fit(X_train, y_train).y_scale})
    reached = [0.0]  # the last progress fraction reported, for the cancel message
    window = FitWindow()
    on_progress = _progress_reporter(channel, window, share, reached)
    search, stopped = search_spec(params), None
    if search is None:
        tree = train(X_train, y_train, config, on_progress=on_progress, feature_names=prepared.feature_names)
    else:
        tree, stopped = search_fit(X_train, y_train, config, search, prepared.feature_names, channel, window,
                                   on_progress)
    if channel.ended_elsewhere():
        raise RunFinishedError("The run was ended while training.")
    channel.put_json("model", model_file.to_dict(tree))
    channel.on_stop(stopped or Ending(RunStatus.CANCELLED, "Cancelled by request; the best tree found so far is kept."))
    y_pred = tree.predict(X_test)
    scores = metrics.scores(y_test, y_pred)
    channel.put_json("predictions", {"test": test_idx.tolist(), "y_true": y_test.tolist(),
                                     "y_pred": y_pred.tolist()})
    if stopped is not None:
        return replace(stopped, scores=scores)
    if tree.meta.get("cancelled") or channel.cancelled():
        return Ending(RunStatus.CANCELLED, f"Cancelled by request at {100 * reached[0]:.0f}%; the best tree found "
                      "so far is kept.", scores)
    channel.on_stop(Ending(RunStatus.CANCELLED, BASELINES_SKIPPED, scores))
    ran = GETConfig(**tree.meta["config"])  # with a time budget, the starts and epochs the race chose
    _fit_baselines(channel, X_train, y_train, X_test, y_test, ran, prepared.feature_names, share, deadline,
                   budget=params["config"].get("time_budget"))
    if channel.cancelled():
        return Ending(RunStatus.CANCELLED, "Cancelled by request while fitting the baselines, which finished first: "
                      "the trained tree, its test scores and the baseline comparison are kept.", scores)
    return Ending(RunStatus.FINISHED, scores=scores)


def _whole_run_budget(config: GETConfig, started: float) -> tuple[GETConfig, float | None]:
    """A budgeted run's budget covers the whole run: the GET fit gets ``MAIN_SHARE`` of it and the baselines the rest,
    until the returned deadline (``time.monotonic``; None without a budget)."""
    if config.time_budget is None:
        return config, None
    return replace(config, time_budget=config.time_budget * MAIN_SHARE), started + config.time_budget


def _train_classes(df: Any, spec: Any, params: Mapping[str, Any], channel: Channel, share: float,
                   started: float) -> Ending:
    """``train_run`` for a class target: a stratified split (every class in both parts), a classification tree
    (``engine.train`` on the class indices, rows weighted by the run's ``class_weight``), its test scores as the
    ``class_scores`` artifact (accuracy, balanced accuracy, log loss, ROC AUC, confusion matrix) and the
    classification baselines (``baselines.fit_class_baselines``, with GET's counterpart). A run that chooses its depth
    or features per split runs ``GETClassifierCV`` on the training rows (``runs.search``)."""
    from get_core.baselines import class_metrics
    from get_core.data.classes import class_labels
    from get_core.data.encoding import prepare, usable_rows
    from get_core.engine.train import train
    from get_core.model import model_file

    seed = int(params.get("seed", 0))
    rows = usable_rows(df, spec)
    labels = class_labels(df[spec.target])[rows]
    train_idx, test_idx = stratified_split(labels, float(params.get("test_fraction", 0.25)), seed)
    prepared = prepare(df, spec, fit_rows=train_idx)
    channel.put_json("encoding", prepared.encoding.to_dict())
    channel.put_json("split", {"seed": seed, "train": train_idx.tolist(), "test": test_idx.tolist(),
                               "row_ids": prepared.row_ids.tolist(), "stratified": True})
    config, deadline = _whole_run_budget(GETConfig(**{**params["config"], "random_state": seed}), started)
    X_train, y_train = prepared.X[train_idx], prepared.y[train_idx]
    X_test, y_test = prepared.X[test_idx], prepared.y[test_idx]
    classes = np.unique(y_train)
    weights = class_weights(y_train, params.get("class_weight"))
    reached = [0.0]
    window = FitWindow()
    on_progress = _progress_reporter(channel, window, share, reached)
    search, stopped = search_spec(params), None
    if search is None:
        tree = train(X_train, np.searchsorted(classes, y_train), config, on_progress=on_progress,
                     feature_names=prepared.feature_names, sample_weight=weights, classes=classes.tolist())
    else:
        tree, stopped = search_fit(X_train, y_train, config, search, prepared.feature_names, channel, window,
                                   on_progress, class_weight=params.get("class_weight"), classify=True)
    tree.meta["target"] = spec.target
    if channel.ended_elsewhere():
        raise RunFinishedError("The run was ended while training.")
    channel.put_json("model", model_file.to_dict(tree))
    channel.on_stop(stopped or Ending(RunStatus.CANCELLED, "Cancelled by request; the best tree found so far is kept."))
    y_pred, proba = tree.predict(X_test), tree.predict_proba(X_test)
    metrics = class_metrics(y_test, y_pred, proba, classes)
    channel.put_json("class_scores", metrics)
    channel.put_json("predictions", {"test": test_idx.tolist(), "y_true": y_test.tolist(), "y_pred": y_pred.tolist(),
                                     "proba": proba.tolist(), "classes": classes.tolist()})
    if stopped is not None:
        return stopped
    if tree.meta.get("cancelled") or channel.cancelled():
        return Ending(RunStatus.CANCELLED, f"Cancelled by request at {100 * reached[0]:.0f}%; the best tree found "
                      "so far is kept.")
    channel.on_stop(Ending(RunStatus.CANCELLED, BASELINES_SKIPPED))
    ran = GETConfig(**tree.meta["config"])
    _fit_baselines(channel, X_train, y_train, X_test, y_test, ran, prepared.feature_names, share, deadline,
                   classify=True, class_weight=params.get("class_weight"))
    return Ending(RunStatus.FINISHED)


def class_weights(y: np.ndarray, class_weight: Any) -> np.ndarray | None:
    """Per-row weights of ``class_weight`` (scikit-learn's: None, "balanced" or {label: weight}); None: all equal."""
    if class_weight is None:
        return None
    from sklearn.utils.class_weight import compute_sample_weight

    return compute_sample_weight(class_weight, y)


def stratified_split(labels: np.ndarray, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (train, test) positions of ``labels``: each class's rows permuted with the run's seed and
    ``round(rows * test_fraction)`` of them tested, at least one and at most all but one (every class has at least
    two rows, ``data.classes.check_classes``), so each class is both trained on and tested."""
    rng = np.random.default_rng(seed)
    test = []
    for label in sorted(set(labels.tolist()), key=lambda v: (str(type(v)), v)):
        rows = rng.permutation(np.flatnonzero(labels == label))
        n_test = min(len(rows) - 1, max(1, int(round(len(rows) * test_fraction))))
        test.extend(rows[:n_test].tolist())
    test_idx = np.sort(np.array(test, dtype=np.int64))
    return np.setdiff1d(np.arange(len(labels)), test_idx), test_idx


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
                   deadline: float | None = None, classify: bool = False, class_weight: Any = None,
                   budget: float | None = None) -> None:
    """CART and random forest on the same split (issue 5), then the GET counterpart (``counterpart_config``), by
    ``deadline`` (``time.monotonic``) when the run has a ``budget``; a failing baseline never fails the run."""
    # Training is complete: its last stage and epoch, so the loss curves keep their stage lines (n_stages, n_epochs).
    done = {"phase": "baselines", "stage": config.n_alphas - 1, "n_stages": config.n_alphas,
            "epoch": config.n_epochs, "n_epochs": config.n_epochs}
    channel.report(progress=share, **done)

    def on_progress(progress: Any) -> bool:  # the counterpart fills the rest of the bar; a cancel stops it
        stop = channel.report(progress=share + (1.0 - share) * progress.fraction, **done)
        return stop or channel.cancelled()

    try:
        result = fit_all_baselines(X_train, y_train, X_test, y_test, config, feature_names, on_progress, deadline,
                                   classify, class_weight, budget)
    except Exception as exc:
        traceback.print_exc()
        channel.put_json("baselines_error", {"error": describe(exc)})
        return
    channel.put_json("baselines", result)


def fit_all_baselines(X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray,
                      config: GETConfig, feature_names: list[str], on_progress: Any = None,
                      deadline: float | None = None, classify: bool = False, class_weight: Any = None,
                      budget: float | None = None) -> dict:
    """``compare.fit_baselines`` (CART and the forest) plus, under ``models["get_sparse"]`` or
    ``models["get_dense"]``, the run's GET fit again with the other kind of splits (``counterpart_config``), on the
    same split. The counterpart is left out when it would be the same tree or when it was cancelled part way. With a
    ``deadline`` (``time.monotonic``) and the run's whole ``budget`` (seconds), the forest grows trees for
    ``forest_seconds`` and a budgeted counterpart gets the seconds left until the deadline (at least
    ``COUNTERPART_MIN_S``)."""
    from get_core.baselines import (evaluate_class_tree, evaluate_tree, fit_baselines,  # scikit-learn: kept out of
                                    fit_class_baselines)  # the supervisor
    from get_core.engine.train import train  # torch: only the worker loads it

    other = counterpart_config(config, X_train.shape[1])
    if classify:  # y holds class labels; the baselines are classifiers weighted by ``class_weight``
        result = fit_class_baselines(X_train, y_train, X_test, y_test, config.depth, config.random_state,
                                     feature_names=feature_names, class_weight=class_weight)
        evaluate_tree = evaluate_class_tree  # noqa: F811 (the counterpart below is scored as a classifier)
    else:
        result = fit_baselines(X_train, y_train, X_test, y_test, config.depth, config.random_state,
                               feature_names=feature_names,
                               forest_seconds=forest_seconds(budget, (deadline or 0.0) - time.monotonic(),
                                                             other is not None))
    if other is None:
        return result
    if deadline is not None and other.time_budget is not None:
        other = replace(other, time_budget=max(COUNTERPART_MIN_S, deadline - time.monotonic()))
    if classify:
        classes = np.unique(y_train)
        tree = train(X_train, np.searchsorted(classes, y_train), other, on_progress=on_progress,
                     feature_names=feature_names, sample_weight=class_weights(y_train, class_weight),
                     classes=classes.tolist())
    else:
        tree = train(X_train, y_train, other, on_progress=on_progress, feature_names=feature_names)
    if not tree.meta.get("cancelled"):
        key = "get_dense" if other.max_split_features is None else "get_sparse"
        name = ("GET, dense splits" if other.max_split_features is None else
                f"GET, at most {other.max_split_features} features per split")
        result["models"][key] = evaluate_tree(tree, X_test, y_test, name=name, random_state=config.random_state)
    return result


#: Features per split of the sparse tree fitted beside a dense run: the most the diagram writes as a whole sentence
#: (``views.labels.SENTENCE_TERMS``), and the sparsest level that kept dense accuracy in the first measurement
#: (docs/BENCHMARKS.md "Sparse splits": k=3 within 0.1 point of dense with linear leaves; k=2 lost 10 more points
#: than k=3 with constant leaves on electrical_grid_stability).
COUNTERPART_K = 3


def counterpart_config(config: GETConfig, n_features: int) -> GETConfig | None:
    """The GET fit the Compare page puts beside the run's: a dense run's with ``COUNTERPART_K`` features per split,
    a sparse run's dense; None when that is the run's own tree (a dense run on ``COUNTERPART_K`` features or fewer,
    or a sparse run whose k already covers every feature)."""
    k = config.max_split_features
    if not has_counterpart(k, n_features):
        return None
    return replace(config, max_split_features=COUNTERPART_K if k is None else None)


def has_counterpart(max_split_features: int | None, n_features: int) -> bool:
    """Whether a run with this ``max_split_features`` on ``n_features`` features gets a counterpart fit."""
    k = max_split_features
    return n_features > (COUNTERPART_K if k is None else k)


def split_rows(n: int, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (train, test) row positions: a seeded permutation, ``round(n * test_fraction)`` rows (>= 1) to test."""
    n_test = min(n - 2, max(1, int(round(n * test_fraction))))
    order = np.random.default_rng(seed).permutation(n)
    return np.sort(order[n_test:]), np.sort(order[:n_test])


def describe(exc: BaseException) -> str:
    """A run's failure as one sentence for its page."""
    from get_core.data.columns import DataError

    if isinstance(exc, (DataError, StoreError)):
        return str(exc)
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return f"The disk is full ({exc}): free some space, then start the run again."
    if isinstance(exc, MemoryError) or (isinstance(exc, RuntimeError) and "can't allocate" in str(exc)):
        return "Out of memory: use fewer rows, starts or a smaller depth."
    return f"The worker failed: {type(exc).__name__}: {exc}. The full traceback is kept as the run's 'traceback'."
