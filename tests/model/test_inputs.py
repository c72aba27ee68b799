"""Raw inputs (``get_core.model.inputs``): how numbers with missing values and category columns become the engine's
matrix, and that a tree carrying them predicts, saves and exports raw rows alike."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core import export
from get_core.model import codegen, model_file
from get_core.model.inputs import MAX_CATEGORIES, Inputs, RawColumn, label_of, learn
from get_core.model.model_file import ModelFormatError
from get_core.model.onnx_graph import to_onnx
from get_core.model.tree import ObliqueTree

FIXTURES = Path(__file__).parent / "fixtures"
COLOURS = ("blue", "green", "red")
INPUTS = Inputs((RawColumn("income", "number", missing=True, fill=40.0),
                 RawColumn("age", "number", fill=30.0),
                 RawColumn("colour", "category", missing=True, categories=COLOURS),
                 RawColumn("size", "category", categories=("L", "S"))))


def raw_tree(inputs: Inputs, seed: int = 0, depth: int = 2, classes: bool = False) -> ObliqueTree:
    """A random tree over ``inputs``' engine columns (about a third of its weights zero)."""
    rng = np.random.default_rng(seed)
    p, branches, leaves = len(inputs.feature_names), 2 ** depth - 1, 2 ** depth
    weights = rng.normal(size=(branches, p)) * (rng.random((branches, p)) > 0.3)
    fields = dict(weights=weights, thresholds=rng.normal(scale=0.3, size=branches),
                  leaf_intercepts=np.zeros(leaves) if classes else rng.normal(size=leaves),
                  leaf_coefs=np.zeros((leaves, p)), n_samples=np.ones(2 * leaves - 1),
                  node_values=np.zeros(2 * leaves - 1), x_min=rng.normal(size=p), x_scale=rng.uniform(0.5, 3, p),
                  feature_names=inputs.feature_names, inputs=inputs)
    if classes:
        proba = rng.dirichlet(np.ones(3), size=leaves)
        return ObliqueTree(**fields, leaf_type="classes", classes=["a", "b", "c"], leaf_proba=proba,
                           node_counts=np.ones((2 * leaves - 1, 3)))
    return ObliqueTree(**fields, y_min=-2.0, y_scale=5.0)


#: Values a raw number cell may hold: numbers, missing in every spelling, infinities, numbers written as text.
numbers = st.one_of(st.floats(-1e6, 1e6), st.sampled_from([None, np.nan, np.inf, -np.inf, "", "  ", "2.5", " 7 "]))
#: Values a raw category cell may hold: the known ones (also with spaces), unseen ones, missing in every spelling.
categories = st.one_of(st.sampled_from([*COLOURS, " red ", "purple", "", None, np.nan, 1.0, "1.0"]),
                       st.text(max_size=4))


@st.composite
def raw_rows(draw, n_max: int = 12):
    n = draw(st.integers(1, n_max))
    return [[draw(numbers), draw(numbers), draw(categories), draw(st.sampled_from(["L", "S", "M", None]))]
            for _ in range(n)]


def test_a_number_column_is_its_value_and_an_if_missing_column_a_category_column_one_per_category():
    X = [[10.0, np.nan, "red", "S"], [np.nan, 20.0, None, "L"], [np.inf, "", "purple", None]]
    assert INPUTS.feature_names == ["income", "income=missing", "age", "colour=blue", "colour=green", "colour=red",
                                    "colour=missing", "size=L", "size=S"]
    assert INPUTS.groups.tolist() == [0, 0, 1, 2, 2, 2, 2, 3, 3]
    np.testing.assert_array_equal(INPUTS.encode(X), [
        [10.0, 0.0, 30.0, 0, 0, 1, 0, 0, 1],   # age missing, never missing in training: its training mean
        [40.0, 1.0, 20.0, 0, 0, 0, 1, 1, 0],   # income missing: the mean and its indicator; colour missing
        [40.0, 1.0, 30.0, 0, 0, 0, 0, 0, 0],   # +inf and '' count as missing; an unseen category sets nothing
    ])


def test_learn_takes_each_number_columns_mean_and_each_category_columns_sorted_labels():
    learned = learn([np.array([1.0, np.nan, 3.0]), np.array(["b", " a", None], dtype=object)], ["x", "c"],
                    [False, True])
    assert learned.columns == (RawColumn("x", "number", missing=True, fill=2.0),
                               RawColumn("c", "category", missing=True, categories=("a", "b")))


def test_labels_are_stripped_and_whole_numbers_spelled_as_integers():
    assert [label_of(v) for v in (" red ", 1.0, "1.0", 2, True, "", "  ", None, np.nan, pd.NA, b"x")] == [
        "red", "1", "1", "2", "True", None, None, None, None, None, "x"]


