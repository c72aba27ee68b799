"""The compiled router against the numpy routing it replaces, bit for bit, on random trees and hostile rows.

Every export is checked against ``predict`` elsewhere (tests/test_export.py, tests/test_properties.py); these tests
pin ``predict``, ``apply`` and ``decision_path`` through the compiled router to the numpy reference, on enough rows
to take the router's dense loop (16 finite rows at a time) as well as its exact loop (rows with NaN or infinities,
sparse splits, the last rows of a table)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from get_core.model import codegen, routing
from get_core.model.tree import ObliqueTree
from tests.trees import make_tree

needs_router = pytest.mark.skipif(routing.library() is None, reason="the compiled router could not be built (g++)")
pytestmark = needs_router

FINITE = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, allow_subnormal=True)
HOSTILE = st.sampled_from([np.nan, np.inf, -np.inf, 1e308, -1e308, 5e-324, 0.0, -0.0])


@st.composite
def trees(draw) -> ObliqueTree:
    """Depth 1-6 over 1-24 features, each weight zero with some probability (dense, sparse, or in between)."""
    depth, p = draw(st.integers(1, 6)), draw(st.integers(1, 24))
    branches, leaves = 2 ** depth - 1, 2 ** depth
    numbers = lambda shape, elements=FINITE: draw(arrays(np.float64, shape, elements=elements))  # noqa: E731
    weights = numbers((branches, p)) * (draw(arrays(np.float64, (branches, p), elements=st.floats(0, 1)))
                                        >= draw(st.sampled_from([0.0, 0.3, 0.7, 0.95])))
    leaf_type = draw(st.sampled_from(["constant", "linear"]))
    lower, upper = np.sort(numbers((2, leaves)), axis=0)
    return ObliqueTree(
        weights=weights, thresholds=numbers(branches), leaf_intercepts=numbers(leaves),
        leaf_coefs=numbers((leaves, p)) if leaf_type == "linear" else np.zeros((leaves, p)),
        n_samples=np.ones(2 * leaves - 1, dtype=np.int64), node_values=np.zeros(2 * leaves - 1),
        x_min=numbers(p), x_scale=numbers(p, st.floats(1e-3, 1e3)), y_min=draw(FINITE),
        y_scale=draw(st.floats(1e-3, 1e3)), leaf_type=leaf_type,
        leaf_lower=lower if leaf_type == "linear" else None, leaf_upper=upper if leaf_type == "linear" else None)


def table(draw, p: int) -> np.ndarray:
    """1-70 rows: ordinary numbers, a few hostile values (NaN, infinities, the largest doubles) on some rows."""
    n = draw(st.integers(1, 70))
    X = draw(arrays(np.float64, (n, p), elements=st.floats(-1e7, 1e7)))
    for _ in range(draw(st.integers(0, 4))):
        X[draw(st.integers(0, n - 1)), draw(st.integers(0, p - 1))] = draw(HOSTILE)
    return X


def assert_routes_alike(tree: ObliqueTree, X: np.ndarray) -> None:
    for scaled, rows in ((False, X), (True, tree.scale_X(X))):
        np.testing.assert_array_equal(routing.decision_path(tree, rows, scaled, "native"),
                                      routing.decision_path(tree, rows, scaled, "numpy"))
        np.testing.assert_array_equal(routing.leaves(tree, rows, scaled, "native"),
                                      routing.leaves(tree, rows, scaled, "numpy"))
        native_leaf, native = routing.predict_scaled(tree, rows, scaled, "native")
        numpy_leaf, reference = routing.predict_scaled(tree, rows, scaled, "numpy")
        np.testing.assert_array_equal(native_leaf, numpy_leaf)
        np.testing.assert_array_equal(native, reference)  # NaN where NaN, every other value to the last bit


@settings(max_examples=250, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(trees(), st.data())
def test_the_compiled_router_routes_and_predicts_as_the_numpy_routing_does(tree, data):
    assert_routes_alike(tree, table(data.draw, tree.n_features))


@pytest.mark.parametrize("leaf", ["constant", "linear"])
@pytest.mark.parametrize("depth, p", [(1, 1), (4, 10), (8, 40), (12, 3), (6, 16), (6, 203)])  # 8-wide blocks, tails
def test_fitted_like_trees_agree_on_thousands_of_rows_and_through_the_public_methods(depth, p, leaf):
    tree, X, _ = make_tree(depth=depth, p=p, leaf=leaf, seed=depth, n_rows=3001)
    assert_routes_alike(tree, X)
    np.testing.assert_array_equal(tree.apply(X), routing.leaves(tree, X, backend="numpy"))
    np.testing.assert_array_equal(tree.decision_path(X), routing.decision_path(tree, X, backend="numpy"))
    np.testing.assert_array_equal(tree.predict(X), tree.y_min + tree.y_scale
                                  * routing.predict_scaled(tree, X, backend="numpy")[1])


def test_a_split_ignores_a_nan_in_a_feature_it_does_not_use_and_sends_a_nan_it_uses_left():
    tree, X, _ = make_tree(depth=3, p=6, seed=2, n_rows=64)
    tree.weights[:, 5] = 0.0  # no split uses feature 5
    X = X.copy()
    before = tree.decision_path(X)
    X[:, 5] = np.nan
    np.testing.assert_array_equal(tree.decision_path(X), before)
    X[:, 0] = np.nan  # every split uses feature 0: NaN > b is false, so every row goes left
    assert np.all(tree.apply(X) == tree.n_leaves)
    assert_routes_alike(tree, X)


def test_a_dense_tree_on_rows_that_overflow_when_scaled_routes_as_the_generated_python():
    tree, X, _ = make_tree(depth=5, p=8, leaf="linear", seed=3, n_rows=48)
    X = X.copy()
    X[::5] *= 1e306  # scaled to +-inf, products inf - inf = NaN
    namespace: dict = {}
    exec(compile(codegen.python_source(tree), "generated.py", "exec"), namespace)
    assert [namespace["leaf"](list(x)) for x in X] == tree.apply(X).tolist()
    np.testing.assert_array_equal([namespace["predict"](list(x)) for x in X], tree.predict(X))
    assert_routes_alike(tree, X)


def test_without_the_compiled_router_predict_uses_the_numpy_routing(monkeypatch):
    tree, X, _ = make_tree(depth=4, p=5, leaf="linear", seed=5, n_rows=100)
    expected = tree.predict(X)
    monkeypatch.setenv("GET_EXPLORER_NATIVE", "0")
    routing.library.cache_clear()
    try:
        assert routing.library() is None
        np.testing.assert_array_equal(tree.predict(X), expected)
        with pytest.raises(RuntimeError, match="g\\+\\+"):
            routing.leaves(tree, X, backend="native")
    finally:
        monkeypatch.delenv("GET_EXPLORER_NATIVE")
        routing.library.cache_clear()
    assert routing.library() is not None


@pytest.mark.parametrize("without", [["-mno-avx512f"], ["-mno-avx512f", "-mno-avx2"]])
def test_the_kernel_built_for_an_older_cpu_routes_and_predicts_as_the_numpy_routing_does(without, monkeypatch):
    """The kernel is built with -march=native on the user's machine: a CPU without AVX-512 (or AVX2) compiles the
    plain loops, which must give the same bits; this machine's build takes the vector paths."""
    monkeypatch.setattr(routing, "FLAGS", [*routing.FLAGS, *without])
    routing.library.cache_clear()
    try:
        if routing.library() is None:
            pytest.skip("no C++ compiler")
        for leaf in ("constant", "linear"):
            for depth, p in [(1, 1), (4, 10), (8, 40), (6, 203)]:
                tree, X, _ = make_tree(depth=depth, p=p, leaf=leaf, seed=depth, n_rows=1001)
                X[::97, p // 2] = np.nan
                assert_routes_alike(tree, X)
    finally:
        routing.library.cache_clear()  # the next test builds this machine's kernel again (cached on disk)
