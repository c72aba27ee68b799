"""scikit-learn estimators: GETRegressor and GETClassifier (one tree of a given depth), GETRegressorCV and
GETClassifierCV (depth chosen on a 2:1 split).

The estimators only validate, configure and delegate: training lives in ``train.train`` (and ``polish``), the
fitted model is an ``ObliqueTree`` in ``tree_``; ``predict`` checks fitted state, validates X and asks the tree.
Their parameters that are settings of ``GETConfig`` take its defaults and its allowed values (``config_constraints``).
A classifier is the same fit on the class indices of ``classes_`` (``train(..., classes=...)``); its class weights
become sample weights.
"""

from __future__ import annotations

import copy
import inspect
import textwrap
import warnings
from dataclasses import fields, replace
from numbers import Integral, Real
from typing import Any, Callable, Iterable, Protocol

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, is_regressor
from sklearn.model_selection import train_test_split
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, check_X_y, validate_data

from get_core.budget import refit_seconds, split_budget
from get_core.engine.checkpoint import SearchCheckpoint, fit_fingerprint
from get_core.config import (ALLOWED, CLASS_LEAVES, DEFAULTS, LIBRARY_MAX_CLASSES, SEARCH_PATIENCE,
                             SPARSITY_TOLERANCE,
                             VALIDATION_FRACTION, Allowed, Choice, Flag, FlagOrAuto, GETConfig, Integer, Number, Seed,
                             Span, split_feature_path)
from get_core.data.columns import SQUEEZED_SHARE, DataError, squeezed_features
from get_core.data.encoding import MAX_ABS, refuse_too_large
from get_core.engine.plan import PlanError, SearchReplay, search_record
from get_core.engine.progress import ProgressCallback
from get_core.engine import classes as class_task
from get_core.engine import logistic
from get_core.engine.train import fresh_seed, logistic_model, train, with_class_leaves
from get_core.metrics import search_r2
from get_core.model.inputs import Inputs, learn, numbers_of
from get_core.model.tree import ObliqueTree, feature_name_problem

_CONFIG_FIELDS = {f.name for f in fields(GETConfig)}
_DEPTH = ALLOWED["depth"]


class _Interval(Interval):
    """scikit-learn's Interval without booleans: a bool is an Integral, but ``depth=True`` is a slip, not depth 1."""

    def is_satisfied_by(self, val) -> bool:
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)


def _sklearn_constraint(allowed: Allowed) -> list:
    """scikit-learn's form of one of GETConfig's rules; the exact rule (finite, no bools) runs when the config is
    built in ``fit``."""
    match allowed:
        case Integer(low, high, optional):
            bounds = _Interval(Integral, low, high, closed="left" if high is None else "both")
            return [bounds, *([None] if optional else [])]
        case Number(low, inclusive, optional):
            return [_Interval(Real, low, None, closed="left" if inclusive else "neither"), *([None] if optional else [])]
        case Choice(options):
            return [StrOptions(set(options))]
        case Flag():
            return ["boolean"]
        case FlagOrAuto():
            return ["boolean", StrOptions({"auto"})]
        case Span():
            return [tuple, list]
        case Seed():
            # a RandomState too: ``_seed`` draws an int from it
            return [None, _Interval(Integral, 0, 2 ** 32 - 1, closed="both"), np.random.RandomState]
    raise TypeError(f"no scikit-learn constraint for {allowed!r}")


def config_constraints(init: Callable) -> dict:
    """``_parameter_constraints`` of the parameters of ``init`` that are GETConfig settings."""
    return {name: _sklearn_constraint(ALLOWED[name]) for name in inspect.signature(init).parameters
            if name in _CONFIG_FIELDS}


#: The meaning of each GETConfig setting, as the estimators' docstrings give it.
_MEANINGS = {f.name: f.metadata["meaning"] for f in fields(GETConfig)}
#: GETRegressorCV's own parameters, and the settings it widens: name -> (numpydoc type, meaning).
#: The parameter all four estimators take for tables as they come.
_INPUTS_PARAMETER = {
    "categorical_features": ("array-like of int, str or bool, 'from_dtype' or None",
                             "Which columns of X hold categories (HistGradientBoosting's meanings): indices, names, "
                             "a boolean mask, None (none), or 'from_dtype': pandas category, object and string "
                             "columns, except a text column whose every value reads as a number, which stays "
                             "numbers. A category column is one feature of a split, with one learned weight per "
                             "category; a category unseen in training adds nothing to a split. Missing values (NaN, "
                             "None, empty text, +-inf) are never dropped: a column missing in training gets a "
                             "learned 'if missing' weight per split, one never missing counts as its training mean "
                             "(``get_core.model.inputs``). A plain table of finite numbers trains as before, and a "
                             "missing value at predict time sends a row left at a split that uses its column."),
}
_CATEGORICAL = ["array-like", StrOptions({"from_dtype"}), None]
_CV_PARAMETERS = {
    **_INPUTS_PARAMETER,
    "depths": ("array-like of int", "The depths to try; the search goes from the shallowest to the deepest."),
    "l1": ("float or array-like of float",
           f"{_MEANINGS['l1']} Several values: each depth is fitted once per value and the pair with the best "
           "validation R2 wins (``best_l1_``); the paper's GET-Linear chose its L1 strength from (0, 1e-5) (its "
           "appendix on over-fitting)."),
    "patience": ("int", "The search stops once this many depths in a row fail to beat the best validation R2 by "
                        "``tol`` (the paper's protocol)."),
    "tol": ("float", "How much a deeper tree's validation R2 must beat the best so far by; ties go to the shallower "
                     "tree."),
    "validation_fraction": ("float", "The share of the training rows held out to score each depth (the paper's "
                                     "2:1 split)."),
    "refit_from_search": ("bool", "Not in the paper: the validated tree is the refit's first start, so the refit "
                                  "never ends worse on all data than the splits the search chose (a fresh multi-start "
                                  "refit sometimes lands in a worse optimum). Measured at the fast budget it raised "
                                  "training R2 but left test R2 where it was on average (docs/BENCHMARKS.md)."),
    "max_split_features": ("int, 'auto' or None",
                           f"{_MEANINGS['max_split_features']} 'auto': the search runs once per k of "
                           "``config.SPLIT_FEATURE_PATH`` (k at or above the feature count is the dense tree) and "
                           "keeps the smallest k within ``sparsity_tolerance`` of the best k's validation R2, then "
                           "refits that k at its depth (``best_max_split_features_``)."),
    "sparsity_tolerance": ("float", "With max_split_features='auto': how much validation R2 a smaller k may give up "
                                    "(the default, half a point of R2, is about the spread of single fits between "
                                    "seeds at the fast budget)."),
    "time_budget": ("float or None",
                    f"{_MEANINGS['time_budget']} Here the seconds are the whole fit's: the search's fits share "
                    "``budget.SEARCH_SHARE`` of it equally, counting every fit it may make (each k, depth and L1); "
                    "the refit, the returned tree, gets the rest plus the shares of the fits the early stop skipped "
                    "(``budget.split_budget``). Each share is fixed in advance, so a checkpointed search resumes "
                    "with the same keys."),
    "replay_plan": ("dict or None",
                    "Not in the paper: the plan a time-budgeted search recorded (``plan_``, also in "
                    "``tree_.meta['search_plan']``: its budget, its seed, and each search fit's and the refit's "
                    "plan, ``engine.plan``). Given it, every fit takes its clock's decisions from the plan, so the "
                    "search scores, chooses and refits as recorded and returns the recorded tree, bit for bit on the "
                    "same machine, device and thread count. The other parameters and the data must be the recording "
                    "search's; ``time_budget`` and ``random_state`` left None take the plan's."),
}


#: The single-tree estimators' own parameter: name -> (numpydoc type, meaning).
_REPLAY_PARAMETER = {
    **_INPUTS_PARAMETER,
    "replay_plan": ("dict or None",
                    "Not in the paper: the plan a time-budgeted fit recorded (``tree_.meta['plan']``: its starts and "
                    "epochs, which starts each rung kept, where it ran out of time, its seed; ``engine.plan``). "
                    "Given it, ``fit`` takes those decisions from the plan instead of the clock and returns the "
                    "recorded tree, bit for bit on the same machine, device and thread count. The other parameters "
                    "and the data must be the recording fit's; ``time_budget`` and ``random_state`` left None take "
                    "the plan's. A plan of other data or settings is refused with a sentence saying which."),
}


def _doc_type(allowed: Allowed) -> str:
    """The numpydoc type of one of GETConfig's rules."""
    match allowed:
        case Integer(optional=optional):
            return "int or None" if optional else "int"
        case Number(optional=optional):
            return "float or None" if optional else "float"
        case Choice(options):
            return "{" + ", ".join(repr(o) for o in options) + "}"
        case Flag():
            return "bool"
        case FlagOrAuto():
            return "bool or 'auto'"
        case Span():
            return "tuple of (float, float)"
        case Seed():
            return "int, RandomState instance or None"
    raise TypeError(f"no numpydoc type for {allowed!r}")


