"""The methods of the paper benchmark, each a function that fits on (already min-max scaled) training data.

Test-set methods (``METHODS``) tune their own depth on the training part only, as the paper does (its section 5 and
Appendix F.1): the training part is split 2:1 into train/validation, the depth with the best validation R2 is refit
on the whole training part. Training-optimality methods (``TABLE_METHODS``, the paper's Tables 3 and 4) fit one
tree of a fixed depth and report its training R2.

Counting follows ``get_core.baselines``: 2 parameters per axis-aligned branch node and 1 per leaf for CART and every
forest tree; ``ObliqueTree.n_parameters`` (p+1 per branch, 1 or p+1 per leaf) for GET.
"""

from __future__ import annotations

import importlib.util
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from bench.common import BUDGETS, Budget
from get_core.baselines import count_tree_parameters
from get_core.engine.checkpoint import SearchCheckpoint
from get_core.estimator import DepthSearch, GETRegressor, GETRegressorCV

DEPTHS = tuple(range(1, 13))  # the paper's depth grid for every tree method
# The early stop of the depth search: GETRegressorCV's default, also used for obliquetree so both search alike.
PATIENCE = inspect.signature(GETRegressorCV).parameters["patience"].default
VALIDATION_FRACTION = 1 / 3  # 2:1 train/validation inside the 75% training part (50/25/25 overall)
FOREST_TREES = (50, 100, 200, 300, 400, 500)  # the paper's grid of n_estimators
# max_depth candidates from the paper's 1..50, log-spaced; see fit_forest for why this lands on the same accuracy.
FOREST_DEPTHS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 18, 20, 22, 25, 30, 35, 40, 45, 50)


@dataclass
class Fitted:
    """A fitted model plus what the report needs about it."""

    model: Any  # has predict(X)
    depth: int | None
    n_parameters: int | None
    details: dict = field(default_factory=dict)
    features_per_split: int | None = None  # the widest split of the fitted model (1: axis-aligned); None: unknown


def split_validation(X: np.ndarray, y: np.ndarray, seed: int):
    return train_test_split(X, y, test_size=VALIDATION_FRACTION, random_state=seed)


def tune_depth(make: Callable[[int], Any], X: np.ndarray, y: np.ndarray, seed: int, depths=DEPTHS,
               patience: int | None = None, split: list | None = None,
               metric: Callable = r2_score) -> tuple[Any, int, list[dict]]:
    """Fit ``make(depth)`` on the 2:1 train part for each depth, keep the best validation R2, refit on all of X.

    With ``patience`` the search stops after that many depths in a row fail to improve (as GETRegressorCV does);
    ties go to the shallower tree. ``split`` (X_tr, X_val, y_tr, y_val) and ``metric`` replace the random 2:1 split
    and R2 (the classification benchmark passes a stratified split and accuracy).
    """
    X_tr, X_val, y_tr, y_val = split_validation(X, y, seed) if split is None else split
    results, search = [], DepthSearch(depths[0], patience)
    for depth in depths:
        r2 = float(metric(y_val, make(depth).fit(X_tr, y_tr).predict(X_val)))
        results.append({"depth": depth, "validation_r2": r2})
        if search.add(depth, r2):
            break
    return make(search.best_depth).fit(X, y), search.best_depth, results


def fit_cart(X, y, seed: int, budget: Budget) -> Fitted:
    """CART, depth 1..12 tuned on the 2:1 split (all 12 depths: CART is cheap, no early stop needed)."""
    from sklearn.tree import DecisionTreeRegressor

    model, depth, cv = tune_depth(lambda d: DecisionTreeRegressor(max_depth=d, random_state=seed), X, y, seed)
    return Fitted(model, depth, count_tree_parameters(model), {"cv": cv}, features_per_split=1)


def fit_forest(X, y, seed: int, budget: Budget) -> Fitted:
    """Random forest tuned on the 2:1 split over the paper's grid, searched in two cheap passes.

    The paper searches n_estimators in {50,...,500} x max_depth in 1..50 (300 forests). Two facts make a much
    smaller search land on the same forest:
      * every max_depth at or above the depth the trees reach unbounded gives the identical forest, so a 50-tree
        probe with max_depth=None tells which depths are distinct; only those from ``FOREST_DEPTHS`` are scored;
      * more trees only average out variance, so the tree count barely interacts with depth: the depth is chosen
        with 50 trees, then one warm-started forest grown to 50, 100, ..., 500 trees scores every count at the cost
        of one 500-tree fit.
    The chosen pair is refit on the whole training part. ``depth`` reports the deepest tree of the final forest.
    """
    from sklearn.ensemble import RandomForestRegressor

    return tune_forest(RandomForestRegressor, split_validation(X, y, seed), X, y, seed, r2_score)


