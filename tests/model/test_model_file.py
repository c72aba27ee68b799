"""The model file: the dict and JSON forms round-trip exactly, and a file anyone may have edited is refused by
name (ModelFormatError) before anything reads it."""

import json
import re
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core import export

from get_core.config import LIBRARY_MAX_CLASSES
from get_core.data.classes import MAX_CLASSES as APP_MAX_CLASSES
from get_core.model import model_file
from get_core.data.encoding import DataSpec, prepare
from get_core.model.model_file import ModelFormatError
from tests.trees import make_tree, stump

ABALONE = Path(__file__).resolve().parents[2] / "data" / "examples" / "abalone.csv"


def _file(tree) -> dict:
    return json.loads(model_file.model_json(tree))


@pytest.mark.parametrize("key", ["leaf_lower", "leaf_upper"])
def test_a_version_2_file_without_its_leaf_bounds_is_refused_not_loaded_unbounded(key):
    tree, _, _ = make_tree(depth=2, leaf="linear", seed=1)
    data = _file(tree)
    del data[key]
    with pytest.raises(ModelFormatError, match=key):
        model_file.load_model_json(json.dumps(data))


def test_the_version_must_be_an_integer_not_a_boolean():
    data = _file(stump())
    data["version"] = True
    with pytest.raises(ModelFormatError, match="version"):
        model_file.load_model_json(json.dumps(data))


def test_a_constant_leaf_file_with_slopes_or_bounds_is_refused():
    data = _file(stump())
    data["leaf_coefs"][0][0] = 1.0  # predict ignores it, the rules would not
    with pytest.raises(ModelFormatError, match="leaf_coefs"):
        model_file.load_model_json(json.dumps(data))
    data = _file(stump())
    data["leaf_lower"][0] = 12.0  # predict would clamp leaf 2 to 12, the generated code and the rules would not
    with pytest.raises(ModelFormatError, match="leaf_lower"):
        model_file.load_model_json(json.dumps(data))


def test_a_version_1_model_without_bounds_still_loads_unbounded():
    tree, X, _ = make_tree(depth=2, leaf="linear", seed=3)
    data = model_file.to_dict(tree)
    for key in ("leaf_lower", "leaf_upper"):
        data.pop(key)
    data["version"] = 1
    old = model_file.from_dict(data)
    assert np.all(np.isinf(old.leaf_lower)) and np.all(np.isinf(old.leaf_upper)) and not old.has_leaf_bounds
    leaf = old.apply(X) - old.n_leaves
    line = old.leaf_intercepts[leaf] + [sum(k * x for k, x in zip(old.leaf_coefs[i], xs))  # unclamped
                                        for i, xs in zip(leaf, old.scale_X(X))]
    np.testing.assert_array_equal(old.predict_scaled(X), line)


def test_crossed_leaf_bounds_are_refused():
    tree, _, _ = make_tree(depth=1, leaf="linear", seed=3)
    data = model_file.to_dict(tree)
    data["leaf_lower"] = [1.0, None]
    data["leaf_upper"] = [0.5, None]
    with pytest.raises(ModelFormatError, match="leaf_lower"):
        model_file.from_dict(data)


@pytest.mark.parametrize("leaf", ["constant", "linear"])
def test_json_round_trip_gives_identical_predictions(leaf):
    tree, X, _ = make_tree(depth=3, leaf=leaf, seed=5, empty_subtree=True, names=["a <b>", 'quote"d', "ü"])
    tree.meta["note"] = "kept"
    loaded = model_file.from_dict(json.loads(json.dumps(model_file.to_dict(tree))))
    np.testing.assert_array_equal(loaded.predict(X), tree.predict(X))
    np.testing.assert_array_equal(loaded.n_samples, tree.n_samples)
    assert np.isnan(loaded.node_values).sum() == np.isnan(tree.node_values).sum() > 0
    np.testing.assert_array_equal(loaded.leaf_lower, tree.leaf_lower)  # infinities survive JSON as null
    np.testing.assert_array_equal(loaded.leaf_upper, tree.leaf_upper)
    assert loaded.feature_names == tree.feature_names and loaded.meta == {"note": "kept"}


