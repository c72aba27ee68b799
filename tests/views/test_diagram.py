"""The diagram: visible levels, labels, escaping, DOT/SVG and layout."""

import re
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core.views import diagram, diagram_content, labels
from get_core.views.diagram import DiagramOptions
from tests.trees import make_tree, stump

SVG = "{http://www.w3.org/2000/svg}"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot not installed")


def test_visible_nodes_shows_top_levels_and_expands_under_a_node():
    tree, _, _ = make_tree(depth=6, p=2)
    assert diagram_content.visible_nodes(tree, DiagramOptions(levels=1)) == [1]
    assert diagram_content.visible_nodes(tree, DiagramOptions(levels=3)) == [1, 2, 3, 4, 5, 6, 7]
    expanded = diagram_content.visible_nodes(tree, DiagramOptions(levels=2, expanded=frozenset({3})))
    assert expanded == [1, 2, 3, 6, 7, 12, 13, 14, 15]
    assert diagram_content.visible_nodes(tree, DiagramOptions(levels=2, root=5)) == [5, 10, 11]


def test_visible_nodes_of_a_deep_tree_stay_few():
    tree, _, _ = make_tree(depth=12, p=2, n_rows=500)
    assert len(diagram_content.visible_nodes(tree, DiagramOptions(levels=4))) == 15


def test_empty_subtrees_are_pruned_and_hidden_nodes_counted():
    tree, _, _ = make_tree(depth=3, p=2, empty_subtree=True)
    assert tree.is_empty(3)
    shown = diagram_content.visible_nodes(tree, DiagramOptions(levels=3))
    assert shown == [1, 2, 3, 4, 5]
    assert diagram_content.hidden_count(tree, 4, set(shown)) == 2
    assert diagram_content.hidden_count(tree, 1, set(shown)) == 0
    assert "empty" in diagram.node_label(tree, 3)


def test_invalid_view_root_is_refused():
    with pytest.raises(ValueError, match="does not exist"):
        diagram_content.visible_nodes(stump(), DiagramOptions(root=9))


def test_branch_label_puts_largest_terms_first_in_original_units():
    tree = stump(("temp", "pressure"))
    assert labels.split_text(tree, 1) == "2\u00b7temp \u2212 1\u00b7pressure \u2264 3"
    assert labels.split_text(tree, 1, max_terms=1) == "2\u00b7temp \u2212 1\u00b7pressure \u2264 3"  # no "(1 more)"
    three = stump(("temp", "pressure", "wind"))
    three.weights[0, 2] = 0.5
    assert labels.split_text(three, 1, max_terms=1) == "2\u00b7temp \u2212 1\u00b7pressure + 0.5\u00b7wind \u2264 3"
    four = stump(("temp", "pressure", "wind", "rain"))
    four.weights[0, 2:] = 0.5, 0.25
    assert labels.split_text(four, 1, max_terms=1) == "2\u00b7temp + \u2026 (3 more) \u2264 3"
    assert labels.split_text(tree, 1, unicode=False, go_right=True) == "2*temp - 1*pressure > 3"
    assert diagram.node_label(tree, 1) == (
        '<B>#1</B>  5 rows<BR ALIGN="LEFT"/>2\u00b7temp \u2212 1\u00b7pressure \u2264 3<BR ALIGN="LEFT"/>')


def test_a_split_of_at_most_three_terms_is_one_whole_sentence_without_its_zero_weights():
    tree = stump(("temperature", "vacuum", "humidity", "wind", "rain"))
    tree.weights[0] = [0.8, -0.3, 0.0, 0.0, 0.05]  # identity scaling: original units are the weights themselves
    tree.thresholds[0] = 12.1
    label = diagram.node_label(tree, 1, DiagramOptions(max_terms=1))
    sentence = "0.8\u00b7temperature \u2212 0.3\u00b7vacuum + 0.05\u00b7rain \u2264 12.1"
    assert label == f'<B>#1</B>  5 rows<BR ALIGN="LEFT"/>{sentence}<BR ALIGN="LEFT"/>'
    assert "humidity" not in label and "wind" not in label and labels.ELLIPSIS not in label
    assert "numbers rounded" not in diagram.to_dot(tree)  # every number drawn is the model's own