def tune_forest(Forest, split: list, X, y, seed: int, metric: Callable) -> Fitted:
    """``fit_forest``'s two-pass search for a forest class (regressor or classifier) on the train/validation
    ``split``, scored by ``metric(y_val, predictions)``; the chosen pair refit on X, y."""
    X_tr, X_val, y_tr, y_val = split

    def score(forest) -> float:
        return float(metric(y_val, forest.predict(X_val)))

    probe = Forest(FOREST_TREES[0], max_depth=None, random_state=seed).fit(X_tr, y_tr)
    grown = max(t.get_depth() for t in probe.estimators_)
    depth_scores = {None: score(probe)}
    for d in (d for d in FOREST_DEPTHS if d < grown):
        depth_scores[d] = score(Forest(FOREST_TREES[0], max_depth=d, random_state=seed).fit(X_tr, y_tr))
    max_depth = max(depth_scores, key=lambda d: (depth_scores[d], -(d or grown)))
    forest = Forest(FOREST_TREES[0], max_depth=max_depth, warm_start=True, random_state=seed)
    tree_scores = {}
    for n in FOREST_TREES:
        forest.set_params(n_estimators=n)
        tree_scores[n] = score(forest.fit(X_tr, y_tr))
    n_trees = max(tree_scores, key=lambda n: (tree_scores[n], -n))
    model = Forest(n_trees, max_depth=max_depth, random_state=seed).fit(X, y)
    return Fitted(model, max(t.get_depth() for t in model.estimators_),
                  sum(count_tree_parameters(t) for t in model.estimators_),
                  {"n_estimators": n_trees, "max_depth": max_depth, "grown_depth": grown,
                   "depth_scores": {str(k): v for k, v in depth_scores.items()},
                   "tree_scores": {str(k): v for k, v in tree_scores.items()}}, features_per_split=1)


def get_fitter(leaf: str, polish: bool, l1: float | tuple[float, ...] = 0.0,
               k: int | None = None) -> Callable[..., Fitted]:
    def fit_get(X, y, seed: int, budget: Budget) -> Fitted:
        """GET / GET-Linear with the depth (and L1 strength, when ``l1`` holds several) chosen by GETRegressorCV
        (2:1 split, depths 1..12, early stop); with ``k``, every split of every fit uses at most k features."""
        common = dict(leaf=leaf, n_starts=budget.n_starts, n_epochs=budget.n_epochs, random_state=seed,
                      max_split_features=k)
        checkpoint = SearchCheckpoint(budget.searches) if budget.searches else None
        search = GETRegressorCV(depths=DEPTHS, polish=polish and budget.polish_in_cv, l1=l1, **common).fit(
            X, y, checkpoint=checkpoint)
        model = search
        if polish and not budget.polish_in_cv:  # the search's own final tree, polished
            model = GETRegressor(depth=search.best_depth_, l1=search.best_l1_, polish=True, **common).fit(X, y)
        meta = model.tree_.meta
        details = {"cv": search.cv_results_, "train_r2": meta.get("train_r2"),
                   "polish_in_cv": bool(polish and budget.polish_in_cv), "l1": search.best_l1_}
        details.update({name: meta[name] for name in ("polish_seconds", "polish_nodes_visited",
                                                      "polish_nodes_accepted") if name in meta})
        if k is None:
            return Fitted(model, int(search.best_depth_), int(model.tree_.n_parameters), details,
                          features_per_split=widest_split(model.tree_))
        return sparse_fitted(model, int(search.best_depth_), k, details)

    return fit_get


def widest_split(tree) -> int:
    """Most features with a non-zero weight in any split of an ``ObliqueTree``."""
    return int(tree.split_widths.max(initial=0))