def test_a_loaded_tree_shares_no_meta_with_the_dict_it_came_from():
    tree, _, _ = make_tree(depth=1)
    tree.meta["config"] = {"alpha_range": [5.0, 150.0]}
    data = model_file.to_dict(tree)
    loaded = model_file.from_dict(data)
    loaded.meta["config"]["alpha_range"].append(1.0)
    loaded.meta["note"] = "changed"
    assert data["meta"] == tree.meta == {"config": {"alpha_range": [5.0, 150.0]}}


def test_to_dict_is_json_ready_when_meta_holds_numpy_values():
    from get_core.estimator import GETRegressor

    X = np.random.default_rng(0).normal(size=(40, 2))
    tree = GETRegressor(depth=np.int64(1), n_starts=np.int64(1), n_epochs=2, random_state=0).fit(X, X[:, 0]).tree_
    tree.meta["alphas"] = np.array([[5.0, 50.0]])
    tree.meta["pair"] = (np.float32(0.5), np.bool_(True))
    data = json.loads(json.dumps(model_file.to_dict(tree)))
    assert data["meta"]["config"]["depth"] == 1 and data["meta"]["alphas"] == [[5.0, 50.0]]
    assert data["meta"]["pair"] == [0.5, True]
    assert isinstance(tree.meta["alphas"], np.ndarray)  # the tree itself is left as it was


def test_deeply_nested_meta_is_copied_without_exhausting_the_stack():
    tree, _, _ = make_tree(depth=1)
    data = json.loads(json.dumps(model_file.to_dict(tree)))
    data["meta"] = json.loads('{"a": ' * 900 + "1" + "}" * 900)
    loaded = model_file.from_dict(data)
    assert loaded.meta is not data["meta"] and "a" in loaded.meta


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.pop("weights"), "weights"),
    (lambda d: d.update(version=99), "version"),
    (lambda d: d.update(schema="other"), "schema"),
    (lambda d: d.update(depth=0), "depth"),
    (lambda d: d["thresholds"].pop(), "thresholds"),
    (lambda d: d["weights"][0].__setitem__(0, "x"), "weights"),
    (lambda d: d["weights"][0].__setitem__(0, float("nan")), "weights"),
    (lambda d: d.update(n_samples=[-1] * len(d["n_samples"])), "n_samples"),
    (lambda d: d.update(x_scale=[0.0] * len(d["x_scale"])), "x_scale"),
    (lambda d: d.update(leaf_type="cubic"), "leaf_type"),
    (lambda d: d.update(feature_names="abc"), "feature_names"),
    (lambda d: d.update(y_scale=True), "y_scale"),
])
def test_malformed_model_json_is_refused_naming_the_field(mutate, field):
    tree, _, _ = make_tree(depth=2)
    data = json.loads(json.dumps(model_file.to_dict(tree)))
    mutate(data)
    with pytest.raises(ModelFormatError, match=field):
        model_file.from_dict(data)
    with pytest.raises(ModelFormatError):
        model_file.from_dict([1, 2])


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("{not json", "not valid JSON"),
    (b"\xff\xfe", "not UTF-8"),
    ("[1, 2]", "JSON object"),
    ('{"schema": "something else"}', "schema"),
    ('{"schema": NaN}', "'NaN' is not a JSON number"),  # Python's json reads NaN and Infinity; JSON has neither
    ('{"y_min": 1e400}', "beyond the range of a double"),
    ('{"y_min": 1' + "0" * 5000 + "}", "not a GET Explorer model"),  # Python's limit on integer digits
    ("[" * 100_000 + "]" * 100_000, "nests lists and objects 100000 deep"),  # deeper than Python's stack
    (123, "JSON text; got int"),
])
def test_malformed_model_files_are_refused_with_a_message(text, message):
    with pytest.raises(ModelFormatError, match=message):
        model_file.load_model_json(text)


