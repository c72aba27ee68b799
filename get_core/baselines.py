"""Baselines for the comparison page, on the run's own split and at their usual settings, never cut by GET's time
budget (issue 48): CART with its depth tuned on a 2:1 split of the training rows (the paper's protocol), a random
forest of ``FOREST_TREES`` trees and HistGradientBoosting, all with scikit-learn's defaults otherwise.

``fit_baselines`` returns one JSON-ready dict (the worker stores it as the run artifact "baselines"); the other
functions put an ``ObliqueTree`` on the same footing and look at the forest on one node's rows.

How things are counted (the paper's Tables 1 and 5):
  * parameters: CART and every forest tree count 2 per branch node (feature index and threshold) and 1 per leaf;
    ``ObliqueTree.n_nonzero_parameters`` counts each split's non-zero weights and its threshold (p+1 for a dense
    split, as the paper's Table 5) and 1 (constant) or p+1 (linear) per leaf.
  * ``size_bytes``: length of ``pickle.dumps(model, protocol=5)`` of the fitted model object (the same serializer
    for every model, so the numbers compare); ``parameter_bytes`` = 8 * parameters (float64 storage of the
    parameters alone, the embedded-code lower bound).
  * ``predict_ms_per_10k``: median wall time, over ``n_repeats`` runs, of one ``predict`` call on 10,000 rows drawn
    with replacement from the test rows; single thread (sklearn's default ``n_jobs=None``).

This module sits on the lowest floor: it imports nothing of the project but ``get_core.model.tree``.
"""

from __future__ import annotations

import math
import pickle
import time
import warnings
from numbers import Integral
from typing import Any, Callable, Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from get_core.metrics import scores
from get_core.model.tree import ObliqueTree, raw_rows

SCHEMA = "get-explorer/baselines"
SCHEMA_VERSION = 1
TIMING_ROWS = 10_000
FOREST_TREES = 100  # sklearn's default; the paper's forests use the library defaults as well
#: Rows each forest tree draws on large tables: fully grown trees on all of 750,000 rows would hold about 9 GB
#: (100 trees of ~1.5 million nodes); tables up to this size keep sklearn's default (a bootstrap of every row).
FOREST_MAX_SAMPLES = 50_000
#: The depths a baseline CART is tuned over (the paper's depth grid for every tree method, bench.paper).
CART_DEPTHS = tuple(range(1, 13))
#: The share of the training rows that scores each CART depth (the paper's 2:1 split).
CART_VALIDATION_FRACTION = 1 / 3


def tuned_cart(make: Callable[[int], Any], X: np.ndarray, y: np.ndarray, random_state: int | None,
               stratify: bool = False) -> Any:
    """``make(depth)`` fitted on all of X, y (its ``max_depth`` says which) at the depth of ``CART_DEPTHS`` with the best ``score`` (R2 or
    accuracy) on a random 2:1 split of them (stratified for classes where every class has two rows); ties go to the
    shallower tree. Too few rows to split: the deepest depth, as an untuned CART would grow."""
    from sklearn.model_selection import train_test_split

    _, counts = np.unique(y, return_counts=True) if stratify else (None, None)
    try:
        X_tr, X_val, y_tr, y_val = train_test_split(
            X, y, test_size=CART_VALIDATION_FRACTION, random_state=random_state,
            stratify=y if stratify and counts.min() >= 2 else None)
    except ValueError:  # fewer rows than a split needs
        y_val = y[:0]
    if len(y_val) < 2:  # no score to choose by
        return make(CART_DEPTHS[-1]).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # R2 of a constant validation target: NaN, never chosen
        scored = [(np.nan_to_num(make(d).fit(X_tr, y_tr).score(X_val, y_val), nan=-np.inf), -d) for d in CART_DEPTHS]
    return make(-max(scored)[1]).fit(X, y)