def test_a_long_sentence_breaks_before_its_threshold_and_a_dense_split_keeps_its_summary():
    tree = stump(("a long feature name", "another feature name", "third", "fourth"))
    tree.weights[0, 2] = 0.5
    lines = diagram.node_label(tree, 1).split('<BR ALIGN="LEFT"/>')[1:-1]
    assert lines == ["2\u00b7a long feature name \u2212 1\u00b7another feature name + 0.5\u00b7third",
                     "\u2264 3"]
    tree.weights[0, 3] = 0.25
    assert "(3 more)" in diagram.node_label(tree, 1, DiagramOptions(max_terms=1))


def test_a_rounded_sentence_says_so_and_its_hover_text_routes_every_row_as_the_model_does():
    tree, X, _ = make_tree(depth=3, p=6, seed=4, names=[f"f{j}" for j in range(6)])
    tree.weights[:, 2:] = 0.0  # two features per split: every label a whole sentence
    dot = diagram.to_dot(tree, DiagramOptions(levels=4))
    assert "numbers rounded to 3 significant digits" in dot
    for t in range(1, tree.n_branches + 1):
        assert labels.rounds(tree, t, 3) and not labels.rounds(tree, t, None)
        text = diagram_content.node_tooltip(tree, t).split(": left if ")[1]
        assert labels.ELLIPSIS not in text and text.count("*") == 2
        assert np.array_equal(_sentence_holds(text, X), tree.margins(X)[:, t - 1] <= 0)


def _sentence_holds(text: str, X: np.ndarray) -> np.ndarray:
    """Rows of ``X`` (columns f0, f1, ...) for which a plain-ASCII split sentence holds, as a reader computes it."""
    lhs, c = text.split(" <= ")
    total = np.zeros(len(X))
    for sign, coef, j in re.findall(r"(^|[+-] ?)(-?[0-9.e+-]+)\*f(\d+)", lhs):
        total += (-1.0 if sign.strip() == "-" else 1.0) * float(coef) * X[:, int(j)]
    return total <= float(c)


def test_leaf_label_shows_prediction_and_count():
    assert diagram.node_label(stump(), 3) == ('<B>leaf #3</B>  2 rows<BR ALIGN="LEFT"/>'
                                              '\u0177 = <B>20</B><BR ALIGN="LEFT"/>')


def test_linear_leaf_label_summarizes_the_model():
    tree, _, _ = make_tree(depth=1, p=5, leaf="linear", seed=3)
    label = diagram.node_label(tree, 2, DiagramOptions(max_terms=3))
    assert "\u0177 = " in label and "(3 more)" in label and "mean" in label
    assert "kept within [" in label  # leaf 2 has bounds in make_tree
    assert "kept within" not in diagram.node_label(tree, 3, DiagramOptions(max_terms=3))  # the last leaf: none


def test_leaf_colors_run_from_low_to_high_value():
    colors = diagram_content.leaf_colors(stump())
    assert colors == {2: diagram_content.color_scale(0.0), 3: diagram_content.color_scale(1.0)}
    assert diagram_content.color_scale(0.0) == "#c6dbef" and diagram_content.color_scale(1.0) == "#fdae61"


def test_dot_escapes_feature_names_with_html_and_quotes():
    tree = stump(('<b>temp</b>', 'pres"sure & co'))
    dot = diagram.to_dot(tree)
    assert "<b>temp</b>" not in dot and '"sure' not in dot.replace('\\"sure', "")
    assert "&lt;b&gt;temp&lt;/b&gt;" in dot and "pres&quot;sure &amp; co" in dot
    assert dot.count("->") == 2 and 'id="get-node-1"' in dot


def test_dot_strings_and_html_labels_escape_the_special_characters():
    assert diagram.escape_dot_string('a"b\\c<d>&') == 'a"b\\\\\\\\c&lt;d&gt;&amp;'
    assert diagram.escape_html_label('x<y & "z"\\N\n') == "x&lt;y &amp; &quot;z&quot;&#92;&#92;N "
    dot = diagram.to_dot(stump(('a"b\\c<d>&', "other")))
    assert 'tooltip="node 1: left if 2*a\\"b\\\\\\\\c&lt;d&gt;&amp; - 1*other &lt;= 3"' in dot  # quoted by graphviz