@pytest.mark.parametrize("field, value, message", [
    ("weights", [["0.5"]], "'weights' must be a list of numbers"),  # numbers as text are not numbers
    ("x_min", [10 ** 400], "'x_min' must hold only numbers within the range of a double"),
    ("y_scale", 10 ** 400, "'y_scale' must be a finite number"),
    ("n_samples", [1e300, 1, 1], "'n_samples' must hold non-negative integers"),  # would wrap around in int64
])
def test_out_of_range_or_mistyped_fields_are_refused_by_name(field, value, message):
    data = json.loads(model_file.model_json(stump()))
    data[field] = value
    with pytest.raises(ModelFormatError, match=message):
        model_file.load_model_json(json.dumps(data))


def test_a_deeply_nested_field_of_a_dict_is_refused_without_exhausting_the_stack():
    data = model_file.to_dict(stump())
    data["weights"] = json.loads("[" * 600 + '"x"' + "]" * 600)  # a file this deep is refused before parsing
    with pytest.raises(ModelFormatError, match="'weights' must be a list of numbers"):
        model_file.from_dict(data)


def test_model_json_with_a_wrong_shape_names_the_field():
    data = json.loads(model_file.model_json(stump()))
    data["weights"] = [[1.0]]
    with pytest.raises(ModelFormatError, match="weights"):
        model_file.load_model_json(json.dumps(data))


@pytest.fixture
def abalone():
    """A tree over abalone's model inputs ('Sex' one-hot encoded), with its run's encoding and raw rows."""
    table = pd.read_csv(ABALONE).head(300)
    features = tuple(c for c in table.columns if c != "target")
    encoding = prepare(table, DataSpec(target="target", features=features)).encoding
    tree, _, _ = make_tree(depth=2, p=len(encoding.feature_names), names=list(encoding.feature_names))
    return tree, encoding, table


def test_model_json_carries_the_runs_encoding_so_the_file_scores_raw_rows(abalone):
    tree, encoding, table = abalone
    loaded = model_file.load_model_json(model_file.model_json(tree, indent=1, encoding=encoding))
    assert model_file.model_encoding(loaded) == encoding
    np.testing.assert_array_equal(loaded.predict(model_file.model_encoding(loaded).transform(table)),
                                  tree.predict(encoding.transform(table)))
    again = model_file.load_model_json(model_file.model_json(loaded))  # a loaded file exported again keeps it
    assert model_file.model_encoding(again) == encoding and "encoding" not in tree.meta


def test_the_html_report_embeds_the_model_with_its_encoding(abalone):
    tree, encoding, _ = abalone
    html = export.html_report(tree, encoding=encoding, diagram_levels=1)
    embedded = html.split('id="get-model">', 1)[1].split("</script>", 1)[0]
    assert model_file.model_encoding(model_file.load_model_json(embedded)) == encoding


def test_a_model_file_without_an_encoding_loads_as_before():
    loaded = model_file.load_model_json(model_file.model_json(stump()))
    assert model_file.model_encoding(loaded) is None and loaded.meta == {}


@pytest.mark.parametrize("mutate, message", [
    (lambda e: "Sex", "it must be an object; got str"),
    (lambda e: {**e, "target": 5}, "'target' must be a string"),
    (lambda e: {**e, "columns": e["columns"] + ["Sex"]}, "'columns' must be a list of distinct strings"),
    (lambda e: {**e, "categories": {"Sex": ["F", "F", "M"]}}, "'categories.Sex' must be a list of distinct"),
    (lambda e: {**e, "target": "Length"}, "'columns' must name at least one column, not the target"),
    (lambda e: {**e, "numeric": e["numeric"][1:]}, "'numeric' and 'categories' must share out the 'columns'"),
    (lambda e: {**e, "impute": {"Length": "0.5"}}, "'impute' must map columns to a fill value"),
    (lambda e: {**e, "impute": {"Length": 10 ** 400}}, "'impute' must map columns to a fill value"),
    (lambda e: {**e, "impute": {"Sex": 1}}, "'impute' must map columns to a fill value"),
    (lambda e: {**e, "impute": {"Sex": "Q"}}, "'impute' must map columns to a fill value"),  # not a level
    (lambda e: {**e, "feature_names": e["feature_names"][::-1]}, "'feature_names' must list the model inputs"),
    (lambda e: {**e, "columns": ["Length"], "numeric": ["Length"], "categories": {}, "feature_names": ["Length"]},
     "belongs to another model"),
])
def test_a_malformed_encoding_in_a_model_file_is_refused_by_name(abalone, mutate, message):
    tree, encoding, _ = abalone
    data = json.loads(model_file.model_json(tree, encoding=encoding))
    data["meta"]["encoding"] = mutate(data["meta"]["encoding"])
    with pytest.raises(ModelFormatError, match=re.escape("Field 'meta.encoding' ") + ".*" + re.escape(message)):
        model_file.load_model_json(json.dumps(data))