def oob_predictions(forest: Any, X: np.ndarray) -> np.ndarray:
    """Each training row's mean prediction by the trees that did not draw it (``estimators_samples_``); NaN for a row
    every tree drew (likely with a forest of few trees, where sklearn's own ``oob_prediction_`` would say 0)."""
    total, count = np.zeros(len(X)), np.zeros(len(X))
    for tree, drawn in zip(forest.estimators_, forest.estimators_samples_):
        left_out = np.ones(len(X), dtype=bool)
        left_out[drawn] = False
        total[left_out] += tree.predict(X[left_out])
        count[left_out] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def fit_baselines(X_train: Any, y_train: Any, X_test: Any, y_test: Any, depth: int, random_state: int | None,
                  *, feature_names: Sequence[str] | None = None, n_repeats: int = 5) -> dict:
    """Fit the baselines at their usual settings (module docstring: depth-tuned CART, a 100-tree random forest and
    HistGradientBoosting) and evaluate them. ``depth`` is the GET tree's, recorded beside them.

    Returns a JSON-ready dict::

        {"schema", "version", "depth", "random_state", "n_train", "n_test", "feature_names",
         "y_test": [...],
         "models": {"cart": ENTRY, "random_forest": ENTRY, "hist_gradient_boosting": ENTRY},  # the worker adds
         "forest": {"feature_importances": [...], "oob_train_predictions": [...]}}          # "get_sparse"/"get_dense"

    where each ENTRY is ``{"name", "r2", "rmse", "n_parameters", "parameter_bytes", "size_bytes",
    "predict_ms_per_10k", "fit_seconds", "features_per_split", "test_predictions"}`` (CART's entry adds its tuned
    ``depth``; HistGradientBoosting's parameters count every tree it grew, ``count_boosting_parameters``). ``r2``/``rmse`` are
    ``None`` when undefined (``metrics.scores``: fewer than two test rows or a constant target, no test rows).
    ``oob_train_predictions`` are the forest's out-of-bag predictions of the training rows
    (honest predictions on rows it trained on; ``None`` for a row no tree left out), used for the forest's error on
    one node's training rows.
    """
    from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor

    X_train, y_train = _as_xy(X_train, y_train, "train")
    X_test, y_test = _as_xy(X_test, y_test, "test")
    _check_inputs(X_train, X_test, depth)
    depth = int(depth)
    names = list(feature_names) if feature_names is not None else [f"x{j}" for j in range(X_train.shape[1])]

    timing_X = timing_rows(X_test if len(X_test) else X_train, random_state)
    cart, seconds = _timed(lambda: tuned_cart(
        lambda d: DecisionTreeRegressor(max_depth=d, random_state=random_state), X_train, y_train, random_state))
    cart_entry = _evaluate(_cart_name(cart), cart, seconds, X_test, y_test, timing_X, n_repeats)
    cart_entry.update(n_parameters=count_tree_parameters(cart), depth=cart.max_depth)

    forest = RandomForestRegressor(n_estimators=FOREST_TREES, random_state=random_state,
                                   max_samples=FOREST_MAX_SAMPLES if len(y_train) > FOREST_MAX_SAMPLES else None)
    forest_entry = _evaluate(BASELINE_TITLES["random_forest"], *_timed(lambda: forest.fit(X_train, y_train)), X_test, y_test, timing_X,
                             n_repeats)
    forest_entry["n_parameters"] = sum(count_tree_parameters(t) for t in forest.estimators_)
    forest_entry["n_trees"] = len(forest.estimators_)
    with threadpool_limits(ONE_OPENMP_THREAD, user_api="openmp"):
        boosting = HistGradientBoostingRegressor(random_state=random_state)
        boosting_entry = _evaluate(BASELINE_TITLES["hist_gradient_boosting"], *_timed(lambda: boosting.fit(X_train, y_train)), X_test,
                                   y_test, timing_X, n_repeats)
    boosting_entry["n_parameters"] = count_boosting_parameters(boosting)
    for entry in (cart_entry, forest_entry, boosting_entry):
        entry["parameter_bytes"] = 8 * entry["n_parameters"]
        entry["features_per_split"] = 1

    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "depth": depth,
        "random_state": random_state,
        "n_train": int(X_train.shape[0]),
        "n_test": int(X_test.shape[0]),
        "feature_names": names,
        "y_test": _floats(y_test),
        "models": {"cart": cart_entry, "random_forest": forest_entry, "hist_gradient_boosting": boosting_entry},
        "forest": {
            "feature_importances": _floats(forest.feature_importances_),
            "oob_train_predictions": _floats(oob_predictions(forest, X_train)),
        },
    }


