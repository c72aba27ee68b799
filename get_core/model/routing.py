"""Hard routing of rows through an ``ObliqueTree``: compiled code that visits only each row's path, and the numpy
reference it must equal bit for bit.

The contract (``tree.py``'s module docstring): ``xs = (x - x_min) / x_scale``; at branch node t the row goes right
when the sum of ``weights[t-1, j] * xs[j]`` over the split's non-zero weights, in feature order, added left to right
from 0.0, is ``> thresholds[t-1]``. The generated Python and C code add in exactly that order, so ``predict``, the
numpy fallback and every export agree bit for bit (``tests/model/test_routing.py`` checks it on random trees, NaN
and huge inputs included).

``native_route/route.cpp`` is plain C++ built by ``get_core.model.native`` on first use (g++, cached per user) and
loaded with ctypes: no torch, nothing from ``engine/``. Without a compiler (or with ``GET_EXPLORER_NATIVE=0``) the
numpy routing below runs instead: the same numbers, slower (it gathers a (p, n) weight array per level and sums
feature by feature). The trainer routes rows it scaled once per fit through the ``scaled=True`` entry points.
"""

from __future__ import annotations

import ctypes
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from get_core.model import native

#: An ``ObliqueTree`` (not imported: tree.py imports this module, and floors allow no circle).
ObliqueTree = Any

SOURCE = Path(__file__).with_name("native_route") / "route.cpp"
#: No -ffast-math and no fused multiply-add: the sums must round exactly as numpy's and the exports' do.
FLAGS = ["-O3", "-march=native", "-ffp-contract=off", "-fno-fast-math", "-pthread", "-fPIC"]
#: Splits whose non-zero weights fill at least this share of the (B, p) weight array take the dense loop.
DENSE_SHARE = 0.5
Backend = Literal["auto", "native", "numpy"]

_I64, _PTR = ctypes.c_int64, ctypes.c_void_p


@lru_cache(maxsize=1)
def library() -> ctypes.CDLL | None:
    """The compiled router, building it if needed; None when it cannot be built (numpy routing then)."""
    built = native.build(SOURCE, FLAGS)
    if built is None:
        return None
    lib = ctypes.CDLL(str(built))
    lib.get_route_tree.restype = ctypes.c_int
    lib.get_route_tree.argtypes = [_I64, _I64, ctypes.c_int] + [_PTR] * 12 + [ctypes.c_int]
    lib.get_route_models.restype = ctypes.c_int
    lib.get_route_models.argtypes = [_I64, _I64, _I64, ctypes.c_int, ctypes.c_int, _PTR, _PTR, _PTR, ctypes.c_int]
    return lib


def decision_path(tree: ObliqueTree, X: np.ndarray, scaled: bool = False, backend: Backend = "auto") -> np.ndarray:
    """Node ids (heap numbering) each row visits from root to leaf, (n, depth + 1). ``X`` is a float64 (n, p) array,
    in original units, or already scaled by ``tree.scale_X`` when ``scaled``."""
    return _route(tree, X, scaled, backend, want_path=True)[0]


def leaves(tree: ObliqueTree, X: np.ndarray, scaled: bool = False, backend: Backend = "auto") -> np.ndarray:
    """Heap id of the leaf each row reaches, (n,)."""
    return _route(tree, X, scaled, backend)[0]


