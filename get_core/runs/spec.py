"""What the pages and the worker agree on about a run, free of torch and of the trainer: the run request's search,
the artifacts' names, the rows a run trains and tests on, and the GET fit the Compare page puts beside the run's.

A run's parameters (``RunStore.create_run``) are JSON::

    {"config": {GETConfig settings}, "data": DataSpec.to_dict(), "test_fraction": 0.25, "seed": 0,
     "search": {"depths": [1, ..., D], "split_features": "auto" | None, "leaf": "auto" | ... | absent} | absent,
     "class_weight": ... | absent}

A class run's leaves are ``config["class_leaf"]`` ("constant": class shares, "logistic"; absent in runs stored before
logistic leaves: class shares); a class search's ``leaf`` may ask for "auto" instead (``search_leaf``).

The worker side of runs/ (``training``, ``search``, ``worker``, ``remote``, ``measure``) trains them through the
estimators; pages import this module, the store, the launcher, the estimate and the results, never the worker side.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

import numpy as np

from get_core.config import GETConfig, split_feature_path

SEARCH = "search"  # the artifact with a search's points and its choice
FITS = "fits"  # the artifact listing each fit's first stage on the loss curves and its name (views.curves)
TREE_PREFIX = "search-tree-"  # + key: one search fit's tree

#: Features per split of the sparse tree fitted beside a dense run: the most the diagram writes as a whole sentence
#: (``views.labels.SENTENCE_TERMS``), and the sparsest level that kept dense accuracy in the first measurement
#: (docs/BENCHMARKS.md "Sparse splits": k=3 within 0.1 point of dense with linear leaves; k=2 lost 10 more points
#: than k=3 with constant leaves on electrical_grid_stability).
COUNTERPART_K = 3


def search_spec(params: Mapping[str, Any]) -> dict | None:
    """The run's search request, or None for a run of one fixed tree."""
    search = params.get("search")
    return dict(search) if search else None


def tree_key(depth: int, max_split_features: int | None, leaf: str | None = None) -> str:
    """A search fit's name in URLs and artifacts: ``d3-k2``, ``d3-kany`` (dense splits); a tree with logistic leaves
    ``d3-kany-logistic``, so a depth scored with its logistic leaves and with its class shares keeps both trees (the
    names of class-share and regression fits are those of runs stored before logistic leaves)."""
    name = f"d{int(depth)}-k{'any' if max_split_features is None else int(max_split_features)}"
    return f"{name}-logistic" if leaf == "logistic" else name


def leaves_text(params: Mapping[str, Any]) -> str:
    """A run's leaves as set, in a word: its config's ``leaf`` ("constant", "linear"), or a class run's
    ``search_leaf`` ("constant", "logistic", or "chosen" when the search chooses them)."""
    if (params.get("data") or {}).get("task") != "classification":
        return str(params.get("config", {}).get("leaf"))
    leaf = search_leaf(params)
    return "chosen" if leaf == "auto" else leaf


def search_leaf(params: Mapping[str, Any]) -> str:
    """The leaves a class run's search fits: its search's ``leaf`` ("auto": chosen by the search), else the config's
    ``class_leaf`` (class shares for a run stored before there was a choice)."""
    return (params.get("search") or {}).get("leaf") or params.get("config", {}).get("class_leaf") or "constant"


def n_search_fits(search: Mapping[str, Any], n_features: int) -> int:
    """The most fits a search can make (every depth for every k, then the refit); patience usually stops it sooner."""
    ks = split_feature_path(search.get("split_features"), n_features) if search.get("split_features") else [None]
    return len(search["depths"]) * len(ks) + 1


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
