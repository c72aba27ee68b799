"""Property-based tests (Hypothesis) of everything that reads input from anywhere or writes a file.

For any generated input ``prepare``, the model-file loader and every exporter return a result or raise the project's
own error (DataError, ModelFormatError), never anything else; a valid generated model round-trips exactly (dict, JSON
text) and its exported Python source predicts exactly what ``predict`` does. Example counts are in ``EXAMPLES``.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from get_core.model import codegen, model_file, prune

from get_core import export
from get_core.data.columns import DataError
from get_core.data.encoding import MISSING_POLICIES, DataSpec, prepare
from get_core.model.model_file import ModelFormatError
from get_core.model.tree import LEAF_TYPES, ObliqueTree
from get_core.views import diagram, diagram_content, labels

EXAMPLES = {"round_trip": 300, "code": 200, "exporters": 100, "c": 10, "mutated": 500, "text": 500, "prepare": 400,
            "sparse": 150}


def examples(kind: str):
    # derandomize: CI runs the same examples every time (a new random search may find new cases: run one when
    # changing the code under test by setting derandomize=False locally)
    return settings(max_examples=EXAMPLES[kind], deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------------------------- strategies
#: Names as hostile as text gets: any character but a lone surrogate (refused, see test_model_file), and the
#: characters that break quoting in JSON, Python, C, DOT, HTML and text files.
HOSTILE = ['"', "'", "\\", "\n", "\r", "\\u0000", "*/", "/*", "??=", "<b>&amp;", "\u2028", "\x85", "a=b", "x0", ""]
NAME = st.one_of(st.text(st.characters(exclude_categories=["Cs"]), max_size=10), st.sampled_from(HOSTILE),
                 st.lists(st.sampled_from(HOSTILE), max_size=4).map("".join))
FINITE = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, allow_subnormal=True)
ANY_FLOAT = st.one_of(FINITE, st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True))
JSON_VALUE = st.recursive(st.none() | st.booleans() | st.integers(-10 ** 20, 10 ** 20) | FINITE | NAME,
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAME, inner, max_size=3),
                          max_leaves=8)


@st.composite
def trees(draw) -> ObliqueTree:
    """A valid tree: depth 1-4, 1-4 features with hostile names, random numbers within the model file's bounds."""
    depth = draw(st.integers(1, 4))
    names = draw(st.lists(NAME, min_size=1, max_size=4, unique=True))
    p, branches, leaves = len(names), 2 ** depth - 1, 2 ** depth
    leaf_type = draw(st.sampled_from(LEAF_TYPES))
    numbers = lambda shape, elements=FINITE: draw(arrays(np.float64, shape, elements=elements))  # noqa: E731
    lower, upper = np.full(leaves, -np.inf), np.full(leaves, np.inf)
    if leaf_type == "linear":
        ends = np.sort(numbers((leaves, 2)), axis=1)
        bounded = draw(arrays(np.bool_, leaves))
        lower[bounded], upper[bounded] = ends[bounded, 0], ends[bounded, 1]
    return ObliqueTree(
        weights=numbers((branches, p)), thresholds=numbers(branches), leaf_intercepts=numbers(leaves),
        leaf_coefs=numbers((leaves, p)) if leaf_type == "linear" else np.zeros((leaves, p)),
        n_samples=draw(arrays(np.int64, 2 * leaves - 1, elements=st.integers(0, 10 ** 6))),
        node_values=numbers(2 * leaves - 1, st.one_of(FINITE, st.just(math.nan))),
        x_min=numbers(p), x_scale=numbers(p, st.floats(1e-3, 1e3)), y_min=draw(FINITE),
        y_scale=draw(st.floats(1e-3, 1e3)), feature_names=names, leaf_type=leaf_type,
        meta=draw(st.dictionaries(NAME.filter(lambda key: key != "encoding"), JSON_VALUE, max_size=3)),
        leaf_lower=lower, leaf_upper=upper)  # meta["encoding"] must be a run's encoding: test_model_file


#: Class labels of one kind each, as ``np.unique`` sorts them: hostile text (no NUL, which numpy drops from the end of
#: a string), integers of any size numpy holds, finite numbers, booleans.
LABELS = st.one_of(
    st.lists(NAME.filter(lambda text: "\x00" not in text), min_size=1, max_size=6, unique=True),
    st.lists(st.integers(-2 ** 63, 2 ** 63 - 1), min_size=1, max_size=6, unique=True),
    st.lists(FINITE, min_size=1, max_size=6, unique=True), st.lists(st.booleans(), min_size=1, max_size=2, unique=True),
).map(lambda labels: sorted(set(labels)))