def _default_text(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) and len(repr(value)) > 8 else repr(value)


def parameters_doc(init: Callable, own: dict[str, tuple[str, str]]) -> str:
    """The numpydoc ``Parameters`` section of ``init``'s parameters, in its order: each GETConfig setting with the
    type of its rule and its meaning from GETConfig (the one home of both), ``own`` (name -> (type, meaning)) for
    the others and for settings an estimator widens."""
    lines = ["Parameters", "----------"]
    for name, parameter in list(inspect.signature(init).parameters.items())[1:]:  # [0]: self
        kind, meaning = own.get(name) or (_doc_type(ALLOWED[name]), _MEANINGS[name])
        lines.append(f"{name} : {kind}, default={_default_text(parameter.default)}")
        lines += textwrap.wrap(meaning, 112, initial_indent="    ", subsequent_indent="    ")
    return "\n".join(lines)


def _documented(own: dict[str, tuple[str, str]], attributes: str = "",
                entries: str | None = None) -> Callable[[type], type]:
    """A class decorator: the Parameters section (``parameters_doc``) before the Attributes section of the class's
    docstring, and ``attributes`` (numpydoc entries, indented) after that section's first entry; ``entries``, when
    given, are the section's entries in place of the docstring's own."""
    def document(cls: type) -> type:
        head, marker, tail = cls.__doc__.partition("\n    Attributes\n")
        if entries is not None:
            tail = f"    ----------\n{entries}"
        if attributes:
            first, _, rest = tail.partition("\n    n_features_in_ :")
            tail = f"{first}\n{attributes}    n_features_in_ :{rest}"
        cls.__doc__ = f"{head}\n{textwrap.indent(parameters_doc(cls.__init__, own), '    ')}\n{marker}{tail}"
        return cls

    return document


class _GETEstimator(BaseEstimator):
    """What all four estimators share: parameters that are GETConfig settings become the fit's config, the training
    data are checked the same way, and prediction asks the fitted tree. ``_is_classifier`` selects the targets' form:
    numbers, or labels encoded as indices of ``classes_`` (weighted by ``class_weight``)."""

    _is_classifier = False

    def _config(self, **overrides) -> GETConfig:
        params = {k: v for k, v in self.get_params().items() if k in _CONFIG_FIELDS}
        params["random_state"] = _seed(params["random_state"])
        params.update(overrides)
        return GETConfig(**params)

    def _training_data(self, X, y, sample_weight=None
                       ) -> tuple[np.ndarray, np.ndarray, list[str] | None, np.ndarray | None]:
        """Validated parameters and (X, y, feature names (None for a plain array), sample weights (None: equal)).
        A classifier's y comes back as class indices into ``classes_`` (set here) and its weights include
        ``class_weight``. Beyond scikit-learn's checks, each refusal is a DataError (a ValueError) naming the column:
        no complex numbers (their imaginary part would be dropped), distinct column names that a file can hold
        (exports and model files carry them), no value beyond ±MAX_ABS (the min-max scales and squared errors would
        overflow), and a regressor's target must be numbers (numbers written as text are read as numbers; words point
        to GETClassifier)."""
        self._validate_params()
        _refuse_complex(X, "X")
        _refuse_complex(y, "y")
        if is_regressor(self):
            y = _numeric_target(y, type(self).__name__)
        columns = getattr(X, "columns", None)
        problem = None if columns is None else feature_name_problem([str(c) for c in columns])
        if problem:
            raise DataError(f"X's columns need distinct names that a file can hold, but {problem}: rename it.")
        self.inputs_ = learned_inputs(X, self.categorical_features)
        if self._is_classifier:
            X, y = self._validated(X, y)
            check_classification_targets(y)
            self.classes_, y = np.unique(y, return_inverse=True)
            if len(self.classes_) > LIBRARY_MAX_CLASSES:
                raise DataError(f"y has {len(self.classes_):,} classes; GET fits at most {LIBRARY_MAX_CLASSES:,}: "
                                "group rare classes into one (such as 'other'), or predict a number instead.")
        else:
            X, y = self._validated(X, y)
            refuse_too_large(y, np.arange(len(y)), "y", "Target")
        names = self._engine_names()
        too_large = np.flatnonzero(np.any(np.abs(X) > MAX_ABS, axis=0))
        if too_large.size:
            j = int(too_large[0])
            refuse_too_large(X[:, j], np.arange(len(X)), names[j] if names is not None else f"x{j}", "Feature")
        self._warn_if_squeezed(X, names)
        return X, y, names, self._weights(sample_weight, X, y)

    def _engine_names(self) -> list[str] | None:
        """The engine columns' names: the raw inputs' (a number, its "is missing" column, a category's levels), or
        the table's columns; None for a plain array."""
        if self.inputs_ is not None:
            return self.inputs_.feature_names
        names = getattr(self, "feature_names_in_", None)
        return None if names is None else [str(n) for n in names]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # missing values are learned (``inputs``), never dropped
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        return tags

    def _validated(self, X, y) -> tuple[np.ndarray, np.ndarray]:
        """scikit-learn's checks of (X, y), X as the engine's float64 matrix: the raw columns' count and names
        are recorded (``n_features_in_``, ``feature_names_in_``) and ``inputs_`` encodes them when set."""
        numeric = not self._is_classifier
        if self.inputs_ is None:
            return validate_data(self, X, y, y_numeric=numeric, dtype=np.float64)
        validate_data(self, X, skip_check_array=True)
        return check_X_y(self.inputs_.encode(X), y, y_numeric=numeric, dtype=np.float64)

    def _with_inputs(self, tree: ObliqueTree) -> ObliqueTree:
        """``tree`` (trained on the engine's matrix) taking raw rows: it carries ``inputs_``."""
        if self.inputs_ is not None and tree.inputs is None:
            tree.inputs = self.inputs_
        return tree

    def _weights(self, sample_weight, X: np.ndarray, y: np.ndarray) -> np.ndarray | None:
        """The rows' weights: ``sample_weight`` (scikit-learn's checks; >= 0, not all 0) times a classifier's
        ``class_weight`` (finite numbers >= 0); None when all are equal (the unweighted fit, bit for bit). Weights
        whose sum leaves float64's range (all 1e308, or all 1e-320) are divided by their largest: a fit depends only
        on their ratios."""
        weights = None
        if sample_weight is not None:
            weights = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
            if not weights.max(initial=0.0) > 0:
                raise ValueError("Sample weights must contain at least one non-zero number.")
        class_weight = getattr(self, "class_weight", None)
        if class_weight is not None:
            _refuse_class_weight(class_weight)
            labelled = self.classes_[y]
            per_row = compute_sample_weight(class_weight, labelled)
            weights = per_row if weights is None else weights * per_row
            if not weights.max(initial=0.0) > 0:
                raise ValueError("class_weight and sample_weight leave every row a weight of 0.")
        if weights is not None:
            with np.errstate(over="ignore", divide="ignore"):
                total = weights.sum()
                if not (np.isfinite(total) and np.isfinite(len(weights) / total)):
                    weights = weights / weights.max()
        return weights

    def _train(self, X: np.ndarray, y: np.ndarray, config: GETConfig, on_progress: ProgressCallback | None,
               names: list[str] | None, sample_weight: np.ndarray | None,
               checkpoint: SearchCheckpoint | None = None, warm_start: ObliqueTree | None = None,
               replay_plan: dict | None = None) -> ObliqueTree:
        """One fit of this estimator's kind (a classifier's on ``classes_``), from ``checkpoint`` when stored,
        replaying ``replay_plan`` (one fit's recorded plan) when given."""
        classes = self.classes_.tolist() if self._is_classifier else None  # plain labels: no np.str_('B') in words
        groups = None if self.inputs_ is None else self.inputs_.groups
        return _search_fit(X, y, config, on_progress, names, checkpoint, warm_start, sample_weight, classes,
                           replay_plan, groups, self._class_loss())

    def _class_loss(self) -> str | None:
        """The soft loss per leaf of this estimator's fits (``engine.train.train``'s ``class_loss``); None: the
        leaves' own."""
        return None

    def _warn_if_squeezed(self, X: np.ndarray, names: list[str] | None) -> None:
        """Warn of far outliers in number columns (a 0/1 "is missing" or category column is packed by nature)."""
        squeezed = squeezed_features(X) if self.scaling == "minmax" else []
        if self.inputs_ is not None:
            values = {name for c in self.inputs_.columns if c.kind == "number" for name in c.input_names[:1]}
            squeezed = [j for j in squeezed if names[j] in values]
        if squeezed:
            shown = ", ".join(names[j] if names is not None else f"x{j}" for j in squeezed[:5])
            warnings.warn(f"Far outliers in {len(squeezed)} feature(s) ({shown}{', ...' if len(squeezed) > 5 else ''}):"
                          f" min-max scaling packs 98% of their values into under {SQUEEZED_SHARE:.0%} of [0, 1],"
                          " where GET's splits hardly move. Check for missing-value codes (e.g. 9999), or pass"
                          " scaling='robust'.", UserWarning, stacklevel=4)

    def _checked(self, X) -> Any:
        """X checked against the fit: plain numbers as float64 (NaN and infinities allowed: a split that uses the
        column sends a NaN left, ``routing``), or raw rows for a tree with ``inputs`` (it encodes them)."""
        check_is_fitted(self, "tree_")
        if self.tree_.inputs is None:
            X = validate_data(self, X, reset=False, dtype=np.float64, ensure_all_finite=False)
            _refuse_holes_in_leaf_models(self.tree_, X)
            return X
        validate_data(self, X, reset=False, skip_check_array=True)
        return X

    def predict(self, X) -> np.ndarray:
        """Predicted values, or a classifier's labels (of ``classes_``, the first most probable on a tie)."""
        X = self._checked(X)
        if self._is_classifier:
            return self.classes_[_class_indices(self.tree_, X)]
        return self.tree_.predict(X)

    def apply(self, X) -> np.ndarray:
        """Leaf node id (heap numbering) of each row."""
        X = self._checked(X)
        return self.tree_.apply(X)

    def decision_path(self, X) -> np.ndarray:
        """The node ids (heap numbering) each row passes, root to leaf: shape (n, depth + 1)."""
        X = self._checked(X)
        return self.tree_.decision_path(X)


