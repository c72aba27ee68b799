"""Exports and generated code: Python and C from `codegen` reproduce predict; rules, DOT and HTML say the same thing."""

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core.model import codegen, model_file

from get_core import export
from get_core.estimator import GETRegressor
from get_core.views import diagram_content, labels, summary
from tests.trees import make_tree, stump

# 'temp' and 'temp!' become the same identifier
NASTY = ["temp", '<b>x</b> & "y"', "a\\Nb", "ünï cödé", "class", "2nd-stage", "*/ end", "it's ?? =", "temp!"]
EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot not installed")


def _rows(tree, X, n=300, seed=1):
    """Rows like the training data plus rows far outside its range."""
    rng = np.random.default_rng(seed)
    inside = X[rng.integers(0, len(X), n)] + rng.normal(scale=0.5, size=(n, X.shape[1]))
    outside = rng.normal(loc=10, scale=30, size=(n // 3, X.shape[1]))
    return np.vstack([inside, outside])


@pytest.fixture(params=["constant", "linear", "sparse"])
def model(request):
    """A tree of each leaf type, and a sparse one: two features per split, scored on rows with NaN and infinities in
    the features its splits leave out (which must not change where a row goes)."""
    leaf = "linear" if request.param == "linear" else "constant"
    tree, X, y = make_tree(depth=3, p=len(NASTY), leaf=leaf, names=NASTY, seed=4)
    rows = _rows(tree, X)
    if request.param == "sparse":
        smallest = np.argsort(np.abs(tree.weights), axis=1)[:, :-2]
        np.put_along_axis(tree.weights, smallest, 0.0, axis=1)
        unused = np.flatnonzero(~tree.weights.any(axis=0))
        rows[::3, unused[0]], rows[1::3, unused[-1]] = np.nan, -np.inf
    return tree, rows


def _assert_same_predictions(tree, rows, leaves, preds):
    np.testing.assert_array_equal(leaves, tree.apply(rows))
    np.testing.assert_array_equal(preds, tree.predict(rows))  # same doubles, same operations in the same order


def test_python_source_reproduces_predict(model):
    tree, rows = model
    namespace = {}
    exec(compile(codegen.python_source(tree), "generated.py", "exec"), namespace)
    leaves = [namespace["leaf"](list(r)) for r in rows]
    preds = [namespace["predict"](list(r)) for r in rows]
    _assert_same_predictions(tree, rows, leaves, np.array(preds))
    named = dict(zip(namespace["IDENTIFIERS"], rows[0]))
    assert namespace["predict_named"](**named) == preds[0]
    assert list(namespace["FEATURES"]) == NASTY


def test_python_source_refuses_rows_of_the_wrong_width():
    namespace = {}
    exec(codegen.python_source(stump()), namespace)
    with pytest.raises(ValueError, match="expected 2 feature values"):
        namespace["predict"]([1.0])
    with pytest.raises(TypeError, match="missing features"):
        namespace["predict_named"](temp=1.0)


HARNESS = r"""
#include <stdio.h>
double get_predict(const double x[]);
int get_leaf(const double x[]);
extern const char *const GET_FEATURE_NAMES[];
int main(void) {
    int n, p;
    if (scanf("%d %d", &n, &p) != 2) return 2;
    double x[64];
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < p; ++j) if (scanf("%lf", &x[j]) != 1) return 3;
        printf("%d %.17g\n", get_leaf(x), get_predict(x));
    }
    for (int j = 0; j < p; ++j) printf("%s\n", GET_FEATURE_NAMES[j]);
    return 0;
}
"""


def run_c_model(tree, harness: str, header: str, rows: np.ndarray, tmp_path: Path) -> list[str]:
    """The lines ``harness`` (a C main) prints when compiled strictly with the tree's C source and fed ``header``
    then ``rows``, one per line, in full precision."""
    (tmp_path / "model.c").write_text(codegen.c_source(tree), encoding="utf-8")
    (tmp_path / "main.c").write_text(harness)
    exe = tmp_path / "predict"
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-ffp-contract=off",
                    str(tmp_path / "model.c"), str(tmp_path / "main.c"), "-o", str(exe), "-lm"], check=True,
                   capture_output=True)
    stdin = f"{header}\n" + "\n".join(" ".join(repr(float(v)) for v in r) for r in rows)
    out = subprocess.run([str(exe)], input=stdin.encode(), capture_output=True, check=True).stdout.decode("utf-8")
    return out.splitlines()


