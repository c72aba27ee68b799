"""Logistic leaves in words (issue 52): each stated odds factor is the model's own (Hypothesis: the odds ratio
``predict_proba`` gives for a +step change, before the mix with even odds), and the diagram's label, its tooltip and
screen-reader name, the summary and the HTML report say them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core import export
from get_core.views import diagram, diagram_content, labels, summary
from tests.model.test_logistic_leaves_model import with_logits
from tests.trees import make_class_tree

NAMES = ["age", "income", "debt", "owner"]


def logistic_tree(n_classes: int, seed: int, modelled: float = 1.0, scale: float = 1.0):
    tree, X, _ = make_class_tree(depth=2, p=4, n_classes=n_classes, seed=seed, names=NAMES)
    return with_logits(tree, seed, scale=scale, modelled=modelled), X


def test_the_step_is_one_unit_for_everyday_spans_and_a_power_of_ten_for_others():
    assert [labels.odds_step(s) for s in (60.0, 1.0, 1000.0, 40_000.0, 0.3, 0.0)] == [1, 1, 1, 1000, 0.01, 1]


@settings(max_examples=40, deadline=None)
@given(n_classes=st.integers(2, 4), seed=st.integers(0, 10 ** 6), spans=st.lists(
    st.sampled_from([0.05, 1.0, 60.0, 40_000.0]), min_size=4, max_size=4))
def test_each_factor_is_the_odds_ratio_the_model_gives_for_its_step(n_classes, seed, spans):
    tree, X = logistic_tree(n_classes, seed)
    tree.x_scale = np.asarray(spans)
    tree.logit_mix[:] = 0.0  # the words speak of the odds before the mix with even odds
    for leaf in range(tree.n_leaves, 2 * tree.n_leaves):
        effects = labels.odds_effects(tree, leaf, max_terms=None)
        assert [e.cls for e in effects] == ([1] if n_classes == 2 else
                                            [c for c in np.argsort(-labels.node_shares(tree, leaf), kind="stable")
                                             if c != labels.node_class(tree, leaf)])
        i = np.array([leaf - tree.n_leaves])
        row = tree.x_min + 0.5 * tree.x_scale
        for effect in effects:
            assert effect.against == (0 if n_classes == 2 else labels.node_class(tree, leaf))
            assert [t.importance for t in effect.terms] == sorted((t.importance for t in effect.terms), reverse=True)
            for term in effect.terms:
                moved = row.copy()
                moved[term.index] += term.step
                before, after = (tree_proba(tree, r, i) for r in (row, moved))
                ratio = (after[effect.cls] / after[effect.against]) / (before[effect.cls] / before[effect.against])
                assert term.factor == pytest.approx(ratio, rel=1e-9)


def tree_proba(tree, row: np.ndarray, leaf: np.ndarray) -> np.ndarray:
    from get_core.model.tree import logistic_proba
    return logistic_proba(tree, tree.scale_X(row[None]), leaf)[0]


def test_the_words_name_the_class_the_step_and_the_factor():
    tree, _ = logistic_tree(2, 1)
    tree.x_scale = np.array([60.0, 40_000.0, 0.3, 1.0])
    effect = labels.odds_effects(tree, tree.n_leaves)[0]
    sentence = labels.odds_sentence(tree, effect)
    first = effect.terms[0]
    assert sentence.startswith(f"In this leaf, each +{labels.fmt(first.step)} of {first.name} multiplies the odds "
                               f"of 'class 1' by {labels.fmt(first.factor)}")
    assert "(1 more feature moves them less)." in sentence
    three, _ = logistic_tree(3, 1)
    effects = labels.odds_effects(three, three.n_leaves)
    reference = three.classes[labels.node_class(three, three.n_leaves)]
    assert len(effects) == 2 and all(f"against '{reference}'" in labels.odds_sentence(three, e) for e in effects)
    assert "most common class" in labels.logistic_note(three, three.n_leaves)


def test_a_leaf_without_a_model_reads_as_a_class_leaf():
    tree, _ = logistic_tree(3, 2, modelled=0.5)
    for leaf in range(tree.n_leaves, 2 * tree.n_leaves):
        text = labels.leaf_text(tree, leaf)
        if labels.has_logistic_model(tree, leaf):
            assert text.startswith("mostly ") and "odds of" in text
        else:
            assert labels.odds_effects(tree, leaf) == [] and "odds" not in text


def test_the_diagram_label_tooltip_and_name_show_the_odds_shortly():
    tree, _ = logistic_tree(4, 3)
    leaf = tree.n_leaves
    label = diagram.node_label(tree, leaf)
    assert label.count("odds of") == diagram.LOGISTIC_CLASSES and "and 1 more class (node panel)" in label
    assert label.count(" per +") == diagram.LOGISTIC_CLASSES * diagram.LOGISTIC_TERMS
    tooltip = diagram_content.node_tooltip(tree, leaf)
    assert "a logistic model" in tooltip and tooltip.count("odds of") == 3 and tooltip.count(" per +") == 3 * 4
    assert diagram_content.node_name(tree, leaf).startswith(f"leaf {leaf}: mostly ")
    assert "odds of" in export.dot_source(tree)


def test_the_summary_and_the_report_say_the_largest_logistic_leafs_odds():
    tree, X = logistic_tree(2, 4, modelled=0.6)
    modelled = [t for t in range(tree.n_leaves, 2 * tree.n_leaves)
                if labels.has_logistic_model(tree, t) and not tree.is_empty(t)]
    sentences = summary.summarize(tree).sentences()
    said = next(s for s in sentences if "logistic model, so the class" in s)
    largest = max(modelled, key=lambda t: (tree.n_samples[t - 1], -t))
    assert said.startswith(f"{len(modelled)} of the ") and f"In the largest, leaf {largest} with" in said
    assert "multiplies the odds of 'class 1' by" in said
    assert "with a logistic model of the features" in sentences[0]
    page = export.html_report(tree)
    assert "multiplies the odds of &#x27;class 1&#x27;" in page and "logistic (4)" in page


def test_the_node_panel_calls_a_logistic_leafs_shares_its_training_rows_and_what_if_offers_every_class():
    from get_core.views import class_node, what_if

    tree, X = logistic_tree(3, 5, modelled=0.5)
    for leaf in range(tree.n_leaves, 2 * tree.n_leaves):
        table = class_node.class_table(tree, leaf)
        modelled = labels.has_logistic_model(tree, leaf)
        assert ("training share" in table.columns) is modelled
        assert ("predicted probability" in table.columns) is not modelled
        title = class_node.shares_figure(tree, leaf).layout.title.text
        assert title.endswith("class shares of its training rows" if modelled else "predicted class probabilities")
    tree.leaf_proba[:] = [0.1, 0.8, 0.1]  # every leaf's shares favour class 1, but its models give class 0 too
    row = X[tree.predict(X) == "class 2"][0]
    assert what_if.default_goal(tree, row) == "class 0"


def test_with_the_leafs_rows_the_odds_are_ordered_and_stepped_over_the_leafs_typical_range():
    from get_core.views import class_node

    tree, X = logistic_tree(2, 5)
    tree.x_scale = np.array([60.0, 40_000.0, 0.3, 1.0])
    X = tree.x_min + np.random.default_rng(0).random((400, 4)) * tree.x_scale
    leaf = int(np.bincount(tree.apply(X)).argmax())
    spans = class_node.leaf_spans(tree, leaf, X)
    rows = X[tree.apply(X) == leaf]
    np.testing.assert_allclose(spans, np.percentile(rows, 95, axis=0) - np.percentile(rows, 5, axis=0))
    effect = labels.odds_effects(tree, leaf, max_terms=None, spans=spans)[0]
    slope = (tree.logit_coefs[leaf - tree.n_leaves, 1] - tree.logit_coefs[leaf - tree.n_leaves, 0]) / tree.x_scale
    assert [t.index for t in effect.terms] == [int(j) for j in np.argsort(-np.abs(slope) * spans, kind="stable")]
    assert [t.step for t in effect.terms] == [labels.odds_step(spans[t.index]) for t in effect.terms]
    np.testing.assert_array_equal(class_node.leaf_spans(tree, leaf, rows[:1]), tree.x_scale)  # one row: no range


def test_one_logistic_model_reads_as_one_model_not_as_rules_of_a_tree():
    """A class search's depth 0 (``engine.train.logistic_model``): the summary, the rules and the report call it one
    logistic model with no split, and the diagram draws its one leaf alone."""
    from get_core.config import GETConfig
    from get_core.engine.train import logistic_model

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] - X[:, 1] + rng.normal(scale=0.7, size=200) > 0).astype(int)
    tree = logistic_model(X, y, GETConfig(random_state=0), [0, 1], ["age", "income", "debt"])
    said = summary.summarize(tree, X, y, target="approved").sentences()
    assert said[0].startswith("The model predicts approved with one logistic model of the features and no split")
    assert "In this model, each +1 of" in said[0] and not any("rule" in s or "group" in s for s in said)
    assert export.rules_text(tree, 4, "approved").startswith(
        "# GET oblique classification tree: depth 0 (one logistic model, no split)")
    assert "<td>0 (one logistic model, no split)</td>" in export.html_report(tree)
    dot = diagram.to_dot(tree)
    assert "n2 [" in dot and "n1 [" not in dot and "n3 [" not in dot and "->" not in dot
    assert labels.node_level(tree, 2) == 0  # the node panel's title: its one model is the root's level
    assert labels.path_rules(tree, 2, digits=4) == []