@_documented(_REPLAY_PARAMETER)
class GETRegressor(RegressorMixin, _GETEstimator):
    """An oblique regression tree trained by gradient-based entire-tree optimization (GET / GET-Linear).

    ``n_starts`` starts (start 0 from CART) each run ``n_alphas`` stages of ``n_epochs`` epochs with an increasing
    scale factor drawn from ``alpha_range``; the best hard-split tree any start reached is returned. The parameters
    are the settings of ``config.GETConfig``, which holds their defaults, allowed values and the meanings below.

    Attributes
    ----------
    tree_ : ObliqueTree
        The fitted tree (``get_core.model.tree``), in the data's original units; ``tree_.meta`` records the
        settings the fit used (with a time budget: the starts and epochs it chose, and in ``meta["plan"]`` every
        decision it took from the clock, for ``replay_plan``), its timings and training R2.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen during ``fit``; only when X has string column names.
    inputs_ : Inputs or None
        The raw columns as the tree reads them (``get_core.model.inputs``: each column's kind, categories and missing
        values), also ``tree_.inputs``; None for a plain table of finite numbers.
    """

    def __init__(self, depth: int = DEFAULTS.depth, leaf: str = DEFAULTS.leaf, n_starts: int = DEFAULTS.n_starts,
                 n_epochs: int = DEFAULTS.n_epochs, alpha_range: tuple[float, float] = DEFAULTS.alpha_range,
                 n_alphas: int = DEFAULTS.n_alphas, learning_rate: float = DEFAULTS.learning_rate,
                 l1: float = DEFAULTS.l1, polish: bool | str = DEFAULTS.polish, random_state=DEFAULTS.random_state,
                 device: str = DEFAULTS.device, linear_leaves: str = DEFAULTS.linear_leaves,
                 clip_leaves: bool = DEFAULTS.clip_leaves, scaling: str = DEFAULTS.scaling,
                 max_split_features: int | None = DEFAULTS.max_split_features,
                 time_budget: float | None = DEFAULTS.time_budget, batch_rows: int | None = DEFAULTS.batch_rows,
                 replay_plan: dict | None = None, categorical_features: Any = "from_dtype"):
        self.depth = depth
        self.leaf = leaf
        self.linear_leaves = linear_leaves
        self.clip_leaves = clip_leaves
        self.n_starts = n_starts
        self.n_epochs = n_epochs
        self.alpha_range = alpha_range
        self.n_alphas = n_alphas
        self.learning_rate = learning_rate
        self.l1 = l1
        self.polish = polish
        self.random_state = random_state
        self.device = device
        self.scaling = scaling
        self.max_split_features = max_split_features
        self.time_budget = time_budget
        self.batch_rows = batch_rows
        self.replay_plan = replay_plan
        self.categorical_features = categorical_features

    _parameter_constraints: dict = {**config_constraints(__init__), "replay_plan": [dict, None],
                                    "categorical_features": _CATEGORICAL}

    def fit(self, X, y, sample_weight=None, on_progress: ProgressCallback | None = None) -> "GETRegressor":
        """Train on X (n, p) and y (n,), rows weighted by ``sample_weight`` (n,) (None: equally; an integer weight
        counts like that many copies of the row); ``on_progress`` receives ``progress.Progress`` and may return
        True to stop."""
        X, y, names, weights = self._training_data(X, y, sample_weight)
        self.tree_ = self._with_inputs(self._train(X, y, self._config(), on_progress, names, weights,
                                                   replay_plan=self.replay_plan))
        return self


class SearchObserver(Protocol):
    """What ``GETRegressorCV.fit`` tells as its search goes (the app's worker shows it live and keeps each tree)."""

    def fit_started(self, config: GETConfig, refit: bool) -> None:
        """A fit begins: one of the search's (``refit=False``, on the train part) or the final refit on all data."""

    def scored(self, result: dict, tree: ObliqueTree) -> None:
        """A search fit was scored: ``result`` is its ``cv_results_`` entry plus its ``n_parameters`` and
        ``widest_split``; ``tree`` was fitted on the train part."""


