"""The plain-language summary on a hand-made tree whose rules, shares and weak leaves are known."""

import numpy as np
import pytest

from get_core.model.tree import ObliqueTree
from get_core.views import summary


def known_tree() -> ObliqueTree:
    """Depth 2, identity scaling: root temp <= 5; node 2 temp + pressure <= 3; node 3 wind <= 0.5; leaves 10, 20,
    30, 40, the last reached by no training row (100 rows: 60 left, 40 right)."""
    w = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    return ObliqueTree(weights=w, thresholds=[5.0, 3.0, 0.5], leaf_intercepts=[10.0, 20.0, 30.0, 40.0],
                       leaf_coefs=np.zeros((4, 3)), n_samples=[100, 60, 40, 30, 30, 40, 0],
                       node_values=[0.0] * 6 + [np.nan], x_min=np.zeros(3), x_scale=np.ones(3),
                       feature_names=["temp", "pressure", "wind"])


def test_the_summary_counts_the_rules_and_the_longest_rules_terms():
    s = summary.summarize(known_tree(), target="yield")
    assert (s.n_rules, s.n_empty, s.n_conditions, s.longest_terms) == (3, 1, 2, 3)
    first = s.sentences()[0]
    assert first.startswith("The tree predicts yield with 3 rules, one per leaf: a row answers 2 yes/no questions")
    assert "longest rule's questions weigh 3 features in all (a feature asked twice counts twice)" in first
    assert "1 more leaf received no training row" in first


def test_feature_shares_are_weighted_by_the_rows_each_split_sorts():
    # per range: root temp 100% (100 rows), node 2 temp 50% pressure 50% (60 rows), node 3 wind 100% (40 rows)
    assert summary.feature_shares(known_tree()) == [("temp", pytest.approx(65.0)), ("wind", pytest.approx(20.0)),
                                                    ("pressure", pytest.approx(15.0))]
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0, 10, 500), rng.uniform(0, 1, 500), rng.uniform(0, 1, 500)])
    standardized = dict(summary.feature_shares(known_tree(), X))
    assert standardized["pressure"] < 15.0  # pressure spreads less than temp on node 2's rows: a smaller share
    assert sum(standardized.values()) == pytest.approx(100.0)
    assert "temp (65%)" in summary.summarize(known_tree()).sentences()[1]


def test_the_summary_names_the_same_top_features_with_or_without_the_runs_rows():
    """Issue 35: a run's summary (with its rows) and the same model loaded from its JSON (none) named different top
    features; both now come from the model alone."""
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.uniform(0, 10, 200), rng.uniform(0, 1, 200), rng.uniform(0, 1, 200)])
    with_rows = summary.summarize(known_tree(), X[:100], np.zeros(100), target="yield")
    alone = summary.summarize(known_tree(), target="yield")
    assert with_rows.shares == alone.shares and with_rows.sentences()[1] == alone.sentences()[1]


def test_one_hot_levels_are_ranked_as_one_feature_by_their_combined_share():
    shares = [("carat", 35.0), ("clarity=SI2", 25.0), ("depth", 20.0), ("clarity=VS1", 20.0)]
    assert summary.grouped_shares(shares, ["clarity"]) == [("clarity (one-hot)", 45.0), ("carat", 35.0),
                                                           ("depth", 20.0)]
    assert summary.grouped_shares(shares, []) == shares


def test_the_weakest_leaves_are_those_with_the_largest_test_error_and_the_forest_is_compared():
    X = np.array([[1, 0, 0]] * 4 + [[4, 0, 0]] * 2 + [[9, 0, 0]] * 3, dtype=float)  # leaves 4, 5, 6
    y = np.array([9, 11, 9, 11, 17, 23, 28, 32, 30], dtype=float)  # errors: leaf 4 +-1, leaf 5 +-3, leaf 6 2, 2, 0
    forest = {"models": {"random_forest": {"r2": 0.99, "rmse": 0.5}}}
    s = summary.summarize(known_tree(), X_test=X, y_test=y, baselines=forest, target="yield")
    assert [(w.leaf, w.n_test) for w in s.weakest] == [(5, 2), (6, 3), (4, 4)]
    assert s.weakest[0].rmse == pytest.approx(3.0) and s.weakest[1].rmse == pytest.approx(np.sqrt(8 / 3))
    comparison, weakest = s.sentences()[2:]
    rmse = np.sqrt(np.mean((known_tree().predict(X) - y) ** 2))
    assert comparison.startswith("On the 9 test rows set aside before training, the tree explains")
    assert f"typical error of {rmse:.3g}" in comparison and "random forest of 100 trees explains 99%" in comparison
    assert "gives up" in comparison
    assert weakest.startswith("It is least accurate in leaf 5 (typical error 3 on its 2 test rows), leaf 6")