@st.composite
def class_trees(draw) -> ObliqueTree:
    """A valid classification tree: ``trees()``' splits and scaling, 1-6 classes of one kind, random leaf shares
    (ties and zeros included) and node counts."""
    shape = draw(trees())
    classes = draw(LABELS)
    leaves, nodes, c = shape.n_leaves, shape.n_nodes, len(classes)
    weights = draw(arrays(np.float64, (leaves, c), elements=st.sampled_from([0.0, 1.0, 2.0]) | st.floats(0, 1e3)))
    weights[weights.sum(axis=1) == 0, 0] = 1.0
    counts = draw(arrays(np.float64, (nodes, c), elements=st.sampled_from([0.0, 1.0]) | st.floats(0, 1e6)))
    return ObliqueTree(
        weights=shape.weights, thresholds=shape.thresholds, leaf_intercepts=np.zeros(leaves),
        leaf_coefs=np.zeros_like(shape.leaf_coefs), n_samples=shape.n_samples,
        node_values=draw(arrays(np.float64, nodes, elements=st.floats(0, 1) | st.just(math.nan))),
        x_min=shape.x_min, x_scale=shape.x_scale, feature_names=shape.feature_names, leaf_type="classes",
        meta=shape.meta, classes=classes, leaf_proba=weights / weights.sum(axis=1, keepdims=True), node_counts=counts)


#: Regression and classification trees alike.
ANY_TREE = st.one_of(trees(), class_trees())


@st.composite
def sparse_trees(draw) -> ObliqueTree:
    """A tree whose every split uses 1-3 of 4-8 features (``max_split_features``' trees), names f0, f1, ..."""
    depth, p = draw(st.integers(1, 4)), draw(st.integers(4, 8))
    branches, leaves = 2 ** depth - 1, 2 ** depth
    weights = np.zeros((branches, p))
    for row in weights:
        support = draw(st.lists(st.integers(0, p - 1), min_size=1, max_size=3, unique=True))
        # no subnormal weights: divided by x_scale one can underflow to an original-unit 0 (training never makes one)
        row[support] = [draw(st.floats(-1e3, 1e3).filter(lambda v: abs(v) > 1e-6)) for _ in support]
    numbers = lambda shape, elements=FINITE: draw(arrays(np.float64, shape, elements=elements))  # noqa: E731
    leaf_type = draw(st.sampled_from(LEAF_TYPES))
    return ObliqueTree(
        weights=weights, thresholds=numbers(branches), leaf_intercepts=numbers(leaves),
        leaf_coefs=numbers((leaves, p)) if leaf_type == "linear" else np.zeros((leaves, p)),
        n_samples=np.ones(2 * leaves - 1, dtype=np.int64), node_values=np.zeros(2 * leaves - 1),
        x_min=numbers(p), x_scale=numbers(p, st.floats(1e-3, 1e3)), y_min=draw(FINITE),
        y_scale=draw(st.floats(1e-3, 1e3)), feature_names=[f"f{j}" for j in range(p)], leaf_type=leaf_type)


def rows(p: int):
    """Rows to score: mostly ordinary numbers, with NaN, infinities and huge values among them."""
    return arrays(np.float64, st.tuples(st.integers(1, 8), st.just(p)),
                  elements=st.one_of(st.floats(-1e7, 1e7), ANY_FLOAT))


def assert_same_tree(a: ObliqueTree, b: ObliqueTree) -> None:
    for name in ("weights", "thresholds", "leaf_intercepts", "leaf_coefs", "n_samples", "node_values", "x_min",
                 "x_scale", "leaf_lower", "leaf_upper"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.y_min, a.y_scale, a.feature_names, a.leaf_type, a.meta) == (
        b.y_min, b.y_scale, b.feature_names, b.leaf_type, b.meta)
    assert a.is_classifier == b.is_classifier
    if a.is_classifier:
        assert a.classes == b.classes and [type(c) for c in a.classes] == [type(c) for c in b.classes]
        np.testing.assert_array_equal(a.leaf_proba, b.leaf_proba)
        np.testing.assert_array_equal(a.node_counts, b.node_counts)


def exports(tree: ObliqueTree) -> dict[str, str]:
    """Every exporter's text for ``tree``; each must also be writable as UTF-8 (what a download or a file does)."""
    texts = {"rules": export.rules_text(tree), "python": codegen.python_source(tree), "c": codegen.c_source(tree),
             "dot": export.dot_source(tree), "model": model_file.model_json(tree, indent=1),
             "report": export.html_report(tree, diagram_levels=2, created="now")}
    for text in texts.values():
        text.encode("utf-8")
    return texts