class _SearchCV(_GETEstimator):
    """The depth search that GETRegressorCV and GETClassifierCV share (see GETRegressorCV): ``_score_key`` names
    the validation score (R2, or accuracy) in ``cv_results_`` and ``path_results_``, ``_split`` makes the 2:1 split
    (a classifier's stratified)."""

    _score_key, _train_key = "validation_r2", "train_r2"

    def _split(self, X: np.ndarray, y: np.ndarray, weights: np.ndarray | None, seed: int | None) -> list:
        """(X_tr, X_val, y_tr, y_val, w_tr, w_val) of a random 2:1 split (``validation_fraction``); w None: equal."""
        parts = train_test_split(X, y, *([] if weights is None else [weights]), test_size=self.validation_fraction,
                                 random_state=seed, stratify=self._strata(y))
        return parts if weights is not None else parts + [None, None]

    def _strata(self, y: np.ndarray) -> np.ndarray | None:
        return None

    def _validation_score(self, tree: ObliqueTree, X: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> float:
        return search_r2(y, tree.predict(X), w)

    def fit(self, X, y, sample_weight=None, on_progress: ProgressCallback | None = None,
            checkpoint: SearchCheckpoint | None = None, observer: SearchObserver | None = None) -> "_SearchCV":
        """As ``GETRegressor.fit`` / ``GETClassifier.fit``; with a ``checkpoint``, each depth's fit and the refit are
        stored there and a later fit of the same data and parameters takes them from there instead of fitting again
        (same result, see ``checkpoint``); an ``observer`` hears of each fit as it starts and each search fit as it
        is scored. Sample weights weight the fits and the validation score."""
        X, y, names, weights = self._training_data(X, y, sample_weight)
        given, lowest = list(self.depths), self._lowest_depth()
        if not given or not all(d == 0 and lowest == 0 or _DEPTH.accepts(d) for d in given):
            raise ValueError(f"depths must be integers from {lowest} to {_DEPTH.high}{self._depth_note()}; got "
                             f"{given}.")
        depths = sorted(set(int(d) for d in given))
        l1s = _l1_values(self.l1)
        settings = self._search_settings(depths, l1s)
        replay = None if self.replay_plan is None else SearchReplay(self.replay_plan, settings)
        budget, seed = self._budget_and_seed(replay)
        split = self._split(X, y, weights, seed)
        self.cv_results_, self.path_results_, self.search_trees_ = [], [], []
        chosen = {}  # k -> (depth, l1, validated tree) of its depth search
        n_search_fits = (len(split_feature_path(self.max_split_features, self.n_features_in_))
                         * len([d for d in depths if d]) * len(l1s))  # depth 0 (one logistic model) takes no share
        fit_seconds, refit_base = split_budget(budget, n_search_fits)
        for k in split_feature_path(self.max_split_features, self.n_features_in_):
            search, validated, l1, cancelled = self._search_depth(split, depths, l1s, k, on_progress, names,
                                                                  checkpoint, fit_seconds, seed, observer, replay)
            chosen[k] = (search.best_depth, l1, validated)
            self.path_results_.append({"max_split_features": k, "depth": search.best_depth, "l1": l1,
                                       self._score_key: search.best_score,
                                       "n_parameters": validated.n_nonzero_parameters,
                                       "widest_split": int(validated.split_terms.max())})
            if cancelled:
                break
        k = choose_split_features(self.path_results_, self.sparsity_tolerance, self._score_key)
        (self.best_depth_, self.best_l1_, validated), self.best_max_split_features_ = chosen[k], k
        self.validated_tree_ = validated
        setattr(self, f"best_{self._score_key}_",
                next(r[self._score_key] for r in self.path_results_ if r["max_split_features"] == k))
        warm_start = validated if self.refit_from_search else None
        refit_budget = (None if budget is None else
                        refit_seconds(fit_seconds, refit_base, n_search_fits, len(self._trained_fits())))
        config = self._config(depth=max(self.best_depth_, 1), random_state=seed, l1=self.best_l1_,
                              max_split_features=k, time_budget=refit_budget, **self._leaf_settings(validated))
        if observer is not None:
            observer.fit_started(config, refit=True)
        self.tree_ = self._with_inputs(self._refit(X, y, config, on_progress, names, weights, checkpoint,
                                                   warm_start, None if replay is None else replay.refit()))
        self.tree_ = self._calibrated(self.tree_, validated, split)
        self.plan_ = self._search_plan(budget, seed, settings)
        if self.plan_ is not None:
            self.tree_.meta["search_plan"] = self.plan_  # the model file keeps it
        return self

    def _tiebreak(self, tree: ObliqueTree, X: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> float:
        """What decides between a depth's fits of equal validation score, higher better (none here: the first)."""
        return 0.0

    def _calibrated(self, tree: ObliqueTree, validated: ObliqueTree, split: list) -> ObliqueTree:
        """The refit ``tree`` as it is returned, given the chosen search fit ``validated`` and the search's
        ``split`` (a classifier's tempered by the validation rows, see GETClassifierCV; a regressor's as it is)."""
        return tree

    def _lowest_depth(self) -> int:
        """The shallowest depth the search may try (a classifier with logistic leaves: 0, one logistic model)."""
        return _DEPTH.low

    def _depth_note(self) -> str:
        return ""

    def _leaf_settings(self, validated: ObliqueTree) -> dict:
        """Config settings of the refit that follow from the validated tree (a classifier's leaf type)."""
        return {}

    def _result_fields(self, tree: ObliqueTree) -> dict:
        """What a ``cv_results_`` entry says of its tree beyond depth, L1 and k (a classifier's leaf type)."""
        return {}

    def _search_fits(self, X: np.ndarray, y: np.ndarray, w: np.ndarray | None, depth: int, config: GETConfig,
                     on_progress: ProgressCallback | None, names: list[str] | None,
                     checkpoint: SearchCheckpoint | None, replay: SearchReplay | None) -> list[ObliqueTree]:
        """The trees one search fit gives to score: one, trained with ``config``; a classifier's may add the same
        splits with logistic leaves."""
        return [self._train(X, y, config, on_progress, names, w, checkpoint,
                            replay_plan=None if replay is None else replay.next_fit())]

    def _refit(self, X: np.ndarray, y: np.ndarray, config: GETConfig, on_progress: ProgressCallback | None,
               names: list[str] | None, weights: np.ndarray | None, checkpoint: SearchCheckpoint | None,
               warm_start: ObliqueTree | None, replay_plan: dict | None) -> ObliqueTree:
        """The chosen tree fitted on all rows."""
        return self._train(X, y, config, on_progress, names, weights, checkpoint, warm_start, replay_plan)

    def _trained_fits(self) -> list[ObliqueTree]:
        """The search's trees that trained splits (each with its own plan): not a copy with other leaves, not one
        logistic model."""
        return [t for t in self.search_trees_ if not (t.meta.get("leaf_variant") or t.meta.get("single_model"))]

    def _budget_and_seed(self, replay: SearchReplay | None) -> tuple[float | None, int | None]:
        """The search's budget and seed: the parameters', or a replayed plan's where they are None (a plan recorded
        with others is refused); a budgeted search without a seed draws one (recorded in ``plan_``)."""
        budget, seed = self.time_budget, _seed(self.random_state)
        if replay is not None:
            for name, given, recorded in (("time_budget", budget, replay.budget), ("random_state", seed, replay.seed)):
                if given is not None and given != recorded:
                    raise PlanError(f"The plan was recorded with {name}={recorded!r}; this search has {name}="
                                    f"{given!r}. Leave {name}=None to take the plan's, or give the same value.")
            budget, seed = replay.budget, replay.seed
        if budget is not None and seed is None:
            seed = fresh_seed()
        return budget, seed

    def _search_settings(self, depths: list[int], l1s: list[float]) -> dict:
        """The search's own settings that decide which fits it makes (each fit's plan checks the fit's settings)."""
        return {"depths": depths, "l1": l1s, "patience": self.patience, "tol": self.tol,
                "validation_fraction": self.validation_fraction, "max_split_features": self.max_split_features,
                "sparsity_tolerance": self.sparsity_tolerance, "refit_from_search": self.refit_from_search}

    def _search_plan(self, budget: float | None, seed: int | None, settings: dict) -> dict | None:
        """The record of a budgeted search's plans (``engine.plan.search_record``), for ``replay_plan``; None
        without a budget, or when a fit recorded none (a cancelled one)."""
        plans = [tree.meta.get("plan") for tree in self._trained_fits()]
        refit = {} if self.tree_.meta.get("single_model") else self.tree_.meta.get("plan")  # one model: no clock
        if budget is None or refit is None or any(p is None for p in plans):
            return None
        return search_record(budget, seed, settings, plans, refit)

    def _search_depth(self, split: list, depths: list[int], l1s: list[float], k: int | None,
                      on_progress: ProgressCallback | None, names: list[str] | None,
                      checkpoint: SearchCheckpoint | None, seconds: float | None, seed: int | None,
                      observer: SearchObserver | None = None, replay: SearchReplay | None = None
                      ) -> tuple["DepthSearch", ObliqueTree, float, bool]:
        """The depth search (and L1 choice) for splits of at most ``k`` features on the train/validation ``split``,
        each fit's time budget ``seconds`` and seed ``seed``, each fit's plan from ``replay`` when given; appends to
        ``cv_results_``. Returns the search, its validated tree, that tree's L1, and whether it was cancelled."""
        X_tr, X_val, y_tr, y_val, w_tr, w_val = split
        search = DepthSearch(depths[0], self.patience, self.tol)
        validated, best_l1, cancelled = None, l1s[0], False
        tried = []  # (depth, validation score, tree, l1) of each depth's best fit, shallowest first
        for depth in depths:
            scored = []  # (validation R2, l1, tree) of this depth, one per L1 value
            for l1 in l1s:
                config = self._config(depth=max(depth, 1), random_state=seed, l1=l1, max_split_features=k,
                                      time_budget=seconds)
                if observer is not None:
                    observer.fit_started(config, refit=False)
                for tree in self._search_fits(X_tr, y_tr, w_tr, depth, config, on_progress, names, checkpoint,
                                              replay):
                    r2 = self._validation_score(tree, X_val, y_val, w_val)
                    self.cv_results_.append({"depth": depth, "l1": l1, "max_split_features": k,
                                             **self._result_fields(tree), self._score_key: r2,
                                             self._train_key: tree.meta[self._train_key]})
                    scored.append((r2, self._tiebreak(tree, X_val, y_val, w_val), l1, tree))
                    self.search_trees_.append(self._with_inputs(tree))  # scored: now it takes raw rows
                    if observer is not None:
                        observer.scored({**self.cv_results_[-1], "n_parameters": tree.n_nonzero_parameters,
                                         "widest_split": int(tree.split_terms.max())}, tree)
                    cancelled = bool(tree.meta.get("cancelled"))
                if cancelled:
                    break
            r2, _, l1, tree = max(scored, key=lambda s: s[:2])  # ties: the tiebreak, then the first (smallest) L1
            stop = search.add(depth, r2)
            tried.append((depth, r2, tree, l1))
            if search.best_depth == depth:
                validated, best_l1 = tree, l1
            if cancelled or stop:
                break
        margin = self._selection_margin(search.best_score, y_val, w_val)
        if margin > 0:
            search.best_depth, search.best_score, validated, best_l1 = next(
                t for t in tried if t[1] >= search.best_score - margin)
        return search, validated, best_l1, cancelled

    def _selection_margin(self, best: float, y_val: np.ndarray, w_val: np.ndarray | None) -> float:
        """How far under the best validation score the shallowest depth may be and still be chosen (none here)."""
        return 0.0


@_documented(_CV_PARAMETERS)
class GETRegressorCV(RegressorMixin, _SearchCV):
    """GETRegressor whose depth is chosen as the paper does (its section 5, Appendix F.1).

    The training data are split into train and validation parts (``validation_fraction``); trees of increasing
    depth from ``depths`` are fitted on the train part and scored (R2) on the validation part; the search stops once
    ``patience`` consecutive depths fail to beat the best validation R2 by ``tol`` (deeper trees stopped helping);
    the best depth is refit on all data. ``l1`` may be several values and ``max_split_features`` may be ``"auto"``:
    the search then also chooses them. The other parameters are GETRegressor's.

    Attributes
    ----------
    tree_ : ObliqueTree
        The refit on all training data of the chosen depth, L1 and features per split.
    best_depth_ : int
        The chosen depth.
    best_l1_ : float
        The chosen L1 penalty (``l1`` itself when it is one value).
    best_max_split_features_ : int or None
        The chosen features per split (None: dense splits).
    best_validation_r2_ : float
        The validation R2 of the chosen depth, L1 and features per split.
    validated_tree_ : ObliqueTree
        The search's tree of that choice, fitted on the train part.
    cv_results_ : list of dict
        One entry per search fit, in order: its ``depth``, ``l1``, ``max_split_features``, ``validation_r2`` and
        ``train_r2``.
    search_trees_ : list of ObliqueTree
        The tree of each entry of ``cv_results_`` (same order; fitted on the train part).
    plan_ : dict or None
        With a time budget: the search's recorded plan (its budget and seed, each fit's ``meta['plan']`` in order,
        then the refit's), for ``replay_plan``; None without one, or when a fit was cancelled.
    path_results_ : list of dict
        Per k of features per split tried: its chosen ``depth`` and ``l1``, ``validation_r2``, the parameters a
        reader has to check (``n_parameters``, ``ObliqueTree.n_nonzero_parameters``) and its ``widest_split``, so a
        person can pick another point of the path; for a fixed k, that k's entry.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen during ``fit``; only when X has string column names.
    inputs_ : Inputs or None
        The raw columns as the tree reads them (``get_core.model.inputs``: each column's kind, categories and missing
        values), also ``tree_.inputs``; None for a plain table of finite numbers.
    """

    def __init__(self, depths: Iterable[int] = tuple(range(_DEPTH.low, _DEPTH.high + 1)),
                 leaf: str = DEFAULTS.leaf, n_starts: int = DEFAULTS.n_starts, n_epochs: int = DEFAULTS.n_epochs,
                 alpha_range: tuple[float, float] = DEFAULTS.alpha_range, n_alphas: int = DEFAULTS.n_alphas,
                 learning_rate: float = DEFAULTS.learning_rate, l1: float = DEFAULTS.l1,
                 polish: bool | str = DEFAULTS.polish,
                 random_state=DEFAULTS.random_state, device: str = DEFAULTS.device, patience: int = SEARCH_PATIENCE,
                 tol: float = 1e-4, validation_fraction: float = VALIDATION_FRACTION, linear_leaves: str = DEFAULTS.linear_leaves,
                 clip_leaves: bool = DEFAULTS.clip_leaves, refit_from_search: bool = False,
                 scaling: str = DEFAULTS.scaling, max_split_features: int | str | None = DEFAULTS.max_split_features,
                 sparsity_tolerance: float = SPARSITY_TOLERANCE, time_budget: float | None = DEFAULTS.time_budget,
                 batch_rows: int | None = DEFAULTS.batch_rows, replay_plan: dict | None = None,
                 categorical_features: Any = "from_dtype"):
        self.depths = depths
        self.leaf = leaf
        self.linear_leaves = linear_leaves
        self.clip_leaves = clip_leaves
        self.n_starts = n_starts
        self.n_epochs = n_epochs
        self.alpha_range = alpha_range
        self.n_alphas = n_alphas
        self.learning_rate = learning_rate
        self.l1 = l1
        self.polish = polish
        self.random_state = random_state
        self.device = device
        self.patience = patience
        self.tol = tol
        self.validation_fraction = validation_fraction
        self.refit_from_search = refit_from_search
        self.scaling = scaling
        self.max_split_features = max_split_features
        self.sparsity_tolerance = sparsity_tolerance
        self.time_budget = time_budget
        self.batch_rows = batch_rows
        self.replay_plan = replay_plan
        self.categorical_features = categorical_features

    _parameter_constraints: dict = {
        **config_constraints(__init__),
        "replay_plan": [dict, None], "categorical_features": _CATEGORICAL,
        "l1": [_Interval(Real, 0, None, closed="left"), "array-like"],
        "depths": ["array-like", range],
        "patience": [_Interval(Integral, 1, None, closed="left")],
        "tol": [_Interval(Real, 0, None, closed="left")],
        "validation_fraction": [_Interval(Real, 0, 1, closed="neither")],
        "refit_from_search": ["boolean"],
        "max_split_features": [*config_constraints(__init__)["max_split_features"], StrOptions({"auto"})],
        "sparsity_tolerance": [_Interval(Real, 0, None, closed="left")],
    }

_CLASS_WEIGHT = [None, StrOptions({"balanced"}), dict]
#: The classifiers' own parameters: name -> (numpydoc type, meaning).
_CLASS_PARAMETERS = {
    "leaf": ("{'constant', 'logistic'}", _MEANINGS["class_leaf"].removeprefix("Classification only: ")),
    "class_weight": ("dict, 'balanced' or None",
                     "How much each class counts: None, every row once; 'balanced', each class as much as any other "
                     "(n / (C n_c) per row); a dict, label -> weight. It multiplies ``fit``'s ``sample_weight``."),
}
#: GETClassifierCV's: the search's parameters scored by validation accuracy where the regressor's use R2.
_CV_CLASS_PARAMETERS = {
    **{name: (kind, meaning.replace("validation R2", "validation accuracy"))
       for name, (kind, meaning) in _CV_PARAMETERS.items()},
    "sparsity_tolerance": ("float", "With max_split_features='auto': how much validation accuracy a smaller k may "
                                    "give up (the default: half a point)."),
    **_CLASS_PARAMETERS,
    "leaf": ("{'constant', 'logistic', 'auto'}",
             _MEANINGS["class_leaf"].removeprefix("Classification only: ") + " 'auto': the search scores every "
             "depth's tree with both and keeps the better (``best_leaf_``). With 'logistic' or 'auto', depth 0 (one "
             "logistic model, no split) may be among ``depths``."),
    "depth_rule": ("{'best', 'one_se'}", "How the search picks the depth from its validation accuracies: 'best', "
                                         "the best one (ties: the shallowest); 'one_se', the shallowest depth "
                                         "within one standard error of the best one, sqrt(a (1 - a) / n) for "
                                         "accuracy a on n validation rows (weighted: n = (sum w)^2 / sum w^2), so "
                                         "that a few validation rows' luck on a small table does not buy depth."),
    "calibrate": ("bool", "Temper the returned tree's probabilities by one temperature T > 0 (``temperature_``), the "
                          "one of least log loss on the search's validation rows for the chosen search fit: a "
                          "logistic leaf's logits divided by T, a class-share leaf's shares raised to 1/T and "
                          "renormalised. The most probable class of every row stays the same (ties aside), so "
                          "accuracy does not change; the model's form does not either. False: T = 1."),
}


def _accuracy_attributes(regressor_doc: str) -> str:
    """GETRegressorCV's Attributes entries with validation accuracy where it has validation R2: GETClassifierCV's."""
    entries = regressor_doc.partition("\n    Attributes\n    ----------\n")[2]
    for r2, accuracy in (("validation_r2", "validation_accuracy"), ("train_r2", "train_accuracy"),
                         ("validation R2", "validation accuracy")):
        entries = entries.replace(r2, accuracy)
    return entries


#: What both classifiers' ``fit`` sets beside the tree, in numpydoc form.
_CLASS_ATTRIBUTES = """    classes_ : ndarray of shape (n_classes_,)
        The class labels, sorted; ``predict`` returns them and ``predict_proba``'s columns follow their order.
    n_classes_ : int
        The number of classes.
"""


class _ClassifierOutputs:
    """What both classifiers add to prediction: class probabilities, ``n_classes_``, and the classifier tags."""

    _is_classifier = True

    def _config(self, **overrides) -> GETConfig:
        """The fit's config: the classifier's ``leaf`` is the config's ``class_leaf`` (the config's ``leaf`` is a
        regression tree's)."""
        overrides.setdefault("class_leaf", "constant" if self.leaf == "auto" else self.leaf)
        return super()._config(**{**overrides, "leaf": "constant"})

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities (n, n_classes_), columns in ``classes_`` order: the smoothed class shares of each
        row's leaf (``engine.classes.SMOOTHING``), or its leaf's logistic model at the row."""
        X = self._checked(X)
        return self.tree_.predict_proba(X)

    @property
    def n_classes_(self) -> int:
        check_is_fitted(self, "classes_")
        return len(self.classes_)


@_documented({**_CLASS_PARAMETERS, **_REPLAY_PARAMETER}, _CLASS_ATTRIBUTES)
class GETClassifier(_ClassifierOutputs, ClassifierMixin, _GETEstimator):
    """An oblique classification tree trained by gradient-based entire-tree optimization (GET).

    The regressor's method on one-hot class targets: each leaf holds class shares, the soft tree's loss per leaf is
    the Brier score (``engine.classes``: its hard-leaf optimum is the class frequencies and its value there CART's
    Gini impurity), leaves are recomputed from hard splits, start 0 is a classification CART of the same depth and
    the returned tree is never worse than it in training Gini. ``predict`` gives the most probable class of the
    row's leaf, ``predict_proba`` its smoothed class shares. Labels may be text, integers, floats or booleans, any
    number of classes; ``class_weight`` weighs them. The other parameters are GETRegressor's (``config.GETConfig``).
    With ``leaf="logistic"`` each leaf is a logistic model instead, trained with the splits under the soft-routed
    log loss and then refit on its rows (``engine.logistic``); the best start is then the one of least hard log loss.

    Attributes
    ----------
    tree_ : ObliqueTree
        The fitted tree (``get_core.model.tree``) with class-share leaves, in the data's original units;
        ``tree_.meta`` records the settings the fit used, its timings and training accuracy.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen during ``fit``; only when X has string column names.
    inputs_ : Inputs or None
        The raw columns as the tree reads them (``get_core.model.inputs``: each column's kind, categories and missing
        values), also ``tree_.inputs``; None for a plain table of finite numbers.
    """

    def __init__(self, depth: int = DEFAULTS.depth, leaf: str = DEFAULTS.class_leaf, n_starts: int = DEFAULTS.n_starts,
                 n_epochs: int = DEFAULTS.n_epochs, alpha_range: tuple[float, float] = DEFAULTS.alpha_range,
                 n_alphas: int = DEFAULTS.n_alphas, learning_rate: float = DEFAULTS.learning_rate,
                 l1: float = DEFAULTS.l1, polish: bool | str = DEFAULTS.polish, random_state=DEFAULTS.random_state,
                 device: str = DEFAULTS.device, scaling: str = DEFAULTS.scaling,
                 max_split_features: int | None = DEFAULTS.max_split_features,
                 time_budget: float | None = DEFAULTS.time_budget, batch_rows: int | None = DEFAULTS.batch_rows,
                 class_weight: str | dict | None = None, replay_plan: dict | None = None,
                 categorical_features: Any = "from_dtype"):
        self.depth = depth
        self.leaf = leaf
        self.n_starts = n_starts
        self.n_epochs = n_epochs
        self.alpha_range = alpha_range
        self.n_alphas = n_alphas
        self.learning_rate = learning_rate
        self.l1 = l1
        self.polish = polish
        self.random_state = random_state
        self.device = device
        self.scaling = scaling
        self.max_split_features = max_split_features
        self.time_budget = time_budget
        self.batch_rows = batch_rows
        self.class_weight = class_weight
        self.replay_plan = replay_plan
        self.categorical_features = categorical_features

    _parameter_constraints: dict = {**config_constraints(__init__), "class_weight": _CLASS_WEIGHT,
                                    "replay_plan": [dict, None], "categorical_features": _CATEGORICAL,
                                    "leaf": [StrOptions(set(CLASS_LEAVES))]}

    def fit(self, X, y, sample_weight=None, on_progress: ProgressCallback | None = None) -> "GETClassifier":
        """Train on X (n, p) and labels y (n,), rows weighted by ``sample_weight`` times ``class_weight``;
        ``on_progress`` as in GETRegressor.fit."""
        X, y, names, weights = self._training_data(X, y, sample_weight)
        self.tree_ = self._with_inputs(self._train(X, y, self._config(), on_progress, names, weights,
                                                   replay_plan=self.replay_plan))
        return self


@_documented(_CV_CLASS_PARAMETERS, _CLASS_ATTRIBUTES + """    best_leaf_ : str
        The chosen leaf type, 'constant' or 'logistic' (``leaf`` itself unless it is 'auto').
    temperature_ : float
        The temperature the returned tree's probabilities were tempered by (``calibrate``; 1.0 without), also
        ``tree_.meta['temperature']``.
""", _accuracy_attributes(GETRegressorCV.__doc__))
class GETClassifierCV(_ClassifierOutputs, ClassifierMixin, _SearchCV):
    """GETClassifier whose depth is chosen as GETRegressorCV chooses it, by validation accuracy on a stratified 2:1
    split (plain when a class has a single row), then refit on all rows. ``cv_results_`` and ``path_results_`` hold
    ``validation_accuracy`` (and ``train_accuracy``) where the regressor's hold R2; ``best_validation_accuracy_``.
    ``max_split_features="auto"`` keeps the fewest features per split within ``sparsity_tolerance`` (accuracy, default
    half a point) of the best. The other parameters are GETRegressorCV's and GETClassifier's.

    Attributes
    ----------
    GETRegressorCV's, validation accuracy in place of validation R2 (``_accuracy_attributes``).
    """

    _score_key, _train_key = "validation_accuracy", "train_accuracy"

    def __init__(self, depths: Iterable[int] = tuple(range(_DEPTH.low, _DEPTH.high + 1)),
                 leaf: str = DEFAULTS.class_leaf, n_starts: int = DEFAULTS.n_starts, n_epochs: int = DEFAULTS.n_epochs,
                 alpha_range: tuple[float, float] = DEFAULTS.alpha_range, n_alphas: int = DEFAULTS.n_alphas,
                 learning_rate: float = DEFAULTS.learning_rate, l1: float = DEFAULTS.l1,
                 polish: bool | str = DEFAULTS.polish, random_state=DEFAULTS.random_state,
                 device: str = DEFAULTS.device, patience: int = SEARCH_PATIENCE, tol: float = 1e-4,
                 validation_fraction: float = VALIDATION_FRACTION, refit_from_search: bool = False,
                 scaling: str = DEFAULTS.scaling, max_split_features: int | str | None = DEFAULTS.max_split_features,
                 sparsity_tolerance: float = SPARSITY_TOLERANCE, time_budget: float | None = DEFAULTS.time_budget,
                 batch_rows: int | None = DEFAULTS.batch_rows, class_weight: str | dict | None = None,
                 replay_plan: dict | None = None, categorical_features: Any = "from_dtype", depth_rule: str = "best",
                 calibrate: bool = True):
        self.depths = depths
        self.leaf = leaf
        self.depth_rule = depth_rule
        self.calibrate = calibrate
        self.n_starts = n_starts
        self.n_epochs = n_epochs
        self.alpha_range = alpha_range
        self.n_alphas = n_alphas
        self.learning_rate = learning_rate
        self.l1 = l1
        self.polish = polish
        self.random_state = random_state
        self.device = device
        self.patience = patience
        self.tol = tol
        self.validation_fraction = validation_fraction
        self.refit_from_search = refit_from_search
        self.scaling = scaling
        self.max_split_features = max_split_features
        self.sparsity_tolerance = sparsity_tolerance
        self.time_budget = time_budget
        self.batch_rows = batch_rows
        self.class_weight = class_weight
        self.replay_plan = replay_plan
        self.categorical_features = categorical_features

    _parameter_constraints: dict = {**GETRegressorCV._parameter_constraints, "class_weight": _CLASS_WEIGHT,
                                    "leaf": [StrOptions({*CLASS_LEAVES, "auto"})],
                                    "depth_rule": [StrOptions({"best", "one_se"})], "calibrate": ["boolean"]}
    for _name in ("linear_leaves", "clip_leaves"):
        _parameter_constraints.pop(_name)

    def _strata(self, y: np.ndarray) -> np.ndarray | None:
        """Stratify by class when every class has two rows (the split needs one on each side)."""
        counts = np.bincount(y)
        return y if counts[counts > 0].min() >= 2 else None

    def _validation_score(self, tree: ObliqueTree, X: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> float:
        return float(np.average(_class_indices(tree, X) == y, weights=w))

    def _tiebreak(self, tree: ObliqueTree, X: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> float:
        """Minus the validation log loss: of a depth's trees with equal validation accuracy (with leaf='auto' its
        class-share and logistic leaves often tie: deep leaves keep their shares) the better calibrated wins."""
        proba = tree.predict_proba(X)[np.arange(len(y)), y]
        return float(np.average(np.log(proba), weights=w))

    def _search_settings(self, depths: list[int], l1s: list[float]) -> dict:
        """The regressor's, and ``depth_rule`` where it is not the default (it picks the depth that is refit; a
        plan recorded before it existed stays valid)."""
        rule = {} if self.depth_rule == "best" else {"depth_rule": self.depth_rule}
        return {**super()._search_settings(depths, l1s), **rule}

    def _selection_margin(self, best: float, y_val: np.ndarray, w_val: np.ndarray | None) -> float:
        """With ``depth_rule='one_se'`` the best validation accuracy's standard error."""
        if self.depth_rule != "one_se":
            return 0.0
        n = len(y_val) if w_val is None else w_val.sum() ** 2 / np.square(w_val).sum()
        return float(np.sqrt(best * (1.0 - best) / n))

    def _calibrated(self, tree: ObliqueTree, validated: ObliqueTree, split: list) -> ObliqueTree:
        """``tree`` tempered by the temperature of least validation log loss of ``validated``, the search fit of the
        same depth, leaf and L1 on the train part: the refit has no rows of its own left to choose it on, and the
        search fit's over- or under-confidence at that depth is the refit's, fitted the same way on 1.5 times the
        rows (a little less overconfident, so T errs towards too little tempering, not too much)."""
        self.temperature_ = 1.0
        if self.calibrate:
            _, X_val, _, y_val, _, w_val = split
            self.temperature_ = _best_temperature(lambda t: -self._tiebreak(
                with_temperature(validated, t, engine_rows=True), X_val, y_val, w_val),
                "logistic" if validated.has_logistic_leaves else "constant")
        return with_temperature(tree, self.temperature_)

    def _lowest_depth(self) -> int:
        return 0 if self.leaf != "constant" else _DEPTH.low

    def _depth_note(self) -> str:
        return "" if self.leaf != "constant" else " (depth 0, one logistic model, needs leaf='logistic' or 'auto')"

    def _class_loss(self) -> str | None:
        """With 'auto' the class-share soft phase where ``logistic.SEARCH_SOFT_PHASE`` is off (see there)."""
        return None if self.leaf != "auto" or logistic.SEARCH_SOFT_PHASE else class_task.SOFT_LOSS

    def _leaf_settings(self, validated: ObliqueTree) -> dict:
        self.best_leaf_ = "logistic" if validated.has_logistic_leaves else "constant"
        return {"class_leaf": self.best_leaf_}

    def _result_fields(self, tree: ObliqueTree) -> dict:
        return {"leaf": "logistic" if tree.has_logistic_leaves else "constant"}

    def _search_fits(self, X: np.ndarray, y: np.ndarray, w: np.ndarray | None, depth: int, config: GETConfig,
                     on_progress: ProgressCallback | None, names: list[str] | None,
                     checkpoint: SearchCheckpoint | None, replay: SearchReplay | None) -> list[ObliqueTree]:
        """Depth 0: one logistic model. Otherwise one GET fit with the leaves ``leaf`` asks for: with 'auto' a
        logistic-leaf fit (its leaf fits within its budget) scored as it is and with its class shares only (a copy,
        ``meta["leaf_variant"]``, first), so the leaf type costs no second fit."""
        if depth == 0:
            return [logistic_model(X, y, replace(config, class_leaf="logistic"), list(self.classes_), names, w)]
        leaf = "constant" if self.leaf == "constant" else "logistic"
        trees = super()._search_fits(X, y, w, depth, replace(config, class_leaf=leaf), on_progress, names,
                                     checkpoint, replay)
        if self.leaf != "auto":
            return trees
        return [with_class_leaves(trees[0], X, y, w), *trees]

    def _refit(self, X: np.ndarray, y: np.ndarray, config: GETConfig, on_progress: ProgressCallback | None,
               names: list[str] | None, weights: np.ndarray | None, checkpoint: SearchCheckpoint | None,
               warm_start: ObliqueTree | None, replay_plan: dict | None) -> ObliqueTree:
        if self.best_depth_ == 0:
            return logistic_model(X, y, config, list(self.classes_), names, weights)
        return super()._refit(X, y, config, on_progress, names, weights, checkpoint, warm_start, replay_plan)