@needs_gcc
def test_c_source_compiles_cleanly_and_reproduces_predict(model, tmp_path):
    tree, rows = model
    lines = run_c_model(tree, HARNESS, f"{len(rows)} {rows.shape[1]}", rows, tmp_path)
    pairs = [line.split() for line in lines[: len(rows)]]
    _assert_same_predictions(tree, rows, [int(a) for a, _ in pairs], np.array([float(b) for _, b in pairs]))
    assert lines[len(rows):] == NASTY  # names survive as C string literals, byte for byte


def test_feature_identifiers_are_valid_unique_and_documented():
    names = ["temp", "a b", "a-b", "2nd", "class", "for", "", "é", "x0", "temp", "π"]
    assert codegen.feature_identifiers(names) == [
        "temp", "a_b", "a_b_2", "f_2nd", "f_class", "f_for", "x6", "e", "x0", "temp_2", "x10"]


def test_rules_text_of_a_hand_made_stump():
    assert export.rules_text(stump()) == (
        "# GET oblique regression tree: depth 1, constant leaves, 2 features, 5 parameters.\n"
        "# Each 'if' is a weighted sum of features in their original units; 'return' gives the target.\n"
        "# Terms are ordered by their size over the feature's training range, largest first.\n"
        "# Numbers are written in full (each reads back as the model's own double), so the rules send a row to the "
        "leaf the model does.\n"
        "\n"
        "if 2*temp - 1*pressure <= 3:  # node 1\n"
        "    return 10  # leaf 2, 3 train rows\n"
        "else:\n"
        "    return 20  # leaf 3, 2 train rows\n"
    )


def test_model_json_round_trips_exactly(model):
    tree, rows = model
    again = model_file.load_model_json(model_file.model_json(tree))
    np.testing.assert_array_equal(again.predict(rows), tree.predict(rows))
    assert again.feature_names == NASTY


def test_dot_source_escapes_html_and_quotes_in_feature_names():
    tree, _, _ = make_tree(depth=2, p=3, names=['<b>x</b> & "y"', "a\\Nb", "plain"], seed=2)
    dot = export.dot_source(tree)
    assert "<b>x</b>" not in dot and "&lt;b&gt;x&lt;/b&gt; &amp; &quot;y&quot;" in dot
    assert 'a\\\\\\\\Nb' in dot  # tooltip: four backslashes survive Graphviz's two unescaping passes


