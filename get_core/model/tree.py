"""ObliqueTree: the fitted model as plain node-indexed numpy arrays.

Nodes use the paper's breadth-first (heap) numbering: the root is node 1, node t has children 2t (left) and
2t+1 (right). A tree of depth D has branch nodes 1 .. 2^D-1 and leaves 2^D .. 2^(D+1)-1; array rows follow that
order (branch node t is row t-1 of ``weights``; leaf t is row t-2^D of ``leaf_intercepts``).

Routing is defined once, in scaled units: ``xs = (x - x_min) / x_scale``; a row goes left at node t when
``weights[t-1] @ xs <= thresholds[t-1]`` over the non-zero weights (a split ignores the features it does not use,
even NaN ones). Training, inference and every export compute exactly this, so they agree
bit for bit; rules shown to people are converted to original units by ``split_in_original_units``.

The model file (JSON) is ``get_core.model.model_file``; the rules text and other exports are ``get_core.export`` and
``get_core.model.codegen``. Routing itself (compiled, with a numpy fallback) is ``get_core.model.routing``. This
module imports nothing from the project outside ``get_core.model`` (lowest floor) and never imports torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from get_core.model import prune, routing
from get_core.model.inputs import Inputs

LEAF_TYPES = ("constant", "linear")
#: The leaf type of a classification tree: each leaf holds class probabilities (``leaf_proba``), not a number.
CLASS_LEAVES = "classes"
#: How a linear tree's leaves are fitted from its hard splits (``get_core.engine.leaves``): keep a leaf's least squares only
#: where generalized cross-validation prefers it to the mean ("gcv"), or wherever rows allow ("ols", the paper's).
LINEAR_LEAF_RULES = ("gcv", "ols")
MAX_DEPTH = 12


@dataclass
class ObliqueTree:
    """A complete oblique regression or classification tree of depth ``depth`` over ``p`` features.

    Shapes (B = 2^depth - 1 branch nodes, L = 2^depth leaves, N = 2L - 1 nodes):
      weights [B, p], thresholds [B]      split of branch node t is row t-1, in scaled units
      leaf_intercepts [L], leaf_coefs [L, p]  leaf model in scaled units (coefs all zero for constant leaves)
      n_samples [N]                       training rows that reached each node (row t-1 for node t)
      node_values [N]                     mean scaled target of those rows (NaN where none)
      x_min, x_scale [p], y_min, y_scale  scaling learned on the training data (min-max, or robust for x)
      leaf_lower, leaf_upper [L]          a leaf's prediction is clamped to [lower, upper], scaled units (the
                                          range of its training targets for a linear leaf; -inf/inf: no bound)

    A classification tree (``leaf_type == "classes"``, C classes) adds:
      classes [C]                         the labels, JSON-able scalars in ``np.unique`` order (sklearn's classes_)
      leaf_proba [L, C]                   class probabilities each leaf predicts (rows sum to 1)
      node_counts [N, C]                  weighted training class counts per node (row t-1 for node t)
    and, with logistic leaves (``GETClassifier(leaf="logistic")``, ``has_logistic_leaves``), a multinomial logistic
    model per leaf on the scaled inputs (``logistic_proba``):
      logit_intercepts [L, C], logit_coefs [L, C, p]  class c's logit in leaf l is intercepts[l, c] + coefs[l, c]·xs
      logit_mix [L]                       the share m of the uniform 1/C mixed into the softmax, (1 - m) softmax + m/C:
                                          the constant leaves' one pseudo-row (``engine.classes.SMOOTHING``), which
                                          keeps every probability away from 0 and 1
    and keeps the regression fields neutral: leaf_intercepts and leaf_coefs zero, y_min 0, y_scale 1, no leaf
    bounds, node_values the share of each node's majority class (NaN where no rows). One class, not a twin: routing,
    scaling and every structural property are shared; only what a leaf predicts differs.

    A tree fitted on a table as it comes (missing values, category columns) carries its raw ``inputs``
    (``get_core.model.inputs``): ``feature_names`` are then the engine's columns (``inputs.feature_names``) and
    ``predict``, ``predict_proba``, ``apply`` and ``decision_path`` take raw rows, which ``encode`` turns into the
    engine's matrix; ``margins``, ``scale_X``, ``goes_left`` and ``predict_scaled`` take engine rows. None: the
    inputs are the engine's columns themselves (plain numbers).
    """

    weights: np.ndarray
    thresholds: np.ndarray
    leaf_intercepts: np.ndarray
    leaf_coefs: np.ndarray
    n_samples: np.ndarray
    node_values: np.ndarray
    x_min: np.ndarray
    x_scale: np.ndarray
    y_min: float = 0.0
    y_scale: float = 1.0
    feature_names: list[str] = field(default_factory=list)
    leaf_type: str = "constant"
    meta: dict[str, Any] = field(default_factory=dict)
    leaf_lower: np.ndarray | None = None
    leaf_upper: np.ndarray | None = None
    classes: list | None = None
    leaf_proba: np.ndarray | None = None
    node_counts: np.ndarray | None = None
    logit_intercepts: np.ndarray | None = None
    logit_coefs: np.ndarray | None = None
    logit_mix: np.ndarray | None = None
    inputs: Inputs | None = None

    def __post_init__(self) -> None:
        self.weights = np.asarray(self.weights, dtype=np.float64)
        self.thresholds = np.asarray(self.thresholds, dtype=np.float64)
        self.leaf_intercepts = np.asarray(self.leaf_intercepts, dtype=np.float64)
        self.leaf_coefs = np.asarray(self.leaf_coefs, dtype=np.float64)
        self.n_samples = np.asarray(self.n_samples, dtype=np.int64)
        self.node_values = np.asarray(self.node_values, dtype=np.float64)
        self.x_min = np.asarray(self.x_min, dtype=np.float64)
        self.x_scale = np.asarray(self.x_scale, dtype=np.float64)
        self.y_min = float(self.y_min)
        self.y_scale = float(self.y_scale)
        n_leaves = self.leaf_intercepts.shape[0]
        self.leaf_lower = _bound(self.leaf_lower, n_leaves, -np.inf)
        self.leaf_upper = _bound(self.leaf_upper, n_leaves, np.inf)
        if not self.feature_names:
            self.feature_names = [f"x{j}" for j in range(self.weights.shape[1])]
        self.feature_names = [str(f) for f in self.feature_names]
        if self.classes is not None:
            self.classes = [c.item() if isinstance(c, np.generic) else c for c in self.classes]
        if self.leaf_proba is not None:
            self.leaf_proba = np.asarray(self.leaf_proba, dtype=np.float64)
        if self.node_counts is not None:
            self.node_counts = np.asarray(self.node_counts, dtype=np.float64)
        for name in LOGISTIC_FIELDS:
            if getattr(self, name) is not None:
                setattr(self, name, np.asarray(getattr(self, name), dtype=np.float64))
        _check_shapes(self)
        if self.is_classifier:
            _check_classes(self)
        if self.inputs is not None and self.inputs.feature_names != self.feature_names:
            raise ValueError("feature_names must be the inputs' engine columns (inputs.feature_names).")

    # ------------------------------------------------------------------ structure
    @property
    def scaling(self) -> str:
        """How x was mapped to [0, 1] in training: "minmax" (``x_min`` and ``x_min + x_scale`` are the training
        minimum and maximum) or "robust" (they are its 1st and 99th percentiles); from ``meta``, min-max if unsaid."""
        config = self.meta.get("config")
        return "robust" if isinstance(config, dict) and config.get("scaling") == "robust" else "minmax"

    @property
    def is_classifier(self) -> bool:
        """True for a classification tree: its leaves hold class probabilities and ``predict`` gives labels."""
        return self.leaf_type == CLASS_LEAVES

    @property
    def has_logistic_leaves(self) -> bool:
        """True for a classification tree whose leaves hold logistic models (``logit_*``), not fixed shares."""
        return self.logit_coefs is not None

    @property
    def n_classes(self) -> int:
        """C, the number of classes (0 for a regression tree)."""
        return len(self.classes) if self.is_classifier else 0

    @property
    def depth(self) -> int:
        return int(round(math.log2(self.weights.shape[0] + 1)))

    @property
    def n_features(self) -> int:
        return int(self.weights.shape[1])

    @property
    def n_branches(self) -> int:
        return int(self.weights.shape[0])

    @property
    def n_leaves(self) -> int:
        return int(self.leaf_intercepts.shape[0])

    @property
    def n_nodes(self) -> int:
        return 2 * self.n_leaves - 1

    @property
    def n_parameters(self) -> int:
        """Parameters counted as the paper's Table 5: p+1 per branch node (weights and threshold), 1 per constant
        leaf or p+1 per linear leaf (a leaf of a linear tree whose slopes are all zero holds its mean: 1). A class
        leaf counts C-1: its C shares sum to 1, so C-1 of them are free (a binary leaf holds one number, as a
        constant regression leaf does); at least 1, the label a single-class leaf predicts. Logistic leaves add C-1 free
        logits' slopes per leaf whose slopes are not all 0. Only the splits and leaves a row can reach count: a
        pass-through decides nothing and the dead side below it is never used (``prune``)."""
        branches, leaves = len(prune.live_branches(self)), prune.live_leaves(self)
        if self.has_logistic_leaves:
            modelled = int(np.count_nonzero(np.any(self.logit_coefs[leaves - self.n_leaves] != 0, axis=(1, 2))))
            return (branches * (self.n_features + 1) + len(leaves) * max(self.n_classes - 1, 1)
                    + modelled * (self.n_classes - 1) * self.n_features)
        if self.is_classifier:
            return branches * (self.n_features + 1) + len(leaves) * max(self.n_classes - 1, 1)
        linear_leaves = int(np.count_nonzero(np.any(self.leaf_coefs[leaves - self.n_leaves] != 0, axis=1)))
        return branches * (self.n_features + 1) + len(leaves) + linear_leaves * self.n_features

    @property
    def split_widths(self) -> np.ndarray:
        """Features each branch node's split uses (its non-zero weights), shape (2^D - 1,)."""
        return np.count_nonzero(self.weights, axis=1)

    @property
    def split_terms(self) -> np.ndarray:
        """Raw columns each branch node's split uses, shape (2^D - 1,): what ``max_split_features`` counts. A category
        column's weights, or a number's and its "if missing" weight, are one term; ``split_widths`` for plain
        inputs."""
        if self.inputs is None:
            return self.split_widths
        starts = np.flatnonzero(np.diff(self.inputs.groups, prepend=-1))
        return np.count_nonzero(np.add.reduceat(self.weights != 0, starts, axis=1), axis=1)

    @property
    def n_nonzero_parameters(self) -> int:
        """``n_parameters`` with each split counting only its non-zero weights (and its threshold): what a reader has
        to check in a sparse tree (``max_split_features``); equal to ``n_parameters`` for dense splits."""
        branches = prune.live_branches(self)
        return self.n_parameters - len(branches) * self.n_features + int(self.split_widths[branches - 1].sum())

    @property
    def has_leaf_bounds(self) -> bool:
        return bool(np.isfinite(self.leaf_lower).any() or np.isfinite(self.leaf_upper).any())

    def is_leaf(self, node: int) -> bool:
        return node >= self.n_leaves

    def is_empty(self, node: int) -> bool:
        """True when no training row reached ``node``."""
        return bool(self.n_samples[node - 1] == 0)

    # ------------------------------------------------------------------ inference
    def checked_X(self, X: Any) -> np.ndarray:
        """``X`` as a float64 (n, p) array, after checking a table's columns and the shape (a clear error if not)."""
        _check_frame_columns(X, self.feature_names)
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(
                f"X must be a 2-D array with {self.n_features} columns ({_quoted(self.feature_names)}); "
                f"got shape {X.shape}."
            )
        return X

    def encode(self, X: Any) -> np.ndarray:
        """Raw rows as the engine's float64 (n, p) matrix: ``inputs.encode`` (a table's columns checked by name),
        or ``checked_X`` for a tree of plain numeric inputs."""
        if self.inputs is None:
            return self.checked_X(X)
        _check_frame_columns(X, self.inputs.names)
        return self.checked_X(self.inputs.encode(X))

    @property
    def groups(self) -> np.ndarray:
        """Engine column -> raw column (``inputs.groups``; each column its own for plain inputs), shape (p,)."""
        return np.arange(self.n_features) if self.inputs is None else self.inputs.groups

    def scale_X(self, X: Any) -> np.ndarray:
        X = self.checked_X(X)
        with np.errstate(over="ignore"):  # a huge finite value may scale to inf, as IEEE (and the exports) give it
            return (X - self.x_min) / self.x_scale

    def margins(self, X: Any) -> np.ndarray:
        """Signed margins ``a_t·xs - b_t`` of every row at every branch node, shape (n, B); <= 0 goes left."""
        return self.scale_X(X) @ self.weights.T - self.thresholds

    def decision_path(self, X: Any) -> np.ndarray:
        """Node ids (heap numbering) visited by each raw row from root to leaf, shape (n, depth+1)."""
        return routing.decision_path(self, self.encode(X))

    def goes_left(self, node: int, X: Any) -> np.ndarray:
        """Whether each row of ``X`` takes branch ``node``'s left side, by the very test ``decision_path`` applies
        there (so a threshold found with it routes exactly as the model does)."""
        used = np.flatnonzero(self.weights[node - 1])  # ordered_dot skips the others' terms anyway
        xs_t = self.scale_X(X).T[used]
        weights = np.repeat(self.weights[node - 1][used][:, None], xs_t.shape[1], axis=1)
        return ~(routing.ordered_dot(weights, xs_t, skip_zeros=True) > self.thresholds[node - 1])

    def apply(self, X: Any) -> np.ndarray:
        """Leaf node id (heap numbering, in [2^D, 2^(D+1))) reached by each raw row."""
        return routing.leaves(self, self.encode(X))

    def predict_scaled(self, X: Any) -> np.ndarray:
        """Regression predictions in scaled units (a classification tree has none: see ``predict_proba``)."""
        if self.is_classifier:
            raise ValueError("A classification tree predicts classes, not numbers: use predict or predict_proba.")
        return routing.predict_scaled(self, self.checked_X(X))[1]

    def predict(self, X: Any) -> np.ndarray:
        """Predictions of raw rows by hard splits: in the target's original units, or a classifier's class labels (the
        class with the largest probability in the row's leaf; the first one on a tie)."""
        X = self.encode(X)
        if self.has_logistic_leaves:
            return self.class_array()[np.argmax(self._proba(X), axis=1)]
        if self.is_classifier:
            return self.class_array()[self.leaf_class_index[routing.leaves(self, X) - self.n_leaves]]
        return self.y_min + self.y_scale * self.predict_scaled(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of each row, shape (n, C), columns in ``classes`` order: its leaf's ``leaf_proba``, or
        with logistic leaves its leaf's model at the row (``logistic_proba``)."""
        if not self.is_classifier:
            raise ValueError("predict_proba needs a classification tree; this tree predicts numbers (use predict).")
        return self._proba(self.encode(X))

    def _proba(self, X: np.ndarray) -> np.ndarray:
        """``predict_proba`` of engine rows."""
        leaf = routing.leaves(self, X) - self.n_leaves
        if self.has_logistic_leaves:
            return logistic_proba(self, self.scale_X(X), leaf)
        return self.leaf_proba[leaf]

    # ------------------------------------------------------------------ classes
    @property
    def leaf_class_index(self) -> np.ndarray:
        """Index into ``classes`` of the class each leaf predicts, shape (L,): the first largest probability."""
        return np.argmax(self.leaf_proba, axis=1)

    def class_array(self) -> np.ndarray:
        """``classes`` as a plain numpy array of the labels' own type (str, int, float or bool), like ``classes_``."""
        return np.asarray(self.classes)

    def node_class_index(self, node: int) -> int | None:
        """Index of the majority class among the training rows of ``node`` (first on a tie), None where none."""
        counts = self.node_counts[node - 1]
        return int(np.argmax(counts)) if counts.sum() > 0 else None

    # ------------------------------------------------------------------ original units
    def split_in_original_units(self, node: int) -> tuple[np.ndarray, float]:
        """(w, c) with ``w·x <= c`` in original feature units equivalent to branch ``node``'s scaled split."""
        a = self.weights[node - 1] / self.x_scale
        return a, float(self.thresholds[node - 1] + a @ self.x_min)

    def leaf_in_original_units(self, leaf_node: int) -> tuple[float, np.ndarray]:
        """(intercept, coefs) of leaf ``leaf_node`` so that ``y = intercept + coefs·x`` in original units."""
        i = leaf_node - self.n_leaves
        coefs, intercept = self.leaf_coefs[i], self.leaf_intercepts[i]
        if self.leaf_type == "constant" or not np.any(coefs):  # predict_scaled: a constant, clamped to the bounds
            coefs, intercept = np.zeros_like(coefs), np.clip(intercept, self.leaf_lower[i], self.leaf_upper[i])
        k = coefs / self.x_scale * self.y_scale
        h = self.y_min + self.y_scale * intercept - k @ self.x_min
        return float(h), k

    def leaf_bounds_original(self, leaf_node: int) -> tuple[float, float] | None:
        """(lower, upper) in original units that leaf ``leaf_node``'s prediction is clamped to, or None when its
        model needs no clamp (a constant leaf, or a linear leaf left unbounded)."""
        i = leaf_node - self.n_leaves
        lo, hi = self.leaf_lower[i], self.leaf_upper[i]
        if not np.any(self.leaf_coefs[i]) or not (np.isfinite(lo) or np.isfinite(hi)):
            return None
        return self.y_min + self.y_scale * float(lo), self.y_min + self.y_scale * float(hi)

    def node_value_original(self, node: int) -> float:
        return self.y_min + self.y_scale * float(self.node_values[node - 1])


#: The fields of a tree with logistic leaves, all present or all None.
LOGISTIC_FIELDS = ("logit_intercepts", "logit_coefs", "logit_mix")


def raw_rows(tree: ObliqueTree, X: Any) -> np.ndarray:
    """Rows as ``tree`` reads them: float64 for plain inputs, as they are (category labels among numbers: an object
    array) for a tree with raw ``inputs``, which ``encode`` reads."""
    return np.asarray(X, dtype=np.float64 if tree.inputs is None else None)


def logistic_proba(tree: ObliqueTree, xs: np.ndarray, leaf: np.ndarray) -> np.ndarray:
    """Class probabilities (n, C) of scaled rows ``xs`` (n, p) in leaves ``leaf`` (n,) (indices 0..L-1) of a tree with
    logistic leaves: z = intercepts + coefs·xs (the terms added in feature order), softmax with the largest logit
    subtracted, then (1 - m) softmax + m / C. Every export computes exactly this."""
    z = tree.logit_intercepts[leaf].copy()
    coefs = tree.logit_coefs[leaf]
    for j in range(xs.shape[1]):
        z += coefs[:, :, j] * xs[:, j:j + 1]
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    mix = tree.logit_mix[leaf][:, None]
    return (1.0 - mix) * (e / e.sum(axis=1, keepdims=True)) + mix / tree.n_classes


def feature_name_problem(names: Sequence[str]) -> str | None:
    """Why ``names`` cannot name a model's inputs, or None. Each must be text that UTF-8 can write: every export is
    a file, and a lone surrogate (``"\\udcff"``, which a JSON escape or a DataFrame column may hold) cannot be
    written. No two may be the same: a table is scored by column name, so a repeated name would feed one column into
    several inputs."""
    seen: set[str] = set()
    for name in names:
        if not writable(str(name)):
            return f"{ascii(name)} holds a lone surrogate, which is not text UTF-8 can write"
        if name in seen:
            return f"{ascii(name)} appears more than once"
        seen.add(name)
    return None


def writable(text: str) -> bool:
    """True when UTF-8 can write ``text``: it holds no lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _one_line(text: Any) -> str:
    """``text`` on one line with single spaces: a name with a line break must not break a message."""
    return " ".join(str(text).split())


def _check_shapes(tree: ObliqueTree) -> None:
    b, p = tree.weights.shape if tree.weights.ndim == 2 else (-1, -1)
    leaves = b + 1
    if b < 1 or leaves & (leaves - 1):
        raise ValueError(f"weights must have 2^D - 1 rows; got shape {tree.weights.shape}.")
    expected = {
        "thresholds": (b,), "leaf_intercepts": (leaves,), "leaf_coefs": (leaves, p), "n_samples": (2 * leaves - 1,),
        "node_values": (2 * leaves - 1,), "x_min": (p,), "x_scale": (p,),
    }
    expected.update(leaf_lower=(leaves,), leaf_upper=(leaves,))
    for name, shape in expected.items():
        if getattr(tree, name).shape != shape:
            raise ValueError(f"{name} must have shape {shape}; got {getattr(tree, name).shape}.")
    if len(tree.feature_names) != p:
        raise ValueError(f"feature_names must have {p} entries; got {len(tree.feature_names)}.")
    problem = feature_name_problem(tree.feature_names)
    if problem:
        raise ValueError(f"feature_names must be distinct text: {problem}.")
    if tree.leaf_type not in LEAF_TYPES + (CLASS_LEAVES,):
        raise ValueError(f"leaf_type must be one of {LEAF_TYPES + (CLASS_LEAVES,)}; got {tree.leaf_type!r}.")
    if not tree.is_classifier and not (tree.classes is None and tree.leaf_proba is None and tree.node_counts is None
                                       and all(getattr(tree, name) is None for name in LOGISTIC_FIELDS)):
        raise ValueError(f"A regression tree (leaf_type {tree.leaf_type!r}) holds no classes, leaf_proba or "
                         "node_counts; use leaf_type 'classes' for a classification tree.")


def _check_classes(tree: ObliqueTree) -> None:
    """A classification tree's classes, leaf probabilities and node counts: present, shaped and consistent."""
    for name in ("classes", "leaf_proba", "node_counts"):
        if getattr(tree, name) is None:
            raise ValueError(f"A classification tree (leaf_type 'classes') needs {name}; got None.")
    classes = tree.classes
    if not classes:
        raise ValueError("classes must hold at least one class label; got an empty list.")
    kinds = {_label_kind(c) for c in classes}
    if None in kinds or len(kinds) > 1:
        raise ValueError("classes must all be text, all integers, all numbers or all booleans; got "
                         f"{_one_line(repr(classes[:10]))}.")
    if kinds == {"int"} and not all(-2 ** 63 <= c < 2 ** 63 for c in classes):
        raise ValueError("classes must be integers within 64 bits (numpy's int64).")
    if kinds == {"float"} and not all(math.isfinite(c) for c in classes):
        raise ValueError("classes must be finite numbers; got NaN or an infinity among them.")
    if kinds == {"str"} and not all(writable(c) and "\x00" not in c for c in classes):
        raise ValueError("classes must be text UTF-8 can write, without a NUL character (numpy drops trailing ones); "
                         "one holds a lone surrogate or a NUL.")
    if list(classes) != sorted(set(classes)):
        raise ValueError(f"classes must be distinct and sorted as np.unique sorts them; got {_quoted(classes)}.")
    n_classes, leaves = len(classes), tree.n_leaves
    for name, rows in (("leaf_proba", leaves), ("node_counts", tree.n_nodes)):
        if getattr(tree, name).shape != (rows, n_classes):
            raise ValueError(f"{name} must have shape {(rows, n_classes)}; got {getattr(tree, name).shape}.")
    proba, counts = tree.leaf_proba, tree.node_counts
    if not np.all(np.isfinite(proba)) or np.any(proba < 0) or np.any(np.abs(proba.sum(axis=1) - 1.0) > 1e-9):
        raise ValueError("leaf_proba must hold probabilities: each leaf's row of numbers >= 0 summing to 1.")
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        raise ValueError("node_counts must hold finite class counts >= 0.")
    _check_logistic(tree, leaves, n_classes)
    if (np.any(tree.leaf_intercepts != 0) or np.any(tree.leaf_coefs != 0) or tree.y_min != 0.0
            or tree.y_scale != 1.0 or tree.has_leaf_bounds):
        raise ValueError("A classification tree keeps leaf_intercepts and leaf_coefs at zero, y_min 0, y_scale 1 "
                         "and no leaf bounds: its leaves predict leaf_proba.")


def _check_logistic(tree: ObliqueTree, leaves: int, n_classes: int) -> None:
    """Logistic leaves: all three fields or none, shaped, finite, and each mix a share in [0, 1)."""
    given = [getattr(tree, name) is not None for name in LOGISTIC_FIELDS]
    if not any(given):
        return
    if not all(given):
        raise ValueError(f"Logistic leaves need all of {', '.join(LOGISTIC_FIELDS)}; some are None.")
    shapes = {"logit_intercepts": (leaves, n_classes), "logit_coefs": (leaves, n_classes, tree.n_features),
              "logit_mix": (leaves,)}
    for name, shape in shapes.items():
        if getattr(tree, name).shape != shape:
            raise ValueError(f"{name} must have shape {shape}; got {getattr(tree, name).shape}.")
        if not np.all(np.isfinite(getattr(tree, name))):
            raise ValueError(f"{name} must hold finite numbers.")
    if np.any(tree.logit_mix < 0) or np.any(tree.logit_mix >= 1):
        raise ValueError("logit_mix must hold shares from 0 up to (not including) 1.")


def _label_kind(label: Any) -> str | None:
    """"bool", "int", "float" or "str" for a class label a model file can hold, None for anything else."""
    for kind in (bool, int, float, str):  # bool first: it is an int too
        if isinstance(label, kind):
            return kind.__name__
    return None


def _check_frame_columns(X: Any, names: Sequence[str]) -> None:
    """A table (pandas DataFrame) must hold the model's features by name and in order: its values are read by
    position, so a reordered or renamed column would silently feed the wrong feature. A tree fitted without names
    (``x0``, ``x1``, ...) reads a table whose columns are none of those by position, as it reads an array."""
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "iloc"):
        return
    columns = [str(c) for c in columns]
    if columns == list(names):
        return
    unnamed = list(names) == [f"x{j}" for j in range(len(names))]
    if unnamed and not set(columns) & set(names):
        return
    missing = [n for n in names if n not in columns]
    extra = [c for c in columns if c not in names]
    if missing or extra:
        detail = "; ".join(([f"missing {_quoted(missing)}"] if missing else [])
                           + ([f"not in the model {_quoted(extra)}"] if extra else []))
    elif len(set(columns)) != len(columns):
        detail = f"duplicated {_quoted(sorted({c for c in columns if columns.count(c) > 1}))}"
    else:
        detail = "the same columns in another order"
    raise ValueError(f"X's columns must be the model's features in order ({_quoted(names)}); got {detail}.")


def _quoted(names: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(repr(_one_line(n)) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _bound(values: Any, n_leaves: int, missing: float) -> np.ndarray:
    """A leaf bound array: ``values`` as float64, or ``missing`` (an infinity: no bound) everywhere for None."""
    if values is None:
        return np.full(n_leaves, missing)
    return np.asarray(values, dtype=np.float64)