#: The temperatures calibration chooses among (``_best_temperature``), per leaf type: logistic leaves' logits may be
#: sharpened (their L2 leaves them underconfident) up to 1/T = 2 or flattened to T = 8; class shares only flattened.
#: Sharpened shares put near-0 probability on the classes a leaf's few rows missed, and a test row of such a class
#: then costs more than the sharpening gains (sklearn's wine, half for training: test log loss 0.22 at T = 1, 0.79 at
#: the validation rows' choice T = 0.25).
TEMPERATURE_RANGE = {"logistic": (0.5, 8.0), "constant": (1.0, 8.0)}


def with_temperature(tree: ObliqueTree, temperature: float, engine_rows: bool = False) -> ObliqueTree:
    """A copy of the classification ``tree`` with its probabilities tempered by ``temperature`` T > 0 in the
    model's own form, so that every export and model file take it as it is: logistic leaves' logit intercepts and
    coefficients divided by T; class-share leaves' shares raised to 1/T and renormalised (smoothed shares are > 0).
    Each row's most probable class stays (ties aside); T = 1 leaves the numbers as they are, and 1/T undoes T.
    ``meta['temperature']`` multiplies by T. ``engine_rows``: the copy reads the engine's matrix, not raw rows (the
    search scores its fits on it)."""
    tempered = copy.copy(tree)
    tempered.meta = {**tree.meta, "temperature": tree.meta.get("temperature", 1.0) * temperature}
    if engine_rows:
        tempered.inputs = None
    if temperature == 1.0:
        return tempered
    if tree.has_logistic_leaves:
        tempered.logit_intercepts = tree.logit_intercepts / temperature
        tempered.logit_coefs = tree.logit_coefs / temperature
    else:
        powered = tree.leaf_proba ** (1.0 / temperature)
        tempered.leaf_proba = powered / powered.sum(axis=1, keepdims=True)
    return tempered