@needs_dot
@pytest.mark.parametrize("name", ["a\\Nb", "x & y", "&lt;", "<script>alert(1)</script>", '"q"', "p\\lq",
                                  "\u00fcn\u00ef c\u00f6d\u00e9", "it's", "e\\"])
def test_names_survive_graphviz_verbatim_in_labels_and_tooltips(name):
    tree = stump((name, "other"))
    svg = diagram.clickable_svg(tree, DiagramOptions(max_name=100))
    root = ET.fromstring(svg)
    node = root.find(f".//{SVG}g[@id='get-node-1']")
    text = " ".join("".join(t.itertext()) for t in node.iter(f"{SVG}text"))
    tooltip = node.find(f".//{SVG}a").get("{http://www.w3.org/1999/xlink}title")
    assert f"2\u00b7{name}" in text
    assert f"2*{name}" in tooltip
    assert not root.findall(f".//{SVG}script")


HOSTILE_NAMES = [
    'say "hi"', "back\\slash\\", "a<b", "a>b", "AT&T", "{set}", "a|b", "two\nlines", "\r\ttabbed",
    "<b>bold</b>", '<<table><tr><td>x</td></tr></table>>', "&amp;", "\\N\\G\\L", "node", "graph", "subgraph",
    "edge", "digraph", "strict", "--", "->", "a -> b [color=red]", "}; n9 [label=x]; {", "x" * 20_000,
    "\u05e9\u05dc\u05d5\u05dd \u0639\u0631\u0628\u064a", "\u202eevil\u202c", "\U0001f333 tree \U0001f9ea",
    "e\u0301\u0327 n\u0303", "\x00\x07bell", "",
]


def _words(text: str) -> str:
    """Whitespace runs as one space (Graphviz draws repeated spaces as no-break spaces)."""
    return " ".join(text.replace("\xa0", " ").split())


@needs_dot
@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
def test_hostile_names_render_as_parseable_svg_with_their_text_and_clickable_nodes(name):
    tree = stump((name, "other"))
    svg = diagram.clickable_svg(tree, DiagramOptions(max_name=60))
    root = ET.fromstring(svg)  # well-formed XML, nothing injected
    groups = {g.get("id"): g for g in root.iter(f"{SVG}g") if "get-node" in (g.get("class") or "").split()}
    assert sorted(groups) == ["get-node-1", "get-node-2", "get-node-3"]  # what tree.js maps a click through
    assert "get-branch" in groups["get-node-1"].get("class") and "get-leaf" in groups["get-node-3"].get("class")
    text = " ".join("".join(t.itertext()) for t in groups["get-node-1"].iter(f"{SVG}text"))
    tooltip = groups["get-node-1"].find(f".//{SVG}a").get("{http://www.w3.org/1999/xlink}title")
    hidden = {"\x00": "\\u0000", "\x07": "\\u0007", "\u202e": "\\u202e", "\u202c": "\\u202c"}  # shown escaped
    shown = "".join(" " if ch in "\n\r\t" else hidden.get(ch, ch) for ch in name)  # line breaks and tabs as spaces
    in_label = shown if len(shown) <= 60 else shown[:59] + labels.ELLIPSIS
    assert _words(f"2\u00b7{in_label} \u2212 1\u00b7other") in _words(text)
    assert _words(tooltip).startswith(_words(f"node 1: left if 2*{shown[:3000]}"))  # whole, or cut if very long
    plain = ET.fromstring(diagram.clickable_svg(stump(("temp", "other")), DiagramOptions(max_name=60)))
    assert _tags(root) == _tags(plain)  # the same elements: nothing injected


def _tags(svg: ET.Element) -> list[str]:
    """The SVG's element tags, a run of text lines as one (a long name breaks a split sentence over two)."""
    tags = [e.tag for e in svg.iter()]
    return [t for i, t in enumerate(tags) if not (t == f"{SVG}text" and i and tags[i - 1] == t)]