# ---------------------------------------------------------------------------------------------- issue 18
@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(feature_names=["temp", "\udcff"]), r"'feature_names'.*'\\udcff' holds a lone surrogate"),
    (lambda d: d["meta"].update(target="\udcff"), "'meta' holds text with a lone surrogate"),
    (lambda d: d["meta"].update({"\ud800": 1}), "'meta' holds text with a lone surrogate"),
])
def test_a_lone_surrogate_in_a_model_file_is_refused_when_it_loads_not_when_it_is_exported(mutate, message):
    data = _file(stump())
    mutate(data)
    text = json.dumps(data)  # ensure_ascii: the surrogate travels as the escape \udcff, as in the hostile file
    with pytest.raises(ModelFormatError, match=message):
        model_file.load_model_json(text)
    with pytest.raises(ModelFormatError, match="lone surrogate"):
        model_file.load_model_json(json.dumps(data, ensure_ascii=False))  # as text holding the surrogate itself


def test_a_model_file_that_repeats_a_feature_name_is_refused():
    data = _file(make_tree(depth=1, p=3, names=["a", "b", "c"])[0])
    data["feature_names"] = ["a", "a", "a"]  # one column 'a' would feed all three inputs
    with pytest.raises(ModelFormatError, match="'feature_names'.*'a' appears more than once"):
        model_file.load_model_json(json.dumps(data))


@pytest.mark.parametrize("field, value", [
    ("y_scale", 1e308), ("y_min", 1e308), ("y_min", -1e200), ("x_scale", [1e300, 1.0]), ("x_min", [0.0, -1e151]),
    ("weights", [[1e101, 0.0]]), ("leaf_intercepts", [1e200, 20.0]), ("thresholds", [-1e300]),
])
def test_numbers_whose_products_overflow_are_refused_so_a_loaded_model_never_predicts_inf(field, value):
    data = _file(stump())
    data[field] = value
    with pytest.raises(ModelFormatError, match=f"Field '{field}' holds .*beyond the bound"):
        model_file.load_model_json(json.dumps(data))


def test_a_model_at_every_bound_still_predicts_finite_values_a_million_ranges_away():
    tree, X, _ = make_tree(depth=2, p=200, leaf="linear", seed=1)
    data = _file(tree)
    data.update(x_min=[-model_file.MAX_ABS] * 200, x_scale=[2 * model_file.MAX_ABS] * 200,
                y_min=model_file.MAX_ABS, y_scale=2 * model_file.MAX_ABS,
                leaf_intercepts=[model_file.MAX_SCALED] * 4, leaf_coefs=[[model_file.MAX_SCALED] * 200] * 4,
                leaf_lower=[None] * 4, leaf_upper=[None] * 4)
    loaded = model_file.load_model_json(json.dumps(data))
    far = -model_file.MAX_ABS + 1e6 * 2 * model_file.MAX_ABS * np.ones((1, 200))  # xs = 1e6 for every feature
    assert np.isfinite(loaded.predict(far)).all()


@pytest.mark.parametrize("make, message", [  # built in the test: parameters stay alive for the whole session
    (lambda: b'{"meta": "' + b"x" * (model_file.MAX_MODEL_MB * 2 ** 20) + b'"}', "the largest GET Explorer writes"),
    (lambda: b'{"meta": [' + b"{}," * 5_000_000 + b"{}]}", "holds 15,000,006 commas and brackets"),
    (lambda: b'{"meta": [' + b'"a",' * 200_000 + b'"a"]}', "more than 100,000 strings"),
    (lambda: b'{"meta": ' + b"[" * 21 + b"]" * 21 + b"}", "nests lists and objects 22 deep"),
])
def test_a_model_file_beyond_the_bounds_is_refused_before_it_is_parsed(make, message):
    with pytest.raises(ModelFormatError, match=message):
        model_file.load_model_json(make())