def _cart_name(cart: Any) -> str:
    """A tuned CART's name in every table, with the depth its tuning chose."""
    return f"CART (depth {cart.max_depth}, tuned)"


def _check_inputs(X_train: np.ndarray, X_test: np.ndarray, depth: Any) -> None:
    if X_train.shape[0] < 2:
        raise ValueError(f"Baselines need at least 2 training rows; got {X_train.shape[0]}.")
    if X_test.shape[1] != X_train.shape[1]:
        raise ValueError(f"X_test has {X_test.shape[1]} columns but X_train has {X_train.shape[1]}.")
    if not isinstance(depth, Integral) or isinstance(depth, bool) or depth < 1:
        raise ValueError(f"depth must be a positive integer; got {depth!r}.")


def evaluate_tree(tree: ObliqueTree, X_test: Any, y_test: Any, *, name: str = "GET",
                  random_state: int | None = None, n_repeats: int = 5) -> dict:
    """An ENTRY (same keys as ``fit_baselines``'s) for a fitted ``ObliqueTree``; ``fit_seconds`` comes from
    ``tree.meta["fit_seconds"]`` when the trainer recorded it, else ``None``."""
    X_test, y_test = _as_xy(X_test, y_test, "test", tree)
    pred = tree.predict(X_test)
    timing_X = timing_rows(X_test, random_state)
    fit_seconds = tree.meta.get("fit_seconds") if isinstance(tree.meta, dict) else None
    return {
        "name": name,
        **dict(zip(("r2", "rmse"), scores(y_test, pred))),
        "n_parameters": int(tree.n_nonzero_parameters),  # a sparse split counts its non-zero weights only
        "parameter_bytes": 8 * int(tree.n_nonzero_parameters),
        "size_bytes": len(pickle.dumps(tree, protocol=5)),
        "predict_ms_per_10k": predict_ms(tree.predict, timing_X, n_repeats) if len(timing_X) else None,
        "fit_seconds": _float_or_none(fit_seconds),
        "features_per_split": int(tree.split_widths.max()),
        "test_predictions": _floats(pred),
    }


#: HistGradientBoosting's OpenMP threads beside torch's own OpenMP runtime in the worker: a 160-row, 3-class fit took
#: 1.2 s with two threads and 0.28 s with one on a busy 2-core machine (the run's class baselines 10.3 s -> 3.7 s).
#: One thread keeps their cost near a quiet machine's; the tables the app trains on fit in one thread's time.
ONE_OPENMP_THREAD = 1