# ---------------------------------------------------------------------------------------------- valid models
@examples("round_trip")
@given(ANY_TREE, st.data())
def test_a_valid_model_round_trips_exactly_through_the_dict_and_the_json_text(tree, data):
    through_dict = model_file.from_dict(json.loads(json.dumps(model_file.to_dict(tree))))
    through_text = model_file.load_model_json(model_file.model_json(tree, indent=data.draw(st.sampled_from([None, 1]))))
    X = data.draw(rows(tree.n_features))
    for loaded in (through_dict, through_text):
        assert_same_tree(loaded, tree)
        np.testing.assert_array_equal(loaded.apply(X), tree.apply(X))
        np.testing.assert_array_equal(loaded.predict(X), tree.predict(X))
        if tree.is_classifier:
            np.testing.assert_array_equal(loaded.predict_proba(X), tree.predict_proba(X))


@examples("code")
@given(ANY_TREE, st.data())
def test_the_exported_python_source_predicts_exactly_what_predict_does(tree, data):
    namespace: dict[str, Any] = {}
    exec(compile(codegen.python_source(tree), "generated.py", "exec"), namespace)
    X = data.draw(rows(tree.n_features))
    assert [namespace["leaf"](list(x)) for x in X] == tree.apply(X).tolist()
    if tree.is_classifier:  # the labels themselves, of their own type, and the probabilities bit for bit
        labels_ = [namespace["predict"](list(x)) for x in X]
        assert labels_ == tree.predict(X).tolist()
        assert all(type(label) is type(tree.classes[0]) for label in labels_)
        np.testing.assert_array_equal([namespace["predict_proba"](list(x)) for x in X], tree.predict_proba(X))
    else:
        np.testing.assert_array_equal([namespace["predict"](list(x)) for x in X], tree.predict(X))
    assert list(namespace["FEATURES"]) == tree.feature_names


@examples("exporters")
@given(ANY_TREE)
def test_every_exporter_writes_any_valid_model_and_the_rules_keep_one_line_per_node(tree):
    texts = exports(tree)
    assert len(texts["rules"].split("\n\n", 1)[1].splitlines()) == (  # a pass-through (zero weights) writes none
        2 * len(prune.live_branches(tree)) + len(prune.live_leaves(tree)))
    assert model_file.load_model_json(texts["model"]).feature_names == tree.feature_names


@examples("sparse")
@given(sparse_trees(), st.data())
def test_a_sparse_trees_rules_labels_and_code_show_only_its_nonzero_terms_and_predict_as_it_does(tree, data):
    widths = tree.split_widths
    for line in export.rule_lines(tree):  # "if 2.5*f1 - 0.3*f4 <= 12.1:  # node 3", "if f2 >= 0.4:  # node 4"
        if line.lstrip().startswith("if "):
            node = int(line.rsplit("# node ", 1)[1])
            assert line.count("*") == (widths[node - 1] if widths[node - 1] != 1 else 0) and "more)" not in line
    for node in range(1, tree.n_branches + 1):  # at most three terms: the diagram writes the whole sentence
        label = diagram.node_label(tree, node, diagram_content.DiagramOptions(max_terms=1))
        shown = widths[node - 1] if widths[node - 1] != 1 else 0  # one feature: "f1 ≤ 0.5", a threshold
        assert label.count("\u00b7") == shown and labels.ELLIPSIS not in label
    namespace: dict[str, Any] = {}
    exec(compile(codegen.python_source(tree), "generated.py", "exec"), namespace)
    X = data.draw(rows(tree.n_features))
    assert [namespace["leaf"](list(x)) for x in X] == tree.apply(X).tolist()
    np.testing.assert_array_equal([namespace["predict"](list(x)) for x in X], tree.predict(X))


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
@examples("c")
@given(tree=ANY_TREE)
def test_the_exported_c_source_compiles_whatever_the_names(tmp_path_factory, tree):
    source = tmp_path_factory.mktemp("c") / "model.c"
    source.write_text(codegen.c_source(tree), encoding="utf-8")
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c", str(source), "-o",
                    str(source.with_suffix(".o"))], check=True, capture_output=True)