def test_without_rows_or_baselines_the_summary_says_what_it_cannot_state():
    text = " ".join(summary.summarize(known_tree()).sentences())
    assert "test rows are not available" in text and "least accurate" not in text
    rows = np.array([[1.0, 0, 0], [9.0, 0, 0]])
    text = " ".join(summary.summarize(known_tree(), X_test=rows, y_test=[10.0, 31.0]).sentences())
    assert "no random forest was fitted" in text


def class_tree() -> ObliqueTree:
    """``known_tree``'s splits with class leaves: leaves 4 and 6 predict 'no', leaf 5 'yes', leaf 7 is empty;
    classes 'maybe' (never predicted), 'no', 'yes'."""
    tree = known_tree()
    counts = np.array([[0, 70, 30], [0, 45, 15], [0, 25, 15], [0, 27, 3], [0, 9, 21], [0, 25, 15], [0, 0, 0]], float)
    proba = counts[3:] / np.maximum(counts[3:].sum(axis=1, keepdims=True), 1)
    proba[3] = proba[2]  # the empty leaf takes its parent's shares
    return ObliqueTree(weights=tree.weights, thresholds=tree.thresholds, leaf_intercepts=np.zeros(4),
                       leaf_coefs=np.zeros((4, 3)), n_samples=tree.n_samples, node_values=[0.7] * 6 + [np.nan],
                       x_min=tree.x_min, x_scale=tree.x_scale, feature_names=tree.feature_names, leaf_type="classes",
                       classes=["maybe", "no", "yes"], leaf_proba=proba, node_counts=counts)


def test_a_classification_summary_names_the_groups_each_class_gets_and_the_largest():
    s = summary.summarize(class_tree(), target="rain")
    assert s.groups == (("no", 2), ("yes", 1), ("maybe", 0))
    rules, groups = s.sentences()[:2]
    assert "each leaf predicts one class" in rules
    assert groups == ("The tree predicts 'no' in 2 of its 3 groups and 'yes' in 1; no group predicts 'maybe'; the "
                      "largest group, leaf 6 with 40 training rows, predicts 'no' with probability 62.5% (each "
                      "leaf's class shares are smoothed by one extra row spread evenly over the classes, so no leaf "
                      "claims 0% or 100% from its training rows alone).")


def test_a_classification_summary_states_accuracy_beside_the_forest_and_the_leaves_that_err_most():
    X = np.array([[1, 0, 0]] * 4 + [[4, 0, 0]] * 2 + [[9, 0, 0]] * 3, dtype=float)  # leaves 4, 5, 6
    y = np.array(["no", "no", "yes", "yes", "yes", "no", "no", "no", "maybe"])  # wrong: 2 in leaf 4, 1 in 5 and 6
    forest = {"models": {"random_forest": {"accuracy": 0.6}}}
    s = summary.summarize(class_tree(), X_test=X, y_test=y, baselines=forest)
    assert s.accuracy == pytest.approx(5 / 9) and [(w.leaf, w.wrong, w.n_test) for w in s.wrong] == [
        (4, 2, 4), (5, 1, 2), (6, 1, 3)]
    comparison, errs = s.sentences()[3:]
    assert comparison == ("On the 9 test rows set aside before training, the tree classifies 55.6% correctly "
                          "(accuracy 0.556); a random forest of 100 trees classifies 60% correctly, so the single "
                          "readable tree gives up 4 percentage points of accuracy.")
    assert [(w.label, w.truths) for w in s.wrong] == [("no", (("yes", 2),)), ("yes", (("no", 1),)),
                                                      ("no", (("maybe", 1),))]
    assert errs == ("It errs most in leaf 4: it predicts 'no' there, and 2 of its 4 test rows (50%) are 'yes'. Next "
                    "come leaf 5 (predicts 'yes'; 1 of its 2 test rows is 'no') and leaf 6 (predicts 'no'; 1 of its "
                    "3 test rows is 'maybe').")
    without = " ".join(summary.summarize(class_tree(), X_test=X, y_test=y).sentences())
    assert "no random forest was fitted" in without