def test_a_tooltip_past_graphvizs_string_limit_is_cut_with_an_ellipsis():
    escaped = diagram.escape_dot_string("&" * 20_000)
    assert len(escaped.encode()) <= diagram.MAX_DOT_STRING and escaped.endswith(labels.ELLIPSIS)
    assert diagram.escape_dot_string("&" * 100) == "&amp;" * 100  # short text is never cut


@needs_dot
def test_clickable_svg_groups_carry_node_ids():
    tree, _, _ = make_tree(depth=3, p=3)
    svg = diagram.clickable_svg(tree, DiagramOptions(levels=3))
    assert not svg.startswith("<?xml") and "<!--" not in svg
    root = ET.fromstring(svg)
    ids = sorted(diagram.node_id_from_element_id(g.get("id")) for g in root.iter(f"{SVG}g")
                 if "get-node" in (g.get("class") or "").split())
    assert ids == [1, 2, 3, 4, 5, 6, 7]


@needs_dot
def test_every_drawn_node_is_focusable_and_named_for_a_screen_reader():
    names = ['wind "speed"', "<b>pressure</b>", "rain & snow"]
    tree, _, _ = make_tree(depth=2, p=3, names=names, empty_subtree=True)
    root = ET.fromstring(diagram.clickable_svg(tree, DiagramOptions(levels=3, prune_empty=False)))
    groups = {diagram.node_id_from_element_id(g.get("id")): g for g in root.iter(f"{SVG}g")
              if "get-node" in (g.get("class") or "").split()}
    assert sorted(groups) == list(range(1, 8))
    for node, group in groups.items():
        assert (group.get("tabindex"), group.get("role")) == ("0", "button")
        assert group.get("aria-label") == diagram_content.node_name(tree, node)  # entities decoded: names verbatim
    assert groups[1].get("aria-label").startswith("split 1: left if ")
    assert any(n in groups[1].get("aria-label") for n in names)
    assert groups[5].get("aria-label") == f"leaf 5: y = {labels.leaf_text(tree, 5, 3, diagram_content.ARIA_TERMS)}"
    assert groups[7].get("aria-label") == "leaf 7: empty, no training row reaches it"  # the root sends all left
    assert groups[3].get("aria-label") == "split 3: empty, no training row reaches it"


@needs_dot
@settings(derandomize=True, max_examples=25, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=30), min_size=2, max_size=2, unique=True))
def test_node_names_of_any_feature_names_read_back_verbatim_from_the_svg(names):
    tree, _, _ = make_tree(depth=1, p=2, names=names)
    root = ET.fromstring(diagram.clickable_svg(tree, DiagramOptions(levels=2)))
    labels_read = {diagram.node_id_from_element_id(g.get("id")): g.get("aria-label") for g in root.iter(f"{SVG}g")
                   if "get-node" in (g.get("class") or "").split()}
    assert labels_read == {n: diagram_content.node_name(tree, n) for n in (1, 2, 3)}


@needs_dot
def test_layout_puts_children_below_and_left_child_left():
    tree, _, _ = make_tree(depth=3, p=3)
    result = diagram.layout(diagram.to_dot(tree, DiagramOptions(levels=4)))
    assert sorted(result.nodes) == list(range(1, 16))
    assert len(result.edges) == 14
    for parent in range(1, 8):
        left, right = result.nodes[2 * parent], result.nodes[2 * parent + 1]
        assert left.y < result.nodes[parent].y and right.y < result.nodes[parent].y  # Graphviz: y grows upward
        assert left.x < right.x
    assert all(box.width > 0 and box.height > 0 for box in result.nodes.values())
    assert result.width >= max(b.x for b in result.nodes.values())