def fit_class_baselines(X_train: Any, y_train: Any, X_test: Any, y_test: Any, depth: int, random_state: int | None,
                        *, feature_names: Sequence[str] | None = None, class_weight: str | None = None,
                        n_repeats: int = 5) -> dict:
    """``fit_baselines`` for a class target: depth-tuned CART (by accuracy on a stratified 2:1 split), the random
    forest (100 trees) and scikit-learn's HistGradientBoosting classifier on the same split, each weighted by
    ``class_weight`` like the run. Each ENTRY holds ``class_metrics`` (accuracy, balanced accuracy, log loss, ROC AUC, the confusion matrix) and its test
    predictions (labels) and probabilities; the dict adds ``"task": "classification"`` and the ``classes``."""
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    X_train, X_test = np.asarray(X_train, dtype=np.float64), np.asarray(X_test, dtype=np.float64)
    y_train, y_test = np.asarray(y_train).ravel(), np.asarray(y_test).ravel()
    classes = np.unique(y_train)
    names = list(feature_names) if feature_names is not None else [f"x{j}" for j in range(X_train.shape[1])]
    timing_X = timing_rows(X_test if len(X_test) else X_train, random_state)
    forest = RandomForestClassifier(n_estimators=FOREST_TREES, random_state=random_state, class_weight=class_weight,
                                    max_samples=FOREST_MAX_SAMPLES if len(y_train) > FOREST_MAX_SAMPLES else None)
    boosting = HistGradientBoostingClassifier(random_state=random_state, class_weight=class_weight)
    fits = {"cart": lambda: tuned_cart(
                lambda d: DecisionTreeClassifier(max_depth=d, random_state=random_state, class_weight=class_weight),
                X_train, y_train, random_state, stratify=True),
            "random_forest": lambda: forest.fit(X_train, y_train),
            "hist_gradient_boosting": lambda: boosting.fit(X_train, y_train)}
    entries = {}
    with threadpool_limits(ONE_OPENMP_THREAD, user_api="openmp"):  # fits, predictions and their timing
        for key, fit in fits.items():
            model, fit_seconds = _timed(fit)
            proba = model.predict_proba(X_test) if len(X_test) else np.empty((0, len(classes)))
            pred = model.predict(X_test) if len(X_test) else y_test[:0]
            entries[key] = {
                "name": _cart_name(model) if key == "cart" else BASELINE_TITLES[key], **class_metrics(y_test, pred, proba, classes),
                "n_parameters": (count_tree_parameters(model) if key == "cart" else
                                 sum(count_tree_parameters(t) for t in model.estimators_) if key == "random_forest"
                                 else count_boosting_parameters(model)),
                "size_bytes": len(pickle.dumps(model, protocol=5)),
                "predict_ms_per_10k": predict_ms(model.predict, timing_X, n_repeats) if len(timing_X) else None,
                "fit_seconds": fit_seconds, "features_per_split": 1,
                "test_predictions": np.asarray(pred).tolist(), "test_proba": _float_rows(proba)}
            if key == "cart":
                entries[key]["depth"] = model.max_depth
            entries[key]["parameter_bytes"] = 8 * entries[key]["n_parameters"]
    return {"schema": SCHEMA, "version": SCHEMA_VERSION, "task": "classification", "depth": int(depth),
            "random_state": random_state, "n_train": int(len(y_train)), "n_test": int(len(y_test)),
            "feature_names": names, "classes": classes.tolist(), "y_test": y_test.tolist(), "models": entries,
            "forest": {"feature_importances": _floats(forest.feature_importances_),
                       "oob_train_predictions": None}}


#: The baselines' names in tables (CART's adds its tuned depth, ``_cart_name``).
BASELINE_TITLES = {"random_forest": "Random forest", "hist_gradient_boosting": "HistGradientBoosting"}


def evaluate_class_tree(tree: ObliqueTree, X_test: Any, y_test: Any, *, name: str = "GET",
                        random_state: int | None = None, n_repeats: int = 5) -> dict:
    """``evaluate_tree`` for a classification tree: ``class_metrics``, its labels and probabilities."""
    X_test, y_test = raw_rows(tree, X_test), np.asarray(y_test).ravel()
    pred, proba = tree.predict(X_test), tree.predict_proba(X_test)
    timing_X = timing_rows(X_test, random_state)
    fit_seconds = tree.meta.get("fit_seconds") if isinstance(tree.meta, dict) else None
    return {"name": name, **class_metrics(y_test, pred, proba, np.asarray(tree.classes)),
            "n_parameters": int(tree.n_nonzero_parameters), "parameter_bytes": 8 * int(tree.n_nonzero_parameters),
            "size_bytes": len(pickle.dumps(tree, protocol=5)),
            "predict_ms_per_10k": predict_ms(tree.predict, timing_X, n_repeats) if len(timing_X) else None,
            "fit_seconds": _float_or_none(fit_seconds), "features_per_split": int(tree.split_widths.max()),
            "test_predictions": pred.tolist(), "test_proba": _float_rows(proba)}


