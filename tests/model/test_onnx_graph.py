"""The ONNX export run by onnxruntime against ``predict``: the same leaves, and in float64 the same predictions to
the last bit, ``predict``'s NaN and infinity rules exactly, on random trees, on fits of real tables, and float32 close."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from bench.common import DEFAULT_DATA_DIR
from get_core import GETRegressor, to_onnx
from get_core.model.tree import ObliqueTree
from tests.trees import make_tree, stump

ort = pytest.importorskip("onnxruntime")
EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "examples"
SHARED = DEFAULT_DATA_DIR  # ../shared/datasets: not part of the repository
REGRESSION_SETS = ["abalone", "ailerons", "airfoil_self_noise", "cpu_act", "cpu_small", "delta_elevators",
                   "electrical_grid_stability", "gas_turbine_co_2015", "gas_turbine_nox_2015", "naval_compressor",
                   "naval_turbine", "puma8NH"]


def run(model, X: np.ndarray, dtype: str = "float64") -> tuple[np.ndarray, np.ndarray]:
    session = ort.InferenceSession(to_onnx(model, dtype), providers=["CPUExecutionProvider"])
    prediction, leaf = session.run(None, {"X": np.asarray(X, dtype=dtype)})
    return prediction, leaf


def assert_close_to_predict(tree: ObliqueTree, X: np.ndarray) -> None:
    """The same leaf for every row (the splits' MatMul could only move a row within rounding of a threshold), and
    then the same doubles: the leaf's arithmetic, a linear leaf's sum order included, is ``predict``'s."""
    prediction, leaf = run(tree, X)
    np.testing.assert_array_equal(leaf, tree.apply(X))
    np.testing.assert_array_equal(prediction, tree.predict(X))  # NaN where NaN, else to the last bit


@pytest.mark.parametrize("leaf", ["constant", "linear"])
@pytest.mark.parametrize("depth, p, seed", [(1, 1, 0), (3, 5, 1), (6, 20, 2), (9, 4, 3)])
def test_onnxruntime_predicts_what_predict_does_on_random_trees(depth, p, seed, leaf):
    tree, X, _ = make_tree(depth=depth, p=p, leaf=leaf, seed=seed, n_rows=2000)
    outside = np.random.default_rng(seed).normal(10, 30, size=(300, p))  # far outside the training range
    assert_close_to_predict(tree, np.vstack([X, outside]))


@st.composite
def integer_trees(draw) -> tuple[ObliqueTree, np.ndarray]:
    """Small integer weights, thresholds, scaling and rows (every sum is exact in any order, so ONNX must agree
    exactly), with NaN and infinities in features the splits use and in features they leave out."""
    depth, p = draw(st.integers(1, 4)), draw(st.integers(1, 6))
    ints = lambda shape, lo=-3, hi=3: draw(arrays(np.float64, shape, elements=st.integers(lo, hi)))  # noqa: E731
    leaf_type = draw(st.sampled_from(["constant", "linear"]))
    tree = ObliqueTree(weights=ints((2 ** depth - 1, p)), thresholds=ints(2 ** depth - 1) + 0.5,
                       leaf_intercepts=ints(2 ** depth, -50, 50),
                       leaf_coefs=ints((2 ** depth, p)) if leaf_type == "linear" else np.zeros((2 ** depth, p)),
                       n_samples=np.ones(2 ** (depth + 1) - 1), node_values=np.zeros(2 ** (depth + 1) - 1),
                       x_min=ints(p), x_scale=np.ones(p), y_min=draw(st.integers(-5, 5)), y_scale=2.0,
                       leaf_type=leaf_type, leaf_lower=np.full(2 ** depth, -20.0) if leaf_type == "linear" else None)
    values = st.one_of(st.integers(-9, 9).map(float), st.sampled_from([np.nan, np.inf, -np.inf]))
    return tree, draw(arrays(np.float64, (draw(st.integers(1, 30)), p), elements=values))


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(integer_trees())
def test_nan_and_infinities_route_as_in_predict(case):
    tree, X = case
    prediction, leaf = run(tree, X)
    np.testing.assert_array_equal(leaf, tree.apply(X))
    np.testing.assert_array_equal(prediction, tree.predict(X))  # NaN where NaN, else the same doubles


def test_a_fitted_estimator_on_each_bundled_example_exports_and_float32_stays_close():
    for path in sorted(EXAMPLES.glob("*.csv")):
        frame = pd.read_csv(path)
        X, y = frame.drop(columns="target").select_dtypes("number").to_numpy(dtype=float), frame["target"].to_numpy()
        for leaf in ("constant", "linear"):
            model = GETRegressor(depth=4, leaf=leaf, n_starts=1, n_epochs=30, random_state=0).fit(X, y)
            assert_close_to_predict(model.tree_, X)
            single, _ = run(model, X, "float32")
            assert np.max(np.abs(single - model.predict(X))) <= 0.5 * np.ptp(y)  # a leaf or two away at most
            assert np.median(np.abs(single - model.predict(X))) <= 1e-5 * np.ptp(y)


@pytest.mark.skipif(not all((SHARED / f"{n}.csv").exists() for n in REGRESSION_SETS),
                    reason=f"no shared datasets in {SHARED}")
@pytest.mark.parametrize("name", REGRESSION_SETS)
def test_small_fits_of_the_shared_datasets_export_to_the_last_bit(name):
    frame = pd.read_csv(SHARED / f"{name}.csv")
    X, y = frame.drop(columns="target").select_dtypes("number").to_numpy(dtype=float), frame["target"].to_numpy()
    rows = np.random.default_rng(0).permutation(len(y))[:2000]
    tree = GETRegressor(depth=5, leaf="linear", n_starts=1, n_epochs=20, polish=False,  # the export, not the polish
                        random_state=0).fit(X[rows], y[rows]).tree_
    assert_close_to_predict(tree, X)


def test_the_model_declares_the_ir_version_its_opset_needs_so_older_runtimes_load_it():
    """onnx 1.23 writes IR 14 by default, which onnxruntime 1.30 refuses ("max supported IR version: 13")."""
    import onnx

    model = onnx.load_from_string(to_onnx(make_tree(depth=2, p=3, seed=0)[0]))
    assert [o.version for o in model.opset_import] == [17]
    assert model.ir_version == 8  # ONNX's table: opset 17 came with IR 8 (onnx 1.12, onnxruntime 1.12 and later)


def test_bad_arguments_get_a_clear_sentence():
    with pytest.raises(ValueError, match="dtype must be one of"):
        to_onnx(stump(), dtype="float16")
    with pytest.raises(TypeError, match="fitted GET estimator or an ObliqueTree"):
        to_onnx("tree")
    with pytest.raises(TypeError, match="fitted GET estimator or an ObliqueTree"):
        to_onnx(GETRegressor())  # not fitted: no tree_


@pytest.mark.skipif(not hasattr(ObliqueTree, "is_classifier"), reason="classification trees are not in this branch")
@pytest.mark.parametrize("classes", [["maybe", "no", "yes"], [3, 7, 9], [0.5, 1.5], [False, True]])
def test_a_classification_tree_exports_its_labels_and_probabilities(classes):
    base, X, _ = make_tree(depth=3, p=4, seed=1)
    proba = np.random.default_rng(0).dirichlet(np.ones(len(classes)), size=base.n_leaves)
    proba[0] = 1.0 / len(classes)  # a tie: the first class wins, as in predict
    n = base.n_nodes
    tree = ObliqueTree(weights=base.weights, thresholds=base.thresholds, leaf_intercepts=np.zeros(base.n_leaves),
                       leaf_coefs=np.zeros((base.n_leaves, 4)), n_samples=np.ones(n, dtype=np.int64),
                       node_values=np.full(n, 0.5), x_min=base.x_min, x_scale=base.x_scale, leaf_type="classes",
                       classes=classes, leaf_proba=proba, node_counts=np.ones((n, len(classes))))
    session = ort.InferenceSession(to_onnx(tree), providers=["CPUExecutionProvider"])
    label, probabilities, leaf = session.run(None, {"X": X})
    np.testing.assert_array_equal(leaf, tree.apply(X))
    np.testing.assert_array_equal(label, tree.predict(X))
    np.testing.assert_array_equal(probabilities, tree.predict_proba(X))


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(exponent=st.integers(0, 99), seed=st.integers(0, 5))
def test_float32_splits_of_any_magnitude_the_loader_takes_route_as_predict(exponent, seed):
    """Weights near 1e100 (the model file's bound) overflowed float32 without a word: leaves agreed on 0.5% of rows.
    Each split scaled by 10**exponent is the same split; the float32 graph routes as ``predict`` but for rows within
    float32's rounding of a threshold."""
    tree, X, _ = make_tree(depth=3, p=4, seed=seed)
    tree.weights, tree.thresholds = tree.weights * 10.0 ** exponent, tree.thresholds * 10.0 ** exponent
    _, leaf = run(tree, X, "float32")
    assert np.mean(leaf == tree.apply(X)) >= 0.98


@pytest.mark.parametrize("field, value, said", [("leaf_intercepts", 1e60, "leaf_intercepts reach 1e\\+60"),
                                                ("y_scale", 1e39, "y_scale reach 1e\\+39"),
                                                ("y_scale", 1e30, "leaves predict up to")])
def test_a_model_beyond_float32s_range_is_refused_in_float32_with_a_sentence(field, value, said):
    tree, X, _ = make_tree(depth=2, p=3, seed=0)
    setattr(tree, field, np.full_like(getattr(tree, field), value) if field == "leaf_intercepts" else value)
    if field == "y_scale":
        tree.leaf_intercepts = np.full_like(tree.leaf_intercepts, 1e10)
    with pytest.raises(ValueError, match=f"cannot be exported with dtype='float32': its {said}.*dtype='float64'"):
        to_onnx(tree, dtype="float32")
    to_onnx(tree)  # float64 holds it
