"""A tree with logistic leaves (issue 52) as a model: its checks, the model file's version 4 (round trip exact, older
files and other trees unchanged), the Python export (equal predict_proba within 1e-12, Hypothesis), the rules, and
the exports that refuse it in a sentence (C, ONNX, the HTML report)."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core import export
from get_core.model import codegen, model_file
from get_core.model.counterfactual import counterfactual
from get_core.model.model_file import ModelFormatError
from get_core.model.onnx_graph import to_onnx
from get_core.model.tree import ObliqueTree
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


def test_rules_write_each_logit_and_the_other_exports_refuse_in_a_sentence():
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
    for make in (lambda: codegen.c_source(tree), lambda: to_onnx(tree), lambda: export.html_report(tree),
                 lambda: counterfactual(tree, X[0])):
        with pytest.raises(ValueError, match="does not handle logistic leaves yet"):
            make()