@needs_dot
def test_svg_source_shows_names_verbatim_and_is_well_formed():
    names = ['<script>alert(1)</script>', 'q"uote', "a\\Nb"]
    tree, _, _ = make_tree(depth=1, p=3, names=names, seed=3)
    svg = export.svg_source(tree, diagram_content.DiagramOptions(max_terms=3, max_name=60))
    root = ET.fromstring(svg.encode("utf-8"))
    assert not root.findall(".//{http://www.w3.org/2000/svg}script")
    text = " ".join("".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text"))
    for name in names:
        assert name in text


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.scripts, self.text = [], []

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.scripts.append(dict(attrs))

    def handle_data(self, data):
        self.text.append(data)


@needs_dot
def test_html_report_is_self_contained_and_escapes_user_strings():
    tree, _, _ = make_tree(depth=2, p=3, names=["<img src=x onerror=alert(1)>", "b", "c"], seed=5)
    html = export.html_report(tree, title="Run <1>", metrics={"test R2": 0.91, "<i>note</i>": "</script>"},
                              data_info={"dataset": "a & b.csv"}, params={"alpha_range": [5, 150]},
                              baselines={"models": {"cart": {"name": "CART", "r2": 0.8, "rmse": 1.5}}})
    parser = _Collector()
    parser.feed(html)
    assert parser.scripts == [{"type": "application/json", "id": "get-model"}]
    assert "<img" not in html and "<i>note" not in html and "Run &lt;1&gt;" in html
    assert "<svg" in html and "http://" not in html.split("<svg", 1)[0]  # nothing fetched before the diagram
    assert re.search(r"<link|src=\"http", html) is None
    text = "".join(parser.text)
    assert "a & b.csv" in text and "CART" in text and "if " in text
    embedded = html.split('id="get-model">', 1)[1].split("</script>", 1)[0]
    assert model_file.load_model_json(embedded).feature_names == tree.feature_names


def test_html_report_opens_with_the_summary_in_plain_words_escaped():
    tree, X, y = make_tree(depth=2, p=3, names=["<b>temp</b>", "b", "c"], seed=5)
    in_words = summary.summarize(tree, X[150:], y[150:], target="yield & co")
    html = export.html_report(tree, created="now", in_words=in_words)
    section = html.split("<h2>In plain words</h2>", 1)[1].split("<h2>", 1)[0]
    assert section.count("<li>") == len(in_words.sentences()) == 4
    assert "yield &amp; co with 4 rules" in section and "least accurate in leaf" in section
    assert "<b>temp" not in html and "&lt;b&gt;temp&lt;/b&gt; (" in section  # the top feature, escaped
    assert "4 rules" in export.html_report(tree, created="now")  # the model alone still has its summary


@needs_dot
def test_the_reports_diagram_opens_fitted_to_a_window_wide_box_with_readable_levels_and_css_zoom():
    """Issue 35: at its natural size a depth-4 tree opened with its root off-screen; it now opens fitted to the width
    with the levels that stay readable so (the rest collapsed, the rules below cover the whole tree)."""
    tree, _, _ = make_tree(depth=4, p=4, seed=2)
    html = export.html_report(tree, include_model=False)
    box = html.split('<div class="diagram-box">', 1)[1].split("</svg>", 1)[0] + "</svg>"
    levels = export.diagram.readable_levels(tree)
    assert 2 <= levels <= tree.depth  # a depth-4 tree of dense splits is too wide to show whole
    shown = export.diagram.svg_width_px(box.split('<div class="diagram">', 1)[1])
    assert shown * export.diagram.READABLE <= export.diagram.OPEN_WIDTH_PX  # fitted, its text stays readable
    assert f"The top {levels} levels of {tree.depth + 1}" in html and "nodes below" in box
    css = html.split("<style>", 1)[1].split("</style>", 1)[0]
    assert re.search(r"\.diagram \{[^}]*overflow: auto", css) and ".diagram-box { width: 96vw;" in css
    radios = re.findall(r'<input type="radio" name="get-zoom" id="get-zoom-(\w+)"( checked)?>', box)
    assert [z for z, _ in radios] == list(export.ZOOMS) and [z for z, c in radios if c] == ["fit"]
    for zoom in ("50", "75", "150"):  # each size is a CSS rule on the radio's state, no script
        assert f"#get-zoom-{zoom}:checked ~ .diagram svg {{ zoom: {int(zoom) / 100:g}; }}" in css
    assert "#get-zoom-fit:checked ~ .diagram svg { max-width: 100%; height: auto; }" in css  # shrinks, never grows
    assert "<script" not in html


def test_rule_lines_of_a_stump_read_as_nested_rules():
    assert "\n".join(export.rule_lines(stump())) + "\n" == (
        "if 2*temp - 1*pressure <= 3:  # node 1\n"
        "    return 10  # leaf 2, 3 train rows\n"
        "else:\n"
        "    return 20  # leaf 3, 2 train rows\n"
    )


def test_rules_keep_one_line_per_test_whatever_the_feature_names():
    tree = stump(names=("inlet\ntemp", "pressure  (bar)"))
    rules = export.rule_lines(tree)
    assert rules[0] == "if 2*inlet temp - 1*pressure  (bar) <= 3:  # node 1"
    assert len("\n".join(rules).splitlines()) == 4


def _leaf_by_rules(lines: list[str], names: list[str], row: np.ndarray) -> int:
    """The leaf the rules send ``row`` to, each test evaluated as written (its terms added left to right in double
    precision), as a reader who pastes them into a program would."""
    values = dict(zip(names, map(float, row)))
    term = re.compile(r"(-?)\s*([0-9.e+-]+)\*(\w+)")
    i, depth = 0, 0
    while True:
        line = lines[i]
        if line.strip().startswith("return"):
            return int(re.search(r"# leaf (\d+)", line).group(1))
        condition = line.strip()[3:line.strip().index(":  # node")]
        lhs, op, threshold = re.fullmatch(r"(.*) (<=|>=) (\S+)", condition).groups()
        if lhs in values:  # a one-feature split as a threshold: "name <= t" or "name >= t"
            goes_left = values[lhs] <= float(threshold) if op == "<=" else values[lhs] >= float(threshold)
        else:
            total = 0.0
            for sign, coef, name in term.findall(lhs.replace("+ ", "").replace("- ", "-")):
                total += (-1.0 if sign else 1.0) * float(coef) * values[name]
            goes_left = total <= float(threshold)
        if goes_left:
            i += 1
        else:  # skip to this test's else, at the same depth
            i = next(k for k in range(i + 1, len(lines))
                     if lines[k] == "    " * depth + "else:") + 1
        depth += 1


@pytest.mark.parametrize("k", [None, 2])
def test_rules_as_written_route_every_training_row_of_a_real_dataset_as_predict_does(k):
    frame = pd.read_csv(EXAMPLES / "airfoil_self_noise.csv")
    X, y = frame.drop(columns="target"), frame["target"].to_numpy()
    tree = GETRegressor(depth=4, n_starts=2, n_epochs=60, n_alphas=3, random_state=0,
                        max_split_features=k).fit(X, y).tree_
    lines, rows = export.rule_lines(tree), X.to_numpy(dtype=float)
    tests = [line for line in lines if line.lstrip().startswith("if ")]
    assert [max(1, line.count("*")) for line in tests] == [
        int(tree.split_widths[int(line.rsplit("# node ", 1)[1]) - 1]) for line in tests]  # only non-zero terms
    assert all(line.count("*") != 1 for line in tests)  # one feature reads "name <= t" (or ">="), no weight
    assert k is None or tree.split_widths.max() <= k
    by_rules = np.array([_leaf_by_rules(lines, tree.feature_names, row) for row in rows])
    np.testing.assert_array_equal(by_rules, tree.apply(rows))  # 4 significant digits sent a row astray here


@settings(derandomize=True, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_number_written_in_full_reads_back_as_the_same_double(value):
    assert float(labels.fmt(value, None, unicode=False)) == value + 0.0


def test_rounded_rules_say_they_are_rounded():
    assert "# Numbers are rounded to 4 significant digits" in export.rules_text(stump(), decimals=4)


def test_rules_text_explains_clip_only_for_a_tree_with_leaf_bounds():
    bounded, _, _ = make_tree(depth=2, p=3, leaf="linear", seed=2)
    assert "# clip(v, lo, hi) keeps v within [lo, hi]" in export.rules_text(bounded)
    assert "clip(" not in export.rules_text(stump())


def test_the_report_names_the_percentiles_a_robust_tree_was_scaled_by_and_a_bad_meta_is_read_as_min_max():
    from get_core import GETRegressor

    X = np.random.default_rng(0).random((60, 2))
    X[0, 0] = 1e5
    robust = GETRegressor(depth=1, n_starts=1, n_epochs=2, random_state=0, scaling="robust").fit(X, X[:, 1]).tree_
    page = export.html_report(robust)
    assert "training 1st-99th percentiles" in page and "99th percentile" in page and ">Max<" not in page
    robust.meta["config"] = None  # a hand-edited model file
    assert robust.scaling == "minmax" and ">Max<" in export.html_report(robust)


HIDDEN_NAMES = ["x\u202egnp.exe", "a\u200bb", "nul\x00byte"]
HIDDEN_SHOWN = ["x\\u202egnp.exe", "a\\u200bb", "nul\\u0000byte"]


def _no_hidden_characters(text: str) -> None:
    for ch in ("\u202e", "\u200b", "\x00"):
        assert ch not in text, repr(ch)


def test_rules_show_right_to_left_overrides_zero_width_characters_and_nul_escaped():
    tree, _, _ = make_tree(depth=2, p=3, names=HIDDEN_NAMES, seed=4)
    rules = export.rules_text(tree, target_name="price\u202e")
    _no_hidden_characters(rules)
    assert all(shown in rules for shown in HIDDEN_SHOWN) and "price\\u202e" in rules


@needs_dot
def test_the_svg_and_the_report_show_hidden_characters_escaped():
    tree, _, _ = make_tree(depth=1, p=3, names=HIDDEN_NAMES, seed=4)
    svg = export.svg_source(tree, export.diagram.DiagramOptions(max_terms=3, max_name=60))
    text = " ".join("".join(t.itertext()) for t in ET.fromstring(svg.encode("utf-8")).iter())
    _no_hidden_characters(svg)
    assert all(shown in text for shown in HIDDEN_SHOWN)
    html = export.html_report(tree, title="Run\u200b1", data_info={"dataset": "a\x00.csv"}, include_model=False)
    _no_hidden_characters(html)
    assert "Run\\u200b1" in html and "a\\u0000.csv" in html and all(shown in html for shown in HIDDEN_SHOWN)


def test_visible_keeps_letters_of_every_script_and_ordinary_spaces():
    assert labels.visible("Größe 温度 température\u00a0°C") == "Größe 温度 température\u00a0°C"