def predict_scaled(tree: ObliqueTree, X: np.ndarray, scaled: bool = False, backend: Backend = "auto",
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(leaf heap ids, predictions in scaled target units): the leaf's intercept, plus for a linear tree its
    coefficients' sum over all features (0.0 plus each term in feature order), clamped to the leaf's bounds."""
    leaf, linear_sum = _route(tree, X, scaled, backend, linear=tree.leaf_type == "linear")
    i = leaf - tree.n_leaves
    raw = tree.leaf_intercepts[i]
    if linear_sum is not None:  # a constant leaf ignores x: 0 * NaN must not hide its value (as in codegen)
        raw = raw + linear_sum
    return leaf, np.clip(raw, tree.leaf_lower[i], tree.leaf_upper[i])


def route_models(split: np.ndarray, Xa: np.ndarray, starts: int, threads: int = 1) -> np.ndarray | None:
    """The trainer's batched hard routing in float32: leaf index (M, n) of every row under each of M = B x starts
    models, where ``split`` (M, N, p+1) holds each split's weights and minus its threshold and ``Xa`` (B, n, p+1) the
    rows with a ones column; a row goes right where the fused multiply-add sum over the p+1 columns is > 0. None
    without the compiled router. Callers check it against their own routing before relying on it (``engine.leaves``).
    """
    lib = library()
    if lib is None:
        return None
    split, Xa = (np.ascontiguousarray(a, dtype=np.float32) for a in (split, Xa))
    M, N, p1 = split.shape
    B, n, _ = Xa.shape
    leaf = np.empty((M, n), dtype=np.int64)
    lib.get_route_models(B, starts, n, p1, (N + 1).bit_length() - 1, split.ctypes.data, Xa.ctypes.data,
                         leaf.ctypes.data, threads)
    return leaf


# ---------------------------------------------------------------------------------------------- one tree
def _route(tree: ObliqueTree, X: np.ndarray, scaled: bool, backend: Backend, want_path: bool = False,
           linear: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """(path (n, D+1) or leaf (n,), the linear leaf sums or None)."""
    lib = None if backend == "numpy" else library()
    if lib is None:
        if backend == "native":
            raise RuntimeError("the compiled router could not be built (is g++ installed?)")
        return _numpy_route(tree, X, scaled, want_path, linear)
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, p = X.shape
    w_start, w_feature, w_value = _sparse_splits(tree.weights)
    dense = np.ascontiguousarray(tree.weights, dtype=np.float64) if len(w_value) >= DENSE_SHARE * tree.weights.size \
        else None
    path = np.empty((n, tree.depth + 1), dtype=np.int64) if want_path else None
    leaf = None if want_path else np.empty(n, dtype=np.int64)
    linear_sum = np.empty(n) if linear else None
    coefs = np.ascontiguousarray(tree.leaf_coefs, dtype=np.float64) if linear else None
    x_min, x_scale, thresholds = (np.ascontiguousarray(a, dtype=np.float64)
                                  for a in (tree.x_min, tree.x_scale, tree.thresholds))
    lib.get_route_tree(n, p, tree.depth, X.ctypes.data, *(None if scaled else _ptr(a) for a in (x_min, x_scale)),
                       *map(_ptr, (w_start, w_feature, w_value, thresholds)), _ptr(dense), _ptr(coefs), _ptr(path),
                       _ptr(leaf), _ptr(linear_sum), 1)
    return (path if want_path else leaf), linear_sum


def _sparse_splits(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The splits' non-zero terms as compressed rows (offsets (B+1,), features, weights), in feature order."""
    rows, features = np.nonzero(weights)
    start = np.zeros(weights.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=weights.shape[0]), out=start[1:])
    return start, features.astype(np.int64), np.ascontiguousarray(weights[rows, features])


def _ptr(a: np.ndarray | None) -> int | None:
    return None if a is None else a.ctypes.data


def _numpy_route(tree: ObliqueTree, X: np.ndarray, scaled: bool, want_path: bool,
                 linear: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """The reference routing: per level, each row's split weights gathered as a (p, n) array and summed feature by
    feature (``ordered_dot``)."""
    xs_t = (np.asarray(X, dtype=np.float64) if scaled else _scale(tree, X)).T  # (p, n)
    n = xs_t.shape[1]
    path = np.empty((n, tree.depth + 1), dtype=np.int64)
    node = np.ones(n, dtype=np.int64)
    path[:, 0] = node
    for level in range(tree.depth):
        go_right = ordered_dot(tree.weights.T[:, node - 1], xs_t, skip_zeros=True) > tree.thresholds[node - 1]
        node = 2 * node + go_right
        path[:, level + 1] = node
    linear_sum = ordered_dot(tree.leaf_coefs.T[:, node - tree.n_leaves], xs_t) if linear else None
    return (path if want_path else node), linear_sum


def _scale(tree: ObliqueTree, X: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # a huge finite value may scale to inf, as IEEE (and the exports) give it
        return (np.asarray(X, dtype=np.float64) - tree.x_min) / tree.x_scale


def ordered_dot(a_t: np.ndarray, b_t: np.ndarray, skip_zeros: bool = False) -> np.ndarray:
    """Per row i, the sum over features j of ``a_t[j, i] * b_t[j, i]`` (both (p, n)), added left to right from 0.0:
    the order the generated Python and C code add in, so that they predict bit for bit what ``predict`` does
    (einsum and matmul add in orders of their own, which can differ in the last bits or, through cancellation,
    send a row the other way). ``skip_zeros`` (splits): a zero weight's term is left out, so a split ignores the
    features it does not use (a NaN there cannot route the row) and the exports write only its non-zero terms;
    on finite rows this changes no comparison (adding a zero product only flips a zero sum's sign)."""
    total = np.zeros(a_t.shape[1])
    with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN as IEEE gives them, as the generated code does
        for a, b in zip(a_t, b_t):
            total += np.where(a != 0, a * b, 0.0) if skip_zeros else a * b
    return total