def test_a_forest_the_budget_cut_short_gets_no_comparative_sentence_and_a_whole_one_does():
    """Issue 48: a stored run's forest of 30 trees (cut by its time budget) is no fair baseline: the summary says so
    instead of stating the tree as more or less accurate than it."""
    X = np.array([[1, 0, 0]] * 4 + [[4, 0, 0]] * 2 + [[9, 0, 0]] * 3, dtype=float)
    y = np.array([9, 11, 9, 11, 17, 23, 28, 32, 30], dtype=float)
    forest = {"models": {"random_forest": {"r2": 0.99, "rmse": 0.5, "n_trees": 30}}}
    comparison = summary.summarize(known_tree(), X_test=X, y_test=y, baselines=forest).sentences()[2]
    assert "only 30 trees" in comparison and "no comparison is made" in comparison
    assert "gives up" not in comparison and "more accurate" not in comparison
    whole = {"models": {"random_forest": {"r2": 0.99, "rmse": 0.5, "n_trees": 100}}}
    comparison = summary.summarize(known_tree(), X_test=X, y_test=y, baselines=whole).sentences()[2]
    assert "a random forest of 100 trees explains 99%" in comparison and "gives up" in comparison


def test_the_leaves_that_err_most_name_every_true_class_they_miss_most_first_and_agree_with_predict():
    X = np.array([[9, 0, 0]] * 6 + [[1, 0, 0]] * 2, dtype=float)  # leaf 6 ('no') and leaf 4 ('no')
    y = np.array(["yes", "maybe", "yes", "no", "maybe", "yes", "no", "no"])
    tree = class_tree()
    (first,) = summary.misclassified_leaves(tree, X, y)  # leaf 4 classifies its rows correctly: not listed
    assert (first.leaf, first.wrong, first.n_test, first.label) == (6, 5, 6, "no")
    assert first.truths == (("yes", 3), ("maybe", 2))
    wrong_rows = (tree.predict(X) != y) & (tree.apply(X) == 6)
    assert first.wrong == int(wrong_rows.sum()) and {str(c) for c in tree.predict(X[wrong_rows])} == {first.label}
    errs = summary.summarize(tree, X_test=X, y_test=y).sentences()[-1]
    assert errs == ("It errs most in leaf 6: it predicts 'no' there, and 5 of its 6 test rows (83.3%) are 'yes' (3) "
                    "or 'maybe' (2).")
    assert summary.misclassified_leaves(tree, X[6:], y[6:]) == []
    assert summary.summarize(tree, X_test=X[6:], y_test=y[6:]).sentences()[-1] == (
        "It classifies every test row correctly.")


def test_a_tuned_cart_ahead_of_the_tree_gets_a_hint_and_one_behind_it_none():
    """Issue 48: where the depth-tuned CART beats the tree on the test rows, the summary says so and what to try."""
    X = np.array([[1, 0, 0]] * 4 + [[4, 0, 0]] * 2 + [[9, 0, 0]] * 3, dtype=float)
    y = np.array([9, 11, 9, 11, 17, 23, 28, 32, 30], dtype=float)
    tree_r2 = summary.summarize(known_tree(), X_test=X, y_test=y).tree_scores[0]
    ahead = {"models": {"cart": {"name": "CART (depth 3, tuned)", "r2": min(1.0, tree_r2 + 0.05)}}}
    comparison = summary.summarize(known_tree(), X_test=X, y_test=y, baselines=ahead).sentences()[2]
    assert "CART (depth 3, tuned) explains" in comparison and "try a smaller depth" in comparison
    behind = {"models": {"cart": {"name": "CART (depth 3, tuned)", "r2": tree_r2 - 0.05}}}
    assert "CART" not in summary.summarize(known_tree(), X_test=X, y_test=y, baselines=behind).sentences()[2]
    no_rows = summary.summarize(known_tree(), baselines=ahead).sentences()
    assert not any("CART" in sentence for sentence in no_rows)  # no test rows: nothing to compare