def test_too_many_categories_and_text_in_a_number_column_are_refused_by_name():
    with pytest.raises(ValueError, match=f"Column 'city' has 256 categories; GET takes at most {MAX_CATEGORIES}"):
        learn([np.array([f"c{i}" for i in range(256)], dtype=object)], ["city"], [True])
    with pytest.raises(ValueError, match="Column 'price' holds numbers, but row 2 holds 'cheap'"):
        learn([np.array([1.0, "cheap"], dtype=object)], ["price"], [False])


def test_inputs_check_their_fields():
    with pytest.raises(ValueError, match="distinct names"):
        Inputs((RawColumn("a", "number"), RawColumn("a", "number")))
    with pytest.raises(ValueError, match="both be named 'a=b'"):
        Inputs((RawColumn("a", "category", categories=("b",)), RawColumn("a=b", "number")))
    with pytest.raises(ValueError, match="sorted"):
        Inputs((RawColumn("a", "category", categories=("b", "a")),))
    with pytest.raises(ValueError, match="finite fill"):
        Inputs((RawColumn("a", "number", fill=math.nan),))
    with pytest.raises(ValueError, match="at least one unless it is missing"):
        Inputs((RawColumn("a", "category"),))
    assert Inputs((RawColumn("a", "category", missing=True),)).feature_names == ["a=missing"]  # always missing


@settings(max_examples=60, deadline=None)
@given(raw_rows(), st.integers(0, 2 ** 16), st.booleans())
def test_no_row_is_lost_and_predict_the_python_export_and_the_model_file_agree(rows, seed, classes):
    tree = raw_tree(INPUTS, seed, classes=classes)
    encoded = INPUTS.encode(rows)
    assert encoded.shape == (len(rows), len(INPUTS.feature_names)) and np.isfinite(encoded).all()
    predicted = tree.predict(rows)
    assert len(predicted) == len(rows)
    frame = pd.DataFrame(rows, columns=INPUTS.names)
    np.testing.assert_array_equal(tree.predict(frame), predicted)
    module = types.ModuleType("exported")
    exec(codegen.python_source(tree), module.__dict__)
    assert [module.predict(row) for row in rows] == predicted.tolist()
    loaded = model_file.load_model_json(model_file.model_json(tree))
    assert loaded.inputs == INPUTS
    np.testing.assert_array_equal(loaded.predict(rows), predicted)
    if classes:
        np.testing.assert_array_equal(loaded.predict_proba(rows), tree.predict_proba(rows))
        assert [module.predict_proba(row) for row in rows] == tree.predict_proba(rows).tolist()


def test_a_raw_tree_file_is_version_5_and_files_of_the_code_before_still_load():
    tree = raw_tree(INPUTS)
    data = model_file.to_dict(tree)
    assert data["version"] == 5 and data["inputs"]["columns"][2] == {
        "name": "colour", "kind": "category", "missing": True, "categories": list(COLOURS)}
    plain = ObliqueTree(weights=tree.weights, thresholds=tree.thresholds, leaf_intercepts=tree.leaf_intercepts,
                        leaf_coefs=tree.leaf_coefs, n_samples=tree.n_samples, node_values=tree.node_values,
                        x_min=tree.x_min, x_scale=tree.x_scale)
    assert model_file.to_dict(plain)["version"] == 3 and "inputs" not in model_file.to_dict(plain)
    # written by the code before raw inputs (a depth-2 GETClassifier on 3 features)
    older = model_file.load_model_json((FIXTURES / "version3_classes.json").read_text())
    assert older.inputs is None and older.feature_names == ["x0", "x1", "x2"]
    assert older.predict([[0.0, 0.0, 0.0], [np.nan, 1.0, -1.0]]).shape == (2,)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(version=4), "needs model version 5"),
    (lambda d: d["inputs"]["columns"][2]["categories"].reverse(), "sorted"),
    (lambda d: d["inputs"]["columns"][2].update(categories=[f"c{i}" for i in range(300)]), "at most 255"),
    (lambda d: d["inputs"]["columns"][0].update(fill="a lot"), "'fill' must be a number"),
    (lambda d: d["inputs"]["columns"][1].update(kind="date"), "a kind among"),
    (lambda d: d["inputs"].update(columns=[]), "non-empty list"),
    (lambda d: d["inputs"]["columns"].pop(), "inconsistent"),
])
def test_the_model_file_refuses_malformed_inputs_by_name(edit, message):
    data = model_file.to_dict(raw_tree(INPUTS))
    edit(data)
    with pytest.raises(ModelFormatError, match=message):
        model_file.from_dict(json.loads(json.dumps(data)))


def test_split_terms_count_a_category_column_or_a_number_and_its_indicator_once():
    tree = raw_tree(INPUTS)
    tree.weights[0] = [1.0, 2.0, 0, 0.5, 0.5, 0.5, 0.5, 0, 0]
    assert tree.split_terms[0] == 2 and tree.split_widths[0] == 6
    data = model_file.to_dict(tree)
    data["meta"]["config"] = {"max_split_features": 1}
    with pytest.raises(ModelFormatError, match="node 1 uses 2 features"):
        model_file.from_dict(data)