def _best_temperature(loss: Callable[[float], float], leaf: str) -> float:
    """The temperature in ``TEMPERATURE_RANGE[leaf]`` of least ``loss`` (a bounded 1-D search on log T), or 1.0 where
    it does not beat T = 1."""
    found = minimize_scalar(lambda log_t: loss(float(np.exp(log_t))), bounds=np.log(TEMPERATURE_RANGE[leaf]),
                            method="bounded", options={"xatol": 1e-3})
    return float(np.exp(found.x)) if found.fun < loss(1.0) else 1.0


def _class_indices(tree: ObliqueTree, X: np.ndarray) -> np.ndarray:
    """Each row's predicted class as an index into the tree's classes: its leaf's class, or with logistic leaves the
    most probable class at the row (the first on a tie)."""
    if tree.has_logistic_leaves:
        return np.argmax(tree.predict_proba(X), axis=1)
    return tree.leaf_class_index[tree.apply(X) - tree.n_leaves]


def choose_split_features(path: list[dict], tolerance: float, key: str = "validation_r2") -> int | None:
    """The first entry of ``path`` (fewest features first) whose validation score ``key`` is within ``tolerance``
    of the best one's: the most readable tree that costs at most that much validation R2 (or accuracy)."""
    best = max(r[key] for r in path)
    return next(r["max_split_features"] for r in path if r[key] >= best - tolerance)