def class_metrics(y_true: Any, y_pred: Any, proba: np.ndarray, classes: np.ndarray) -> dict:
    """Accuracy, balanced accuracy, log loss and ROC AUC (binary: of the second class; more classes: one-vs-rest,
    macro) on the test rows, and the confusion matrix (rows: true class, columns: predicted, in ``classes``
    order). A score that is undefined (no rows; ROC AUC with a single class among the rows) is None."""
    from sklearn.metrics import balanced_accuracy_score, confusion_matrix, log_loss, roc_auc_score

    y_true, y_pred = np.asarray(y_true).ravel(), np.asarray(y_pred).ravel()
    if y_true.size == 0:
        return {"accuracy": None, "balanced_accuracy": None, "log_loss": None, "roc_auc": None, "confusion": []}
    proba = np.clip(np.asarray(proba, dtype=np.float64), 1e-15, 1.0)
    proba = proba / proba.sum(axis=1, keepdims=True)
    auc = None
    if len(np.unique(y_true)) > 1:
        try:
            auc = (roc_auc_score(y_true == classes[1], proba[:, 1]) if len(classes) == 2 else
                   roc_auc_score(y_true, proba, multi_class="ovr", average="macro", labels=classes))
        except ValueError:  # a class among the labels that no test row holds (one-vs-rest is then undefined)
            auc = None
    return {"accuracy": float(np.mean(y_true == y_pred)),
            "balanced_accuracy": float(balanced_accuracy_score(y_true, y_pred)),
            "log_loss": float(log_loss(y_true, proba, labels=classes)), "roc_auc": _float_or_none(auc),
            "confusion": confusion_matrix(y_true, y_pred, labels=classes).tolist()}


def _float_rows(values: np.ndarray) -> list[list[float]]:
    return [[float(v) for v in row] for row in np.asarray(values, dtype=np.float64)]


#: The baselines' models in table order: the run's GET fit with the other kind of splits (the worker adds one of
#: the two, ``runs.training.fit_all_baselines``; older runs have neither), then CART and the forest.
BASELINE_MODELS = ("get_sparse", "get_dense", "cart", "random_forest", "hist_gradient_boosting")
#: A classification comparison's test scores, in the order tables show them (regression's: r2, rmse).
CLASS_METRICS = ("accuracy", "balanced_accuracy", "log_loss", "roc_auc")


def comparison_rows(baselines: dict, tree_entry: dict | None = None) -> list[dict]:
    """Table rows (GET first when given, then the stored models of ``BASELINE_MODELS``) without the prediction
    lists. ``features_per_split``: the most features any split uses (CART and forest splits use one; entries stored
    before the column existed get that 1)."""
    models = baselines.get("models", {})
    entries = ([tree_entry] if tree_entry else []) + [
        {"features_per_split": 1, **models[k]} if k in ("cart", "random_forest", "hist_gradient_boosting")
        else models[k]
        for k in BASELINE_MODELS if k in models]
    keys = ("name", "r2", "rmse", *CLASS_METRICS, "n_parameters", "features_per_split", "parameter_bytes",
            "size_bytes", "predict_ms_per_10k", "fit_seconds")
    return [{k: e.get(k) for k in keys} for e in entries]


def baseline_predictions(baselines: dict) -> dict[str, list]:
    """Each stored model's test predictions by its display name, in ``BASELINE_MODELS`` order."""
    models = baselines.get("models", {})
    return {models[k]["name"]: models[k]["test_predictions"] for k in BASELINE_MODELS if k in models}