def sparse_fitter(leaf: str, k: int) -> Callable[..., Fitted]:
    def fit_sparse(X, y, seed: int, budget: Budget, depth: int) -> Fitted:
        """GET / GET-Linear with at most ``k`` features per split at ``depth``: the depth its dense counterpart's
        search chose on the same split (``Method.depth_from``; a cheaper protocol than the depth search of
        ``get-sparse-K-tuned``)."""
        model = GETRegressor(depth=depth, leaf=leaf, n_starts=budget.n_starts, n_epochs=budget.n_epochs,
                             random_state=seed, max_split_features=k).fit(X, y)
        return sparse_fitted(model, depth, k, {"train_r2": model.tree_.meta.get("train_r2")})

    return fit_sparse


def sparse_fitted(model, depth: int, k: int, details: dict) -> Fitted:
    """A k-sparse fit with every split's width stored; fails, rather than reports, a tree with a wider split.
    Parameters: the non-zero ones (k + 1 per split)."""
    widths = [int(w) for w in model.tree_.split_widths]
    if max(widths) > k:
        raise AssertionError(f"a split uses {max(widths)} features; max_split_features={k}")
    meta = model.tree_.meta
    details = {**details, "split_widths": widths, "max_split_features": k,
               "node_refit_accepted": meta.get("node_refit_accepted"),
               "node_refit_seconds": meta.get("node_refit_seconds")}
    return Fitted(model, depth, int(model.tree_.n_nonzero_parameters), details, features_per_split=max(widths))


def fit_obliquetree(X, y, seed: int, budget: Budget) -> Fitted:
    """The ``obliquetree`` package's oblique tree, depth tuned like GET (2:1 split, 1..12, GET's patience).

    Its fitted structure is not exposed, so the parameter count is left empty.
    """
    from obliquetree import Regressor

    model, depth, cv = tune_depth(lambda d: Regressor(max_depth=d, random_state=seed), X, y, seed, patience=PATIENCE)
    return Fitted(model, depth, None, {"cv": cv})


def fit_linear_tree(X, y, seed: int, budget: Budget) -> Fitted:
    """``linear-tree``'s LinearTreeRegressor (linear leaves, axis-aligned splits), depth tuned like GET."""
    from lineartree import LinearTreeRegressor
    from sklearn.linear_model import LinearRegression

    model, depth, cv = tune_depth(lambda d: LinearTreeRegressor(LinearRegression(), max_depth=d), X, y, seed,
                                  depths=tuple(range(1, 21)), patience=PATIENCE)  # the package allows depth <= 20
    leaves = model.summary(only_leaves=True)
    n_params = 2 * (len(leaves) - 1) + len(leaves) * (X.shape[1] + 1)
    return Fitted(model, depth, n_params, {"cv": cv})


def _package_problem(module: str, probe: Callable[[], Any] | None = None) -> str | None:
    """None when an optional package imports and passes ``probe``; else why the method is skipped."""
    if importlib.util.find_spec(module) is None:
        return f"the {module} package is not installed"
    try:
        if probe is not None:
            probe()
    except Exception as exc:  # an optional package broken by this environment is skipped, not fatal
        return f"{module} does not work here: {type(exc).__name__}: {exc}"
    return None


def _probe_linear_tree() -> None:
    fit_linear_tree(np.random.default_rng(0).random((40, 2)), np.arange(40.0), 0, BUDGETS["tiny"])