class DepthSearch:
    """The depth search's bookkeeping: the best score so far (a deeper tree must beat it by more than ``tol``, so
    ties go to the shallower tree) and the early stop after ``patience`` depths in a row without (None: never)."""

    def __init__(self, first_depth: int, patience: int | None, tol: float = 0.0):
        self.best_depth, self.best_score = first_depth, -np.inf
        self.patience, self.tol, self.misses = patience, tol, 0

    def add(self, depth: int, score: float) -> bool:
        """Record ``depth``'s validation score; True when the search should stop here."""
        if score > self.best_score + self.tol:
            self.best_depth, self.best_score, self.misses = depth, score, 0
            return False
        self.misses += 1
        return self.patience is not None and self.misses >= self.patience


def _search_fit(X: np.ndarray, y: np.ndarray, config: GETConfig, on_progress: ProgressCallback | None,
                names: list[str] | None, checkpoint: SearchCheckpoint | None,
                warm_start: ObliqueTree | None = None, sample_weight: np.ndarray | None = None,
                classes: list | None = None, replay_plan: dict | None = None,
                groups: np.ndarray | None = None, class_loss: str | None = None) -> ObliqueTree:
    """One fit (of the depth search, its refit, or a plain estimator's, ``replay_plan`` replayed), taken from
    ``checkpoint`` when an earlier search stored it (a cancelled fit is never stored)."""
    task = dict(warm_start=warm_start, sample_weight=sample_weight, classes=classes, replay_plan=replay_plan,
                groups=groups, class_loss=class_loss)
    if checkpoint is None:
        return train(X, y, config, on_progress, names, **task)
    key = fit_fingerprint(X, y, config, names, warm_start, sample_weight, classes)
    if class_loss is not None:  # the same config trained under another soft loss is another fit
        key = f"{key}-{class_loss}"
    tree = checkpoint.load(key)
    if tree is None:
        tree = train(X, y, config, on_progress, names, **task)
        if not tree.meta.get("cancelled"):
            checkpoint.save(key, tree)
    return tree