def test_render_reports_a_missing_graphviz(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no dot on the PATH
    with pytest.raises(diagram.GraphvizError, match="apt-get install graphviz"):
        diagram.render("digraph {}")


@needs_dot
def test_render_reports_dots_own_message_when_the_source_is_broken():
    with pytest.raises(diagram.GraphvizError, match=r"Graphviz failed \(exit 1\): .*syntax error"):
        diagram.render("digraph { a -> }")


def test_a_view_with_too_many_nodes_is_refused_before_dot_runs(monkeypatch, tmp_path):
    tree, _, _ = make_tree(depth=11, p=2, n_rows=50)
    dot = diagram.to_dot(tree, DiagramOptions(levels=12, prune_empty=False))  # every node: 4095
    assert dot.count("get-node-") == 4095 and dot.count(" -> ") == 4094  # the DOT download keeps them all
    monkeypatch.setenv("PATH", str(tmp_path))  # refused before dot is looked for
    with pytest.raises(diagram.GraphvizError, match="4,095 nodes, more than the 2,047 .* collapse expanded subtrees"):
        diagram.render_svg(dot)


def test_node_id_from_element_id():
    assert diagram.node_id_from_element_id("get-node-12") == 12
    assert diagram.node_id_from_element_id("node12") is None
    assert diagram.node_id_from_element_id("get-node-1x") is None


def test_component_assets_are_readable():
    assets = diagram.component_assets()
    assert "setTriggerValue" in assets["js"] and diagram.NODE_ID_PREFIX in assets["js"]
    assert ".get-selected" in assets["css"]


def test_reveal_expands_the_ancestors_of_a_deep_node():
    tree, _, _ = make_tree(depth=8, p=2, n_rows=2000)
    options = diagram_content.reveal(tree, DiagramOptions(levels=2), 2 * 2 * 2 * 2 * 2 + 1)  # node 33, level 5
    assert 33 in diagram_content.visible_nodes(tree, options)
    assert diagram_content.reveal(tree, DiagramOptions(levels=3), 5) == DiagramOptions(levels=3)
    assert diagram_content.reveal(tree, DiagramOptions(levels=2, root=3), 4).root == 1


HOSTILE_LABELS = ["", " ", "\t", "<", "<0.1%", "&", "<B></B>", '"', "\\", "]", "[", "\n"]
CLASS_CHARACTERS = st.characters(exclude_categories=["Cs"], exclude_characters="\0")  # what a class label may hold


@needs_dot
@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.lists(st.one_of(st.sampled_from(HOSTILE_LABELS), st.text(CLASS_CHARACTERS, max_size=6)), min_size=2,
                max_size=5, unique=True))
def test_any_class_labels_draw(class_labels):
    """A class labelled '' made Graphviz fail on an empty <B></B> (and the Tree page show 'undefined')."""
    from tests.trees import make_class_tree

    tree, _, _ = make_class_tree(depth=2, labels=class_labels)
    svg = diagram.render_svg(diagram.to_dot(tree, DiagramOptions(levels=3)))
    assert "<svg" in svg
    assert all(labels.class_name(c).strip() for c in class_labels)  # every label reads as something


def _many_classes(n_classes: int):
    """A depth-3 class tree of ``n_classes`` classes: every share tiny (most under 0.1%)."""
    from get_core.model import model_file
    from tests.trees import make_class_tree

    data = model_file.to_dict(make_class_tree(depth=3, n_classes=2)[0])
    rng = np.random.default_rng(0)
    proba = rng.random((8, n_classes)) ** 8
    data.update(classes=list(range(n_classes)), leaf_proba=(proba / proba.sum(axis=1, keepdims=True)).tolist(),
                node_counts=rng.integers(0, 3, (15, n_classes)).tolist())
    return model_file.from_dict(data, max_classes=n_classes)


@needs_dot
def test_thousands_of_classes_draw_with_a_bounded_bar_and_legend():
    """5,000 classes: a share written '<0.1%' went into the HTML label unescaped (Graphviz's syntax error), and the
    bars and the title grew with the class count."""
    tree = _many_classes(5_000)
    dot = diagram.to_dot(tree, DiagramOptions(levels=4))
    assert "<svg" in diagram.render_svg(dot)
    assert dot.count("<TD WIDTH=") <= 8 * (diagram.BAR_CLASSES + 1)
    assert diagram.class_legend(tree).endswith(f"and {5_000 - diagram.LEGEND_CLASSES:,} more classes")