def test_brackets_and_quotes_inside_names_do_not_count_as_nesting():
    names = ["[[[[[[[[[[[[[[[[[[[[[[", '{"\\', "\\", 'a"]]]]]]]]]]]]]]]]]]]]]]]]]' + "\\" * 3]
    tree, X, _ = make_tree(depth=1, p=4, names=names)
    loaded = model_file.load_model_json(model_file.model_json(tree, indent=1))
    assert loaded.feature_names == names


def test_a_48_mb_hostile_model_file_is_refused_in_bounded_time_and_memory():
    """Issue 18: a 48 MB model JSON cost 1.35 GB and 6 s before it was refused."""
    hostile = b'{"schema": "get-explorer/oblique-tree", "meta": [' + b"{}," * 16_000_000 + b"{}]}"
    tracemalloc.start()
    started = time.process_time()  # CPU seconds: the same on a busy machine
    with pytest.raises(ModelFormatError, match="commas and brackets"):
        model_file.load_model_json(hostile)
    seconds = time.process_time() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(hostile) > 48e6 and peak < 1e6 and seconds < 5  # counting allocates nothing; it takes ~0.1 s


@pytest.mark.slow
def test_the_largest_model_the_app_writes_loads():
    rng = np.random.default_rng(0)
    p, leaves = 200, 2 ** 12
    tree = model_file.ObliqueTree(
        weights=-rng.random((leaves - 1, p)) * 1e-123, thresholds=rng.random(leaves - 1),
        leaf_intercepts=rng.random(leaves), leaf_coefs=-rng.random((leaves, p)) * 1e-123,
        n_samples=np.zeros(2 * leaves - 1), node_values=rng.random(2 * leaves - 1), x_min=-rng.random(p),
        x_scale=rng.random(p), feature_names=[f"feature number {j:03d} (units)" for j in range(p)],
        leaf_type="linear", leaf_lower=-rng.random(leaves), leaf_upper=rng.random(leaves))
    text = model_file.model_json(tree, indent=1)  # what the Tree page's download writes
    assert 45e6 < len(text) < model_file.MAX_MODEL_MB * 2 ** 20
    loaded = model_file.load_model_json(text)
    np.testing.assert_array_equal(loaded.leaf_coefs, tree.leaf_coefs)


def _with_classes(n_classes: int) -> str:
    """A depth-1 class tree's model file with ``n_classes`` classes (each leaf's shares even)."""
    from tests.trees import make_class_tree

    data = _file(make_class_tree(depth=1, n_classes=2)[0])
    data["classes"] = list(range(n_classes))
    data["leaf_proba"] = [[1.0 / n_classes] * n_classes] * 2
    data["node_counts"] = [[1.0] * n_classes] * 3
    return json.dumps(data)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n_classes=st.integers(2, 3 * LIBRARY_MAX_CLASSES), app=st.booleans())
def test_a_model_file_holds_at_most_the_library_cap_of_classes_and_the_app_reads_its_own(n_classes, app):
    """A 0.3 MB model file of 20,000 classes passed every check and took the server past 6 GB when it scored rows."""
    cap = APP_MAX_CLASSES if app else LIBRARY_MAX_CLASSES
    text = _with_classes(n_classes)
    if n_classes <= cap:
        tree = model_file.load_model_json(text, max_classes=cap) if app else model_file.load_model_json(text)
        assert tree.n_classes == n_classes
        return
    with pytest.raises(ModelFormatError, match=rf"The model has {n_classes:,} classes; GET Explorer('s app)? reads "
                                               rf"models of at most {cap:,} classes\."):
        model_file.load_model_json(text, max_classes=cap) if app else model_file.load_model_json(text)