def test_rules_say_how_features_come_from_columns():
    text = export.rules_text(raw_tree(INPUTS))
    assert "#   income: its number; a missing income counts as 40.0, and income=missing is 1 (else 0)." in text
    assert "#   colour=<category> is 1 for the row's category of colour" in text


def coded_rows(n: int, seed: int) -> tuple[np.ndarray, pd.DataFrame]:
    """Rows as the C and ONNX exports take them (numbers, category codes, NaN: missing; codes no category has,
    infinities), and the same rows as a raw table."""
    rng = np.random.default_rng(seed)
    special = rng.choice([np.nan, np.inf, -np.inf, 0.0], size=(n, 2))
    numbers = np.where(rng.random((n, 2)) < 0.3, special, rng.normal(0, 3, (n, 2)))
    colour = rng.choice([0.0, 1.0, 2.0, 7.0, -1.0, np.nan], size=n)
    size = rng.choice([0.0, 1.0, 5.0, np.nan], size=n)
    labels = lambda c, known: [None if np.isnan(v) else known[int(v)] if 0 <= v < len(known) else "unseen"  # noqa
                               for v in c]
    raw = pd.DataFrame({"income": numbers[:, 0], "age": numbers[:, 1], "colour": labels(colour, COLOURS),
                        "size": labels(size, ("L", "S"))})
    return np.column_stack([numbers, colour, size]), raw


@pytest.mark.parametrize("classes", [False, True])
def test_the_onnx_export_takes_numbers_and_category_codes_with_nan_for_missing_and_equals_predict(classes):
    ort = pytest.importorskip("onnxruntime")
    tree = raw_tree(INPUTS, seed=7, depth=3, classes=classes)
    codes, raw = coded_rows(300, 1)
    session = ort.InferenceSession(to_onnx(tree), providers=["CPUExecutionProvider"])
    outputs = dict(zip([o.name for o in session.get_outputs()], session.run(None, {"raw": codes})))
    np.testing.assert_array_equal(outputs["leaf"], tree.apply(raw))
    if classes:
        np.testing.assert_array_equal(outputs["label"], tree.predict(raw))
        np.testing.assert_allclose(outputs["probabilities"], tree.predict_proba(raw), rtol=0, atol=1e-15)
    else:
        np.testing.assert_array_equal(outputs["prediction"], tree.predict(raw))


C_HARNESS = r"""
#include <math.h>
#include <stdio.h>
int get_leaf(const double x[]);
%s
int main(void) {
    int n, p;
    double x[16], proba[8];
    (void)proba;
    if (scanf("%%d %%d", &n, &p) != 2) return 2;
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < p; ++j) {
            char word[64];
            if (scanf("%%63s", word) != 1) return 3;
            sscanf(word, "%%lf", &x[j]);
            if (word[0] == 'n') x[j] = NAN;
            if (word[0] == 'i') x[j] = INFINITY;
            if (word[0] == '-' && word[1] == 'i') x[j] = -INFINITY;
        }
        printf("%%d %%.17g\n", get_leaf(x), %s);
    }
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
@pytest.mark.parametrize("classes", [False, True])
def test_the_c_export_takes_numbers_and_category_codes_with_nan_for_missing_and_equals_predict(classes, tmp_path):
    tree = raw_tree(INPUTS, seed=5, depth=3, classes=classes)
    n = 400
    codes, raw = coded_rows(n, 0)
    call = "(double)get_predict(x, proba)" if classes else "get_predict(x)"
    declaration = ("int get_predict(const double x[], double *proba);" if classes else
                   "double get_predict(const double x[]);")
    (tmp_path / "model.c").write_text(codegen.c_source(tree), encoding="utf-8")
    (tmp_path / "main.c").write_text(C_HARNESS % (declaration, call))
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-ffp-contract=off",
                    str(tmp_path / "model.c"), str(tmp_path / "main.c"), "-o", str(tmp_path / "run"), "-lm"],
                   check=True, capture_output=True)
    stdin = f"{n} 4\n" + "\n".join(" ".join(repr(float(v)) for v in row) for row in codes)
    out = subprocess.run([str(tmp_path / "run")], input=stdin.encode(), capture_output=True, check=True).stdout
    pairs = [line.split() for line in out.decode().splitlines()]
    np.testing.assert_array_equal([int(a) for a, _ in pairs], tree.apply(raw))
    got = np.array([float(b) for _, b in pairs])
    if classes:
        np.testing.assert_array_equal(np.asarray(tree.classes)[got.astype(int)], tree.predict(raw))
    else:
        np.testing.assert_array_equal(got, tree.predict(raw))


def test_a_raw_trees_engine_rows_stay_available_through_encode():
    tree = raw_tree(INPUTS)
    rows = [[1.0, 2.0, "red", "L"]]
    np.testing.assert_array_equal(tree.encode(rows), INPUTS.encode(rows))
    assert tree.margins(tree.encode(rows)).shape == (1, tree.n_branches)
    with pytest.raises(ValueError, match="2-D table with 4 columns"):
        tree.predict([[1.0, 2.0]])