# ---------------------------------------------------------------------------------------------- hostile files
@st.composite
def mutated_dicts(draw) -> Any:
    """A valid model dict with one field replaced, deleted or nested deeper, or a value inside it changed."""
    data = model_file.to_dict(draw(ANY_TREE))
    key = draw(st.sampled_from(sorted(data) + ["extra"]))
    action = draw(st.sampled_from(["replace", "delete", "wrap", "item"]))
    if action == "delete":
        data.pop(key, None)
    elif action == "wrap":
        data[key] = [data.get(key)]
    elif action == "item" and isinstance(data.get(key), list) and data[key]:
        index = draw(st.integers(0, len(data[key]) - 1))
        data[key][index] = draw(st.one_of(JSON_VALUE, ANY_FLOAT, st.sampled_from([1e300, [1e300], [[-1e300]]])))
    else:
        data[key] = draw(st.one_of(JSON_VALUE, ANY_FLOAT, st.integers(), st.just(1e308)))
    return data


def loads_or_refuses(load, source) -> ObliqueTree | None:
    """``load(source)``: a tree, every export of which works, or None when it raised ModelFormatError."""
    try:
        tree = load(source)
    except ModelFormatError:
        event("refused")
        return None
    event("loaded")
    exports(tree)
    inside = tree.x_min + 0.5 * tree.x_scale  # a row within the training range: the bounds keep it finite
    scores = tree.predict_proba if tree.is_classifier else tree.predict
    assert np.isfinite(scores(inside[None])).all()
    return tree


@examples("mutated")
@given(mutated_dicts())
def test_a_mutated_model_dict_loads_or_is_refused_with_a_model_format_error(data):
    loads_or_refuses(model_file.from_dict, data)


@examples("text")
@given(st.one_of(mutated_dicts().map(lambda d: json.dumps(d, allow_nan=True)),
                 mutated_dicts().map(lambda d: json.dumps(d, ensure_ascii=False).encode("utf-8", "surrogatepass")),
                 st.binary(max_size=200), st.text(max_size=200), JSON_VALUE.map(json.dumps)))
def test_any_model_file_text_loads_or_is_refused_with_a_model_format_error(source):
    loads_or_refuses(model_file.load_model_json, source)


# ---------------------------------------------------------------------------------------------- prepare
COLUMN = st.one_of(
    arrays(np.float64, 30, elements=ANY_FLOAT), arrays(np.int64, 30, elements=st.integers(-5, 5)),
    arrays(np.bool_, 30), arrays(np.complex128, 30, elements=st.complex_numbers(max_magnitude=10)),
    st.lists(st.sampled_from(["a", "b", " c", "1", "2.0", "", None, "x y", "2024-01-02"]), min_size=30, max_size=30),
    st.lists(st.one_of(st.none(), st.integers(-3, 3), st.floats(-5, 5), st.text(max_size=3)), min_size=30,
             max_size=30),
)


@st.composite
def tables_and_specs(draw) -> tuple[pd.DataFrame, DataSpec]:
    """A 30-row table whose first column is mostly a usable target, and a spec over its columns; now and then a
    repeated column label, a repeated or target feature, or a lone surrogate in a label."""
    labels = draw(st.lists(st.one_of(NAME, st.text(st.characters(), max_size=3)), min_size=2, max_size=5,
                           unique=True))
    if draw(st.integers(0, 9)) == 0:
        labels[-1] = labels[0]
    target = st.one_of(arrays(np.float64, 30, elements=FINITE), arrays(np.int64, 30, elements=st.integers(0, 9)))
    columns = [draw(st.one_of(target, target, COLUMN) if i == 0 else COLUMN) for i in range(len(labels))]
    frame = pd.DataFrame({i: pd.Series(column) for i, column in enumerate(columns)})
    frame.columns = pd.Index(labels, dtype=object)  # as a DataFrame allows: repeats, lone surrogates
    features = draw(st.lists(st.sampled_from(labels[1:]), min_size=1, max_size=4, unique=True))
    if draw(st.integers(0, 9)) == 0:
        features.append(draw(st.sampled_from(labels)))
    spec = DataSpec(target=labels[0], features=tuple(features),
                    categorical=tuple(draw(st.lists(st.sampled_from(labels), max_size=2))),
                    missing=draw(st.sampled_from(MISSING_POLICIES)))
    return frame, spec


@examples("prepare")
@given(tables_and_specs())
def test_prepare_returns_model_inputs_or_raises_a_data_error(table_and_spec):
    table, spec = table_and_spec
    try:
        prepared = prepare(table, spec)
    except DataError:
        event("refused")
        return
    event("prepared")
    assert np.isfinite(prepared.X).all() and np.isfinite(prepared.y).all()
    assert prepared.X.shape == (len(prepared.y), len(prepared.feature_names))
    assert len(set(prepared.feature_names)) == len(prepared.feature_names)
    "".join(prepared.feature_names).encode("utf-8")