def estimator_params(cls: type, config: GETConfig) -> dict:
    """The parameters of estimator class ``cls`` that ``config`` sets: how the app's runs, which hold a GETConfig,
    fit through the estimators. A classifier's ``leaf`` is the config's ``class_leaf`` (the config's ``leaf`` and the
    linear leaves' settings are regression's). A setting ``cls`` does not take must be at its default, except those
    another parameter replaces: a search's ``depths`` its ``depth``."""
    names = cls._get_param_names()
    renamed = {"leaf": "class_leaf"} if cls._is_classifier else {}
    ignored = ({"leaf", "linear_leaves", "clip_leaves"} if cls._is_classifier else set()) | (
        {"depth"} if issubclass(cls, _SearchCV) else set())
    taken = {renamed.get(name, name) for name in names}
    hidden = [f.name for f in fields(GETConfig) if f.name not in taken and f.name not in ignored
              and getattr(config, f.name) != getattr(DEFAULTS, f.name)]
    if hidden:
        raise ValueError(f"{cls.__name__} does not take {', '.join(hidden)}: leave "
                         f"{'it' if len(hidden) == 1 else 'them'} at the default.")
    return {name: getattr(config, renamed.get(name, name)) for name in names
            if renamed.get(name, name) in _CONFIG_FIELDS}


def _l1_values(l1) -> list[float]:
    """``l1`` as the sorted distinct values to search (one value: no search)."""
    values = sorted({float(v) for v in np.atleast_1d(np.asarray(l1, dtype=float))})
    if not values or values[0] < 0 or not np.all(np.isfinite(values)):
        raise ValueError(f"l1 must be a number >= 0 or a non-empty list of them; got {l1!r}.")
    return values


def _seed(random_state) -> int | None:
    """An int seed from sklearn's random_state conventions (None, int or RandomState)."""
    if random_state is None or isinstance(random_state, (int, np.integer)):
        return None if random_state is None else int(random_state)
    return int(random_state.randint(0, 2 ** 31 - 1))


def _numeric_target(y: Any, estimator: str) -> Any:
    """A regressor's target as numbers: text in which every value reads as a number ("1.5", "2e3") becomes those
    numbers (numpy's own error would be a UFuncTypeError); a word is refused, since a regressor needs numbers and a
    target of classes wants the classifier."""
    if np.asarray(y).dtype.kind not in "USO":
        return y
    values = pd.Series(np.asarray(y, dtype=object).ravel(), dtype=object)
    text = values[values.map(lambda v: isinstance(v, (str, bytes)))]
    numbers = pd.to_numeric(text.map(lambda v: v.decode(errors="replace") if isinstance(v, bytes) else v),
                            errors="coerce")
    words = text[numbers.isna()]
    if len(words):
        row, word = int(words.index[0]), words.iloc[0]
        raise DataError(f"y (the target) is text: row {row + 1} holds {word!r}. {estimator} predicts numbers; use "
                        "GETClassifier for classes, or convert y to numbers.")
    values[text.index] = numbers
    return values.to_numpy(dtype=np.float64).reshape(np.shape(y))


def _refuse_class_weight(class_weight: str | dict) -> None:
    """Refuse a class weight that is not a finite number >= 0, naming its class: a negative one gives negative
    class shares (probabilities below 0, a model file that no longer loads) and an infinite one no fit at all."""
    if not isinstance(class_weight, dict):
        return
    for label, weight in class_weight.items():
        number = weight if isinstance(weight, Real) and not isinstance(weight, bool) else None
        if number is None or not np.isfinite(number) or number < 0:
            raise DataError(f"class_weight for class {label!r} is {weight!r}: each class's weight must be a finite "
                            "number >= 0 (0 leaves the class out of the loss).")


def learned_inputs(X: Any, categorical_features: Any) -> Inputs | None:
    """The raw inputs of training table X (``get_core.model.inputs``), or None for a table of finite numbers with no
    category column (it trains as the engine's matrix itself, as before). ``categorical_features`` as
    HistGradientBoosting's; a refusal (too many categories, text in a number column) is a DataError naming the
    column."""
    frame = X if hasattr(X, "iloc") and hasattr(X, "dtypes") else None
    array = None if frame is not None else (X if isinstance(X, np.ndarray) else np.asarray(X, dtype=object))
    if array is not None and array.ndim != 2:
        return None  # scikit-learn's own check says what is wrong
    p = frame.shape[1] if frame is not None else array.shape[1]
    names = [str(c) for c in frame.columns] if frame is not None else [f"x{j}" for j in range(p)]
    raw = [frame.iloc[:, j] if frame is not None else array[:, j] for j in range(p)]
    categorical = _categorical_mask(categorical_features, raw, names, frame is not None)
    try:
        if not any(categorical):
            numbers = [inputs_numbers(values, name) for values, name in zip(raw, names)]
            if all(np.isfinite(v).all() for v in numbers):
                return None
        return learn([_values(v) for v in raw], names, categorical)
    except ValueError as exc:
        raise DataError(str(exc)) from None


def inputs_numbers(values: Any, name: str) -> np.ndarray:
    """A column as float64 numbers (missing: NaN), as ``inputs`` reads a number column."""
    return numbers_of(_values(values), name)


def _values(values: Any) -> np.ndarray:
    """A column (a pandas Series or a numpy column) as numpy values: numbers as float64 with NaN for NA, anything
    else (booleans too, read as inputs reads them) as objects with None for NA."""
    if isinstance(values, pd.Series):
        if values.dtype.kind in "iuf":
            return values.to_numpy(dtype=np.float64, na_value=np.nan)
        return values.astype(object).where(values.notna(), None).to_numpy()
    return values


def _categorical_mask(categorical_features: Any, raw: list, names: list[str], named: bool) -> list[bool]:
    """Which columns hold categories, by HistGradientBoosting's meanings of ``categorical_features`` ("from_dtype":
    text and category columns, except text that reads wholly as numbers)."""
    p = len(raw)
    if categorical_features is None:
        return [False] * p
    if isinstance(categorical_features, str) and categorical_features == "from_dtype":
        return [_is_text(v) and not _reads_as_numbers(v) for v in raw]
    given = np.asarray(categorical_features)
    if given.dtype.kind == "b":
        if given.shape != (p,):
            raise DataError(f"categorical_features as a boolean mask needs {p} entries, one per column of X; got "
                            f"{given.size}.")
        return [bool(b) for b in given]
    mask = [False] * p
    for item in given.ravel().tolist():
        if isinstance(item, str):
            if not named or item not in names:
                raise DataError(f"categorical_features names {item!r}, which is not a column of X"
                                f"{'' if named else ' (a table without column names: give column indices)'}.")
            mask[names.index(item)] = True
        elif isinstance(item, int) and -p <= item < p:
            mask[item] = True
        else:
            raise DataError(f"categorical_features holds {item!r}: give column indices from 0 to {p - 1}, column "
                            "names, a boolean mask, 'from_dtype' or None.")
    return mask


def _is_text(values: Any) -> bool:
    """True for a text or category column (pandas category, object or string; numpy text or objects)."""
    dtype = values.dtype
    return isinstance(dtype, pd.CategoricalDtype) or dtype.kind in "OUS" or pd.api.types.is_string_dtype(dtype)


def _reads_as_numbers(values: Any) -> bool:
    """True when every present value of a text column reads as a number (numbers written as text)."""
    if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        return False
    try:
        inputs_numbers(values, "")
    except ValueError:
        return False
    return True


def _refuse_holes_in_leaf_models(tree: ObliqueTree, X: np.ndarray) -> None:
    """A plain tree's split sends a missing value left, but a linear or logistic leaf has no value to put in its
    model (its prediction would be NaN): such rows are refused with a sentence naming the first one. A tree fitted on
    a table with holes (``inputs_``) fills them with what it learned instead."""
    if not (np.any(tree.leaf_coefs) or tree.has_logistic_leaves):
        return
    bad = np.argwhere(~np.isfinite(X))
    if bad.size:
        i, j = (int(v) for v in bad[0])
        kind = "a missing" if np.isnan(X[i, j]) else "an infinite"
        raise DataError(f"X has {kind} value in column {tree.feature_names[j]!r} (row {i}), and this tree's leaves are "
                        "models fitted without missing values: fill it in, or refit on a table with its holes (the "
                        "tree then learns where such rows go).")


def _refuse_complex(values: Any, what: str) -> None:
    """Refuse complex numbers, naming the table's column: converting them to float would drop the imaginary part.
    The message starts as scikit-learn's does (its estimator checks look for it), without the array it appends."""
    if hasattr(values, "columns"):
        columns = [c for c, dtype in values.dtypes.items() if pd.api.types.is_complex_dtype(dtype)]
        if columns:
            raise DataError(f"Complex data not supported: {what}'s column '{columns[0]}' holds complex numbers; GET "
                            "needs real numbers.", column=str(columns[0]))
    elif np.asarray(values).dtype.kind == "c":
        raise DataError(f"Complex data not supported: {what} holds complex numbers; GET needs real numbers.")
