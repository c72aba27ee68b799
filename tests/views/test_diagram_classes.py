"""The diagram of a classification tree: each leaf names its class and every class's share (in words and as a bar),
every node is filled with its class's colour from a colour-blind-safe palette, and the title says which is which."""

import re
import shutil

import numpy as np
import pytest

from get_core.views import diagram, diagram_content, labels
from tests.trees import class_stump, make_class_tree


def test_a_class_leaf_names_its_class_and_the_shares_in_words_and_draws_a_bar_in_class_colours():
    tree = class_stump(classes=("bad <credit>", "good"))
    label = diagram.node_label(tree, 2)
    assert "\u0177 = <B>bad &lt;credit&gt;</B> 80%" in label and "bad &lt;credit&gt; 80%, good 20%" in label
    bar = re.findall(r'<TD WIDTH="(\d+)" HEIGHT="7" FIXEDSIZE="TRUE" BGCOLOR="(#\w+)">', label)
    assert bar == [(str(round(0.8 * diagram.BAR_WIDTH)), "#e69f00"), (str(round(0.2 * diagram.BAR_WIDTH)), "#56b4e9")]
    assert "mostly <B>bad &lt;credit&gt;</B> 55.6%" in diagram.node_label(tree, 1)  # the root's majority class


def test_every_node_is_filled_by_its_class_and_the_title_names_the_colours():
    tree, _, _ = make_class_tree(depth=3, n_classes=3, seed=2, empty_subtree=True)
    colors = diagram.leaf_colors(tree)
    for node in range(1, tree.n_nodes + 1):
        if tree.is_empty(node):
            assert node not in colors
            continue
        strength = diagram_content.CLASS_TINT["leaf" if tree.is_leaf(node) else "branch"]
        assert colors[node] == diagram.class_color(labels.node_class(tree, node), strength)
    assert "fill: orange class 0, sky blue class 1, green class 2" in diagram.to_dot(tree)
    assert diagram.class_color(0) == "#e69f00" and diagram.class_color(7) == diagram.class_color(0)


def test_hover_text_and_screen_reader_names_give_the_class_and_exact_probabilities():
    tree = class_stump()
    assert diagram.node_tooltip(tree, 3) == "leaf 3: class good (75%); probabilities bad 0.25, good 0.75"
    assert diagram.node_name(tree, 3) == "leaf 3: class good (75%)"


def test_shares_text_orders_classes_by_share_and_summarizes_the_rest():
    tree, _, _ = make_class_tree(depth=1, n_classes=5, seed=1)
    shares = np.array([0.1, 0.4, 0.0, 0.3, 0.2])
    assert labels.shares_text(tree, shares, max_classes=2) == "class 1 40%, class 3 30%, \u2026 (2 more)"
    assert labels.shares_text(tree, shares, max_classes=3) == "class 1 40%, class 3 30%, class 4 20%, class 0 10%"
    assert [labels.percent(v) for v in (1.0, 1 / 3, 0.004, 0.0001, 0.0)] == ["100%", "33.3%", "0.4%", "<0.1%", "0%"]


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot not installed")
def test_graphviz_draws_a_class_tree_with_its_bars():
    tree, _, _ = make_class_tree(depth=2, labels=['a "quoted" & <odd> class', "b"], seed=4)
    svg = diagram.clickable_svg(tree, diagram.DiagramOptions(levels=3))
    assert svg.count('class="node get&#45;node') == tree.n_nodes
    assert svg.count('fill="#e69f00"') + svg.count('fill="#56b4e9"') >= 4  # bar cells in full colour
    assert 'aria-label="leaf 4: class ' in svg
