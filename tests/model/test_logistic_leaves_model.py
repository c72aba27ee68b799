"""A tree with logistic leaves (issue 52) as a model: its checks, the model file's version 4 (round trip exact, older
files and other trees unchanged), the Python, C and ONNX exports (equal predict_proba within 1e-12, Hypothesis; ONNX
in float32 within its stated 1e-5), the rules and the HTML report."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core import export
from get_core.model import codegen, model_file
from get_core.model.model_file import ModelFormatError
from get_core.model.onnx_graph import to_onnx
from get_core.model.tree import ObliqueTree
from tests.test_export import needs_gcc, run_c_model
from tests.test_export_classes import HARNESS
from tests.trees import make_class_tree


def with_logits(tree: ObliqueTree, seed: int, scale: float = 5.0, modelled: float = 0.7) -> ObliqueTree:
    """``tree`` with random logistic leaves: a share ``modelled`` of the leaves hold a model, the others their shares
    as logits (mix 0), as training leaves them."""
    rng = np.random.default_rng(seed)
    L, C, p = tree.n_leaves, tree.n_classes, tree.n_features
    has = rng.random(L) < modelled
    tree.logit_coefs = np.where(has[:, None, None], rng.normal(scale=scale, size=(L, C, p)), 0.0)
    tree.logit_intercepts = np.where(has[:, None], rng.normal(scale=scale, size=(L, C)), np.log(tree.leaf_proba))
    tree.logit_mix = np.where(has, rng.uniform(0, 0.2, L), 0.0)
    return ObliqueTree(**{k: getattr(tree, k) for k in tree.__dataclass_fields__})


@st.composite
def logistic_trees(draw):
    depth, p, C = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(2, 4))
    seed = draw(st.integers(0, 10 ** 6))
    tree, X, _ = make_class_tree(depth=depth, p=p, n_classes=C, seed=seed, n_rows=60)
    return with_logits(tree, seed, draw(st.sampled_from([0.1, 5.0, 300.0])), draw(st.floats(0, 1))), X


@settings(max_examples=40, deadline=None)
@given(logistic_trees())
def test_model_file_round_trips_and_the_python_export_equals_predict_proba(drawn):
    tree, X = drawn
    proba = tree.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    loaded = model_file.load_model_json(model_file.model_json(tree))
    for name in ("logit_intercepts", "logit_coefs", "logit_mix"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(tree, name))
    np.testing.assert_array_equal(loaded.predict_proba(X), proba)
    namespace: dict = {}
    exec(compile(codegen.python_source(tree), "generated.py", "exec"), namespace)
    exported = np.array([namespace["predict_proba"](row) for row in X])
    np.testing.assert_allclose(exported, proba, rtol=0, atol=1e-12)
    assert [namespace["predict"](row) for row in X] == list(tree.predict(X))


def test_the_file_is_version_4_only_with_logistic_leaves_and_a_version_3_file_refuses_them():
    tree, X, _ = make_class_tree(depth=2, seed=1)
    assert json.loads(model_file.model_json(tree))["version"] == 3
    data = model_file.to_dict(with_logits(tree, 1))
    assert data["version"] == 4
    with pytest.raises(ModelFormatError, match="'logit_intercepts' belongs to .* version 4"):
        model_file.from_dict({**data, "version": 3})
    with pytest.raises(ModelFormatError, match="'logit_coefs' must have shape"):
        model_file.from_dict({**data, "logit_coefs": data["logit_coefs"][:-1]})
    with pytest.raises(ModelFormatError, match="logit_mix"):
        model_file.from_dict({**data, "logit_mix": [1.0] * len(data["logit_mix"])})


def test_the_tree_checks_its_logistic_fields():
    tree = with_logits(make_class_tree(depth=1, seed=2)[0], 2)
    fields = {k: getattr(tree, k) for k in tree.__dataclass_fields__}
    with pytest.raises(ValueError, match="need all of"):
        ObliqueTree(**{**fields, "logit_mix": None})
    with pytest.raises(ValueError, match="finite"):
        ObliqueTree(**{**fields, "logit_intercepts": np.full_like(tree.logit_intercepts, np.nan)})
    assert tree.n_parameters > make_class_tree(depth=1, seed=2)[0].n_parameters


def test_rules_write_each_logit_in_original_units():
    tree, X, _ = make_class_tree(depth=1, p=2, seed=3, names=["age", "income"])
    tree = with_logits(tree, 3, modelled=1.0)
    text = export.rules_text(tree)
    assert "logit 'class 0' = " in text and "*age" in text and "softmax" in text
    i, row = 0, X[tree.apply(X) == tree.n_leaves][0]  # the first leaf's logits in original units, as written
    for c, line in enumerate(l for l in text.splitlines() if l.strip().startswith("#   logit") and i == 0):
        if c >= tree.n_classes:
            break
        terms = line.split(" = ", 1)[1].split(" + ")
        value = sum(float(t.split("*")[0]) * row[tree.feature_names.index(t.split("*")[1])] for t in terms[:-1])
        scaled = tree.logit_intercepts[0, c] + tree.logit_coefs[0, c] @ tree.scale_X(row[None])[0]
        assert value + float(terms[-1]) == pytest.approx(scaled, rel=1e-9, abs=1e-9)


def _same_labels_off_ties(labels: np.ndarray, tree: ObliqueTree, X: np.ndarray) -> None:
    """The labels ``predict`` gives, but where the top two probabilities are within 1e-12 (the exports' exp and
    sums may round a last bit apart there, which can turn a tie)."""
    proba = np.sort(tree.predict_proba(X), axis=1)
    clear = proba[:, -1] - proba[:, -2] > 1e-12
    assert list(np.asarray(labels)[clear]) == list(tree.predict(X)[clear])


def _with_far_rows(tree: ObliqueTree, X: np.ndarray, seed: int) -> np.ndarray:
    """Training rows, rows far outside the training range (large logits: the softmax's shift matters) and rows with
    NaN or an infinity (every probability NaN, as in predict_proba)."""
    odd = np.repeat(X[:1], 3, axis=0)
    odd[:, 0] = [np.nan, np.inf, -np.inf]
    return np.vstack([X, np.random.default_rng(seed).normal(0, 30, size=(20, tree.n_features)), odd])


@needs_gcc
@settings(max_examples=12, deadline=None)
@given(logistic_trees())
def test_the_c_export_equals_predict_proba(tmp_path_factory, drawn):
    tree, X = drawn
    X = _with_far_rows(tree, X, 0)
    lines = run_c_model(tree, HARNESS, f"{len(X)} {X.shape[1]} {tree.n_classes}", X, tmp_path_factory.mktemp("c"))
    values = [line.split() for line in lines[: len(X)]]
    np.testing.assert_array_equal([int(v[0]) for v in values], tree.apply(X))
    np.testing.assert_allclose([[float(p) for p in v[2:]] for v in values], tree.predict_proba(X), rtol=0,
                               atol=1e-12)
    _same_labels_off_ties([tree.classes[int(v[1])] for v in values], tree, X)


@settings(max_examples=30, deadline=None)
@given(logistic_trees())
def test_the_onnx_export_equals_predict_proba_in_float64_and_within_1e_5_in_float32(drawn):
    ort = pytest.importorskip("onnxruntime")
    tree, X = drawn
    X = _with_far_rows(tree, X, 1)
    session = ort.InferenceSession(to_onnx(tree), providers=["CPUExecutionProvider"])
    label, proba, leaf = session.run(None, {"X": X})
    np.testing.assert_array_equal(leaf, tree.apply(X))
    np.testing.assert_allclose(proba, tree.predict_proba(X), rtol=0, atol=1e-12)
    _same_labels_off_ties(label, tree, X)
    moderate = with_logits(tree, 2, scale=5.0)  # weights of a fitted leaf's size: float32 rounds inputs to 6e-8
    session = ort.InferenceSession(to_onnx(moderate, "float32"), providers=["CPUExecutionProvider"])
    _, single, leaf = session.run(None, {"X": X.astype(np.float32)})
    same = leaf == moderate.apply(X)
    assert same.mean() >= 0.9
    np.testing.assert_allclose(single[same], moderate.predict_proba(X)[same], rtol=0, atol=1e-5)


def test_the_html_report_shows_a_logistic_tree_and_embeds_it():
    tree, X, _ = make_class_tree(depth=2, p=2, seed=4, names=["age", "income"])
    tree = with_logits(tree, 4, modelled=1.0)
    page = export.html_report(tree)
    assert "odds" in page and "logit" in page and "<svg" in page
    start = page.index('id="get-model">') + len('id="get-model">')
    loaded = model_file.load_model_json(page[start:page.index("</script>", start)])
    np.testing.assert_array_equal(loaded.predict_proba(X), tree.predict_proba(X))