def node_forest_comparison(tree: ObliqueTree, node: int, X: Any, y: Any, forest_predictions: Any) -> dict:
    """The forest's and the tree's error on the rows of ``X`` that reach ``node`` (hard routing).

    ``forest_predictions`` are the forest's predictions of the same rows (the stored test predictions, or the
    out-of-bag predictions for training rows; ``None``/NaN entries are skipped for both models so they are compared
    on identical rows). Returns ``{"n", "tree_rmse", "forest_rmse", "tree_mae", "forest_mae"}``, errors ``None``
    when no usable row reaches the node.
    """
    X, y = _as_xy(X, y, "node", tree)
    rf = np.array([math.nan if v is None else v for v in np.ravel(np.asarray(forest_predictions, dtype=object))],
                  dtype=np.float64)
    if rf.shape[0] != y.shape[0]:
        raise ValueError(f"forest_predictions has {rf.shape[0]} entries but there are {y.shape[0]} rows.")
    mask = np.zeros(y.shape[0], dtype=bool)
    if len(y):
        mask = np.any(tree.decision_path(X) == node, axis=1) & np.isfinite(rf)
    out: dict[str, Any] = {"n": int(mask.sum()), "tree_rmse": None, "forest_rmse": None, "tree_mae": None,
                           "forest_mae": None}
    if mask.any():
        tree_err = tree.predict(X[mask]) - y[mask]
        rf_err = rf[mask] - y[mask]
        out.update(tree_rmse=float(np.sqrt(np.mean(tree_err ** 2))), forest_rmse=float(np.sqrt(np.mean(rf_err ** 2))),
                   tree_mae=float(np.mean(np.abs(tree_err))), forest_mae=float(np.mean(np.abs(rf_err))))
    return out


def count_boosting_parameters(model: Any) -> int:
    """A fitted HistGradientBoosting model's parameters, counted as CART's: 2 per split node and 1 per leaf of every
    tree it grew (one per iteration, and per class beyond two)."""
    return sum(2 * int((~leaf).sum()) + int(leaf.sum()) for trees in model._predictors for tree in trees
               for leaf in [tree.nodes["is_leaf"].astype(bool)])


def count_tree_parameters(model: Any) -> int:
    """2 per branch node (feature + threshold) and 1 per leaf of a fitted sklearn decision tree."""
    left = model.tree_.children_left
    n_leaves = int(np.sum(left == -1))
    return 2 * (len(left) - n_leaves) + n_leaves


def timing_rows(X: np.ndarray, random_state: int | None, n: int = TIMING_ROWS) -> np.ndarray:
    """``n`` rows drawn with replacement from ``X`` (C-contiguous), for latency measurements."""
    if len(X) == 0:
        return X
    rng = np.random.default_rng(random_state)
    return np.ascontiguousarray(X[rng.integers(0, len(X), size=n)])


def predict_ms(predict: Callable[[np.ndarray], Any], X: np.ndarray, n_repeats: int = 5) -> float:
    """Median wall time in milliseconds of ``predict(X)`` over ``n_repeats`` runs, after one warm-up call."""
    predict(X[: min(len(X), 100)])
    times = []
    for _ in range(max(1, n_repeats)):
        start = time.perf_counter()
        predict(X)
        times.append(time.perf_counter() - start)
    return 1000.0 * float(np.median(times))


def _timed(fit: Callable[[], Any]) -> tuple[Any, float]:
    """What ``fit()`` returns (the fitted model) and the seconds it took."""
    start = time.perf_counter()
    fitted = fit()
    return fitted, time.perf_counter() - start


def _evaluate(name: str, model: Any, fit_seconds: float, X_test: np.ndarray, y_test: np.ndarray,
              timing_X: np.ndarray, n_repeats: int) -> dict:
    """A regression ENTRY of a fitted scikit-learn model (``fit_baselines``), its parameters left to the caller."""
    pred = model.predict(X_test) if len(X_test) else np.empty(0)
    return {
        "name": name,
        **dict(zip(("r2", "rmse"), scores(y_test, pred))),
        "size_bytes": len(pickle.dumps(model, protocol=5)),
        "predict_ms_per_10k": predict_ms(model.predict, timing_X, n_repeats) if len(timing_X) else None,
        "fit_seconds": fit_seconds,
        "test_predictions": _floats(pred),
    }


def _as_xy(X: Any, y: Any, what: str, tree: ObliqueTree | None = None) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64) if tree is None else raw_rows(tree, X)
    y = np.asarray(y, dtype=np.float64).ravel()
    if X.ndim != 2:
        raise ValueError(f"X_{what} must be 2-D; got shape {X.shape}.")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X_{what} has {X.shape[0]} rows but y_{what} has {y.shape[0]}.")
    return X, y


def _float_or_none(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _floats(values: Any) -> list[float | None]:
    return [_float_or_none(v) for v in np.asarray(values, dtype=np.float64).ravel().tolist()]