@dataclass(frozen=True)
class Method:
    name: str
    label: str
    paper_column: str | None  # column of the MANIFEST table with the paper's figure for this method
    fit: Callable[..., Fitted]
    problem: Callable[[], str | None] = lambda: None  # why the method cannot run here, or None
    depth_from: str | None = None  # fits at the depth this method chose on the same dataset and seed
    max_split_features: int | None = None  # every split of its trees must use at most this many features


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("cart", "CART", "CART", fit_cart),
    Method("rf", "RF", "RF", fit_forest),
    Method("get", "GET", "GET", get_fitter("constant", False)),
    Method("get-polish", "GET+polish", "GET", get_fitter("constant", True)),
    Method("get-linear", "GET-Linear", "GET-Linear", get_fitter("linear", False)),
    Method("get-linear-polish", "GET-Linear+polish", "GET-Linear", get_fitter("linear", True)),
    # The paper's GET-Linear chose its L1 strength from {0, 1e-5} (its appendix on over-fitting): each depth of the
    # search is fitted with both, so the search costs twice GET-Linear's. 1e-5 multiplies sum|a| beside the mean
    # soft loss, as the authors' code normalizes its loss by n.
    Method("get-linear-l1", "GET-Linear, L1 0 or 1e-5", "GET-Linear", get_fitter("linear", False, l1=(0.0, 1e-5))),
    Method("obliquetree", "obliquetree", None, fit_obliquetree, lambda: _package_problem("obliquetree")),
    Method("linear-tree", "linear-tree", None, fit_linear_tree,
           lambda: _package_problem("lineartree", _probe_linear_tree)),
)}
#: Features per split of the sparse methods (issue 20): get-sparse-K and get-linear-sparse-K.
SPARSE_KS = (1, 2, 3)
#: Each fits at the depth its dense counterpart chose, but constant leaves with k=1 (an axis-aligned tree) at the
#: depth CART chose: the dense GET's depth suits oblique splits and was 2 levels shallower than CART's on average
#: (fast budget, seed 0), which left the axis-aligned tree 3.4 points under CART (docs/BENCHMARKS.md).
METHODS.update((m.name, m) for m in (
    Method(f"{dense}-sparse-{k}", f"{label}, k={k}", None, sparse_fitter(leaf, k),
           depth_from="cart" if (leaf, k) == ("constant", 1) else dense, max_split_features=k)
    for dense, label, leaf in (("get", "GET", "constant"), ("get-linear", "GET-Linear", "linear")) for k in SPARSE_KS))
#: The paper's protocol for the sparse methods: each its own depth search (GETRegressorCV with the k), as GET's.
METHODS.update((m.name, m) for m in (
    Method(f"{dense}-sparse-{k}-tuned", f"{label}, k={k}, own depth", None, get_fitter(leaf, False, k=k),
           max_split_features=k)
    for dense, label, leaf in (("get", "GET", "constant"), ("get-linear", "GET-Linear", "linear")) for k in SPARSE_KS))
# obliquetree is cheap and is skipped with a message where it is not installed; linear-tree 0.3.5 is opt-in (it
# calls a private sklearn API, `_validate_data`, that current sklearn no longer has).
DEFAULT_METHODS = ("cart", "rf", "get", "get-polish", "get-linear", "get-linear-polish", "obliquetree")


# ---------------------------------------------------------------- training optimality (paper Tables 3 and 4)
TABLE_DEPTHS = (2, 4, 8)
# The paper's averages of training R2 (%) at depths 2 / 4 / 8 over its datasets (Tables 3 and 4).
PAPER_TRAINING_R2 = {
    "cart": (47.26, 60.90, 81.33),
    "get-alpha1": (55.23, 65.38, 81.91),
    "get-alpha100": (68.48, 77.22, 87.09),
    "get": (70.86, 80.30, 89.45),
    "get-polish": (71.80, 82.40, 91.02),
}
TABLE_LABELS = {"cart": "CART", "get-alpha1": "GET, alpha = 1 fixed", "get-alpha100": "GET, alpha = 100 fixed",
                "get": "GET (iterative alpha), no polish", "get-polish": "GET with polish"}


def training_r2(method: str, X: np.ndarray, y: np.ndarray, depth: int, seed: int, budget: Budget) -> dict:
    """Training R2 (%) of one tree of ``depth`` fitted on all of X by a ``TABLE_METHODS`` method."""
    if method == "cart":
        from sklearn.tree import DecisionTreeRegressor

        model = DecisionTreeRegressor(max_depth=depth, random_state=seed).fit(X, y)
        return {"train_r2": 100 * float(r2_score(y, model.predict(X)))}
    from get_core.config import GETConfig
    from get_core.engine.train import train

    fixed = {"get-alpha1": 1.0, "get-alpha100": 100.0}.get(method)
    config = GETConfig(depth=depth, n_starts=budget.n_starts, n_epochs=budget.n_epochs,
                       polish=method == "get-polish", random_state=seed, fixed_alpha=fixed)
    tree = train(X, y, config)
    return {"train_r2": 100 * float(r2_score(y, tree.predict(X))), "fit_seconds": tree.meta.get("fit_seconds")}


TABLE_METHODS = tuple(PAPER_TRAINING_R2)
