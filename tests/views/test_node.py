"""The node panel: statistics, weights, projection, leaf fit, teaching view, row explanations."""

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core.metrics import r2
from get_core.model import prune
from get_core.model.tree import ObliqueTree
from get_core.views import explain, labels, node, summary, teaching
from tests.trees import make_class_tree, make_tree, stump

ROWS = np.array([[1.0, 0.0], [1.0, 1.0], [3.0, 0.0], [2.0, 2.0], [4.0, 1.0]])  # 2*temp - pressure: 2 1 6 2 7
Y = np.array([9.0, 11.0, 19.0, 10.0, 21.0])


def test_the_panel_says_why_its_training_rows_differ_from_the_diagrams_count():
    """The diagram counts the rows a tree was fitted on (n_samples); the panel the run's training rows reaching the
    node. A search tree is fitted on two thirds of them: the panel names both counts, so "8,299 rows" beside
    "12,449" is not a contradiction; where they agree it adds nothing."""
    tree, X, y = make_tree(depth=2, seed=3, n_rows=300)
    fitted = X[:200]
    tree.n_samples = np.bincount(tree.decision_path(fitted).ravel(), minlength=2 * tree.n_leaves)[1:]
    for t in (1, 2, 5):
        stats = node.node_stats(tree, t, X, y)
        assert stats["n_train"] == node.reaches(tree, X, t).sum() != stats["n_train_model"]
        note = node.train_rows_note(stats)
        assert f"{stats['n_train']:,} of the run's training rows" in note
        assert f"the diagram counts the {stats['n_train_model']:,} rows this tree was fitted on" in note
        assert node.train_rows_note(node.node_stats(tree, t, fitted, y[:200])) is None
    assert node.train_rows_note(node.node_stats(tree, 1)) is None  # no rows given: nothing to compare


def test_reaches_follows_hard_routing():
    tree = stump()
    assert node.reaches(tree, ROWS, 1).all()
    np.testing.assert_array_equal(node.reaches(tree, ROWS, 2), [True, True, False, True, False])
    np.testing.assert_array_equal(node.reaches(tree, ROWS, 3), [False, False, True, False, True])


def test_node_stats_counts_means_and_errors():
    stats = node.node_stats(stump(), 1, ROWS, Y, ROWS[:2], Y[:2])
    assert stats["n_train"] == 5 and stats["n_test"] == 2 and stats["threshold"] == 3.0
    assert stats["n_left_train"] == 3 and stats["n_right_train"] == 2
    assert stats["mean_train"] == pytest.approx(14.0)
    assert stats["rmse_train"] == pytest.approx(math.sqrt((1 + 1 + 1 + 0 + 1) / 5))
    leaf = node.node_stats(stump(), 3, ROWS, Y)
    assert leaf["kind"] == "leaf" and leaf["n_train"] == 2 and leaf["std_train"] == pytest.approx(1.0)
    assert "n_test" not in leaf


def test_node_stats_of_an_unreached_node_has_no_errors():
    stats = node.node_stats(stump(), 3, ROWS[:2], Y[:2])
    assert stats["n_train"] == 0 and stats["mean_train"] is None and stats["rmse_train"] is None


def test_node_stats_refuses_a_missing_node():
    with pytest.raises(ValueError, match="does not exist"):
        node.node_stats(stump(), 4)


def test_weight_table_in_all_units_sorted_by_scaled_magnitude():
    tree, X, _ = make_tree(depth=2, p=4, seed=1)
    table = node.weight_table(tree, 1, node.feature_std(X))
    w, _ = tree.split_in_original_units(1)
    assert list(table.columns) == ["feature", "original", "range", "standardized", "sign"]
    assert np.all(np.diff(np.abs(table["range"].to_numpy())) <= 0)
    row = table.set_index("feature").loc["x2"]
    assert row["original"] == pytest.approx(w[2])
    assert row["range"] == pytest.approx(tree.weights[0, 2])
    assert row["standardized"] == pytest.approx(w[2] * X[:, 2].std())


def test_weights_figure_orders_bars_by_magnitude_and_colors_by_sign():
    tree = stump()
    fig = node.weights_figure(tree, 1)
    bar = fig.data[0]
    assert list(bar.y) == ["pressure", "temp"]  # plotly's first bar is the bottom one: largest on top
    assert list(bar.x) == [-1.0, 2.0] and bar.marker.color == (node.NEGATIVE, node.POSITIVE)
    assert "threshold 3" in fig.layout.title.text
    with pytest.raises(ValueError, match="standard deviations"):
        node.weights_figure(tree, 1, units="standardized")


def test_figures_escape_feature_names():
    tree = stump(("<b>t</b>", "p"))
    fig = node.weights_figure(tree, 1)
    assert "&lt;b&gt;t&lt;/b&gt;" in fig.data[0].y


def test_projection_figure_has_split_and_side_means():
    fig = node.projection_figure(stump(), 1, ROWS, Y, ROWS[:2], Y[:2])
    names = [t.name for t in fig.data]
    assert names[0] == "train (5)" and names[1] == "test (2)"
    np.testing.assert_allclose(fig.data[0].x, [-1, -2, 3, -1, 4])  # margins a·xs - b
    left, right = fig.data[2], fig.data[3]
    assert left.y[0] == pytest.approx(10.0) and right.y[0] == pytest.approx(20.0)
    with pytest.raises(ValueError, match="leaf"):
        node.projection_figure(stump(), 2, ROWS, Y)


def test_leaf_fit_figure_plots_observed_against_fitted():
    fig = node.leaf_fit_figure(stump(), 3, ROWS, Y)
    np.testing.assert_allclose(fig.data[0].x, [20, 20])
    np.testing.assert_allclose(fig.data[0].y, [19, 21])
    assert isinstance(fig, go.Figure)


def test_forest_importances_beside_node_weights():
    table = node.forest_importance_table(stump(), 1, [0.3, 0.7])
    assert list(table["feature"]) == ["pressure", "temp"]
    assert table["node"].sum() == pytest.approx(1.0)
    assert len(node.forest_importance_figure(stump(), 1, [0.3, 0.7]).data) == 2


def test_predicted_actual_figure_handles_missing_predictions():
    fig = node.predicted_actual_figure([1.0, 2.0], {"GET": [1.0, 2.0], "RF": [None, 2.5]})
    assert [t.name for t in fig.data] == ["GET", "RF", "predicted = actual"]


def test_path_rules_read_from_the_root():
    tree, _, _ = make_tree(depth=2, p=2)
    rules = labels.path_rules(tree, 6, unicode=False)
    assert labels.path_to(6) == [1, 3, 6]
    assert rules[0].endswith("> " + labels.fmt(tree.split_in_original_units(1)[1], 3, False))
    assert "<=" in rules[1]


# ---------------------------------------------------------------------------------------------- teaching
def test_soft_left_is_a_stable_sigmoid():
    np.testing.assert_allclose(teaching.soft_left([0.0, 1e6, -1e6], 100.0), [0.5, 0.0, 1.0])


def test_soft_routing_hardens_as_alpha_grows():
    tree, X, _ = make_tree(depth=2, p=3, seed=2)
    routing = teaching.soft_routing(tree, 1, X, [100.0, 1.0, 10.0])
    assert routing["alphas"] == [1.0, 10.0, 100.0]
    assert routing["weights"].shape == (3, len(X))
    assert routing["mean_gap"][0] > routing["mean_gap"][1] > routing["mean_gap"][2]
    assert routing["undecided"][0] >= routing["undecided"][2]
    fig = teaching.soft_routing_figure(tree, 1, X, [1.0, 10.0, 100.0])
    assert "% undecided" in fig.layout.xaxis.ticktext[0]


def test_sigmoid_figure_has_the_step_and_one_curve_per_alpha():
    fig = teaching.sigmoid_figure([5, 150])
    assert [t.name for t in fig.data] == ["hard split (step)", "alpha = 5", "alpha = 150"]
    with pytest.raises(ValueError, match="positive"):
        teaching.sigmoid_figure([0])


def test_stage_labels_name_each_stage_and_what_it_does():
    assert teaching.stage_labels([150, 15]) == [
        "stage 1 of 2, \u03b1 = 15 (soft: the splits move freely)",
        "stage 2 of 2, \u03b1 = 150 (nearly hard: the splits settle into the tree returned)"]
    assert teaching.stage_labels([5, 50, 500], roles=False)[1] == "stage 2 of 3, \u03b1 = 50"
    fig = teaching.sigmoid_figure([5, 150], names=["first", "second"])
    assert [t.name for t in fig.data] == ["hard split (step)", "first", "second"]


def test_split_class_shares_count_each_class_on_each_side_of_the_hard_split():
    tree, X, y = make_class_tree(depth=2, seed=3)
    table = teaching.split_class_shares(tree, 2, X, y)
    at = node.reaches(tree, X, 2)
    left = node.reaches(tree, X, 4)  # node 2's left child
    for i, label in enumerate(tree.classes):
        assert table["rows going left"][i] == int(np.sum(np.asarray(y)[left] == label))
        assert table["rows going right"][i] == int(np.sum(np.asarray(y)[at & ~left] == label))
    with pytest.raises(ValueError, match="leaf"):
        teaching.split_class_shares(tree, 4, X, y)


# ---------------------------------------------------------------------------------------------- explain
def test_explain_row_gives_path_margins_and_contributions():
    out = explain.explain_row(stump(), [3.0, 1.0])  # 2*3 - 1 = 5 > 3: right
    assert out["prediction"] == 20.0 and out["leaf"] == 3 and out["path"] == [1, 3]
    step = out["steps"][0]
    assert step["direction"] == "right" and step["margin"] == pytest.approx(2.0)
    assert step["lhs"] == pytest.approx(5.0) and step["threshold"] == 3.0
    assert step["rule"] == "2\u00b7temp \u2212 1\u00b7pressure > 3"
    assert [c["feature"] for c in step["contributions"]] == ["temp", "pressure"]
    assert step["contributions"][0]["term"] == pytest.approx(5.0)  # 2 * (3 - 0.5), the range's middle
    assert step["contributions"][1]["reference"] == 0.5


def test_a_near_constant_feature_of_large_magnitude_does_not_top_the_contributions():
    tree = ObliqueTree(weights=[[1.0, 1.0]], thresholds=[1.0], leaf_intercepts=[0.0, 1.0], leaf_coefs=np.zeros((2, 2)),
                       n_samples=[4, 2, 2], node_values=[0.5, 0.0, 1.0], x_min=[1009.5, 0.0], x_scale=[1.0, 30.0],
                       feature_names=["pressure", "temp"])
    step = explain.explain_row(tree, [1010.2, 25.0])["steps"][0]
    assert [c["feature"] for c in step["contributions"]] == ["temp", "pressure"]  # raw w*x: pressure, 1010 vs 0.8
    assert step["contributions"][1]["term"] == pytest.approx(0.2)


def test_explain_row_says_when_a_leaf_clamped_its_line():
    tree, X, _ = make_tree(depth=2, p=3, leaf="linear", seed=2)
    leaf = tree.apply(X) - tree.n_leaves
    line = tree.leaf_intercepts[leaf] + np.einsum("ij,ij->i", tree.scale_X(X), tree.leaf_coefs[leaf])
    inside = (line > tree.leaf_lower[leaf]) & (line < tree.leaf_upper[leaf])
    outside = (line < tree.leaf_lower[leaf]) | (line > tree.leaf_upper[leaf])
    clamped = explain.explain_row(tree, X[np.flatnonzero(outside)[0]])
    free = explain.explain_row(tree, X[np.flatnonzero(inside)[0]])
    assert clamped["clamped"] and not free["clamped"]
    assert "kept within [" in clamped["leaf_model"]


def test_explain_rows_is_csv_ready():
    table = explain.explain_rows(stump(), ROWS)
    assert list(table.columns) == ["prediction", "leaf", "path", "node_0", "margin_0", "top_terms_0"]
    assert table["path"].iloc[0] == "1 > 2"
    assert table["top_terms_0"].iloc[2] == "2*(temp-0.5)=5; -1*(pressure-0.5)=0.5"
    assert "prediction" in table.to_csv(index=False)


def test_rows_to_x_takes_the_models_columns_and_names_the_ones_it_ignores():
    frame = pd.DataFrame({"Unnamed: 0": [0, 1], "pressure": [1, 2], "y": [0, 0], "temp": [3, 4], "id": ["a", "b"]})
    rows = explain.rows_to_X(stump(), frame)
    np.testing.assert_array_equal(rows.X, [[3, 1], [4, 2]])
    assert rows.ignored == ("Unnamed: 0", "y", "id") and not rows.problems


@pytest.mark.parametrize("frame, message", [
    (pd.DataFrame({"temp": [1], "wind": [3]}), "missing columns: 'pressure'"),
    (pd.DataFrame([[1, 2, 3]], columns=["temp", "pressure", "temp"]), "duplicated column names: 'temp'"),
])
def test_rows_to_x_refuses_rows_without_the_models_columns(frame, message):
    with pytest.raises(explain.ColumnMismatch, match=message):
        explain.rows_to_X(stump(), frame)


def test_rows_that_cannot_be_scored_are_named_by_row_and_leave_the_others_scored():
    frame = pd.DataFrame({"temp": ["hot", 1, None, np.inf, 2, 1e200], "pressure": [0, 1, 2, 3, None, 5]})
    rows = explain.rows_to_X(stump(), frame)
    assert rows.problems == {1: "'temp' is not a number", 3: "'temp' is empty", 4: "'temp' is infinite",
                             5: "'pressure' is empty", 6: "'temp' is beyond ±1e+150 (too large to compute with)"}
    np.testing.assert_array_equal(rows.scored, [False, True, False, False, False, False])
    np.testing.assert_array_equal(rows.X[1], [1.0, 1.0])
    assert np.isnan(rows.X[~rows.scored]).all()


def test_rows_to_x_uses_the_runs_encoding_and_fills_only_what_training_filled():
    from get_core.data.encoding import DataSpec, prepare

    frame = pd.DataFrame({"temp": [1.0, 2.0, 3.0] * 10, "site": ["a", "b", "a"] * 10, "y": np.arange(30.0)})
    frame.loc[4, "temp"] = np.nan
    dropped = prepare(frame, DataSpec(target="y", features=("temp", "site"))).encoding
    imputed = prepare(frame, DataSpec(target="y", features=("temp", "site"), missing="impute")).encoding
    tree, _, _ = make_tree(depth=1, p=3, names=list(dropped.feature_names))
    rows = explain.rows_to_X(tree, pd.DataFrame({"site": ["b", None, "a"], "temp": [5.0, 1.0, None], "y": 0}),
                             dropped)
    np.testing.assert_array_equal(rows.X[0], [5.0, 0.0, 1.0])
    assert rows.problems == {2: "'site' is empty", 3: "'temp' is empty"} and rows.ignored == ("y",)
    rows = explain.rows_to_X(tree, pd.DataFrame({"site": ["b"], "temp": [None]}), imputed)
    np.testing.assert_array_equal(rows.X, [[2.0, 0.0, 1.0]])  # the median of the training rows


def test_scored_table_keeps_unscored_rows_in_place_with_empty_predictions():
    frame = pd.DataFrame({"temp": [1.0, None, 3.0], "pressure": [0.0, 1.0, 0.0], "leaf": ["x", "y", "z"]})
    table = explain.scored_table(stump(), frame, explain.rows_to_X(stump(), frame))
    assert table.to_csv(index=False).splitlines()[:4] == [
        "temp,pressure,leaf,prediction,get_leaf,path,node_0,margin_0,top_terms_0",
        "1.0,0.0,x,10.0,2,1 > 2,1,-1.0,2*(temp-0.5)=1; -1*(pressure-0.5)=0.5",
        ",1.0,y,,,,,,",
        "3.0,0.0,z,20.0,3,1 > 3,1,3.0,2*(temp-0.5)=5; -1*(pressure-0.5)=0.5"]


def _three_term_stump() -> tuple[ObliqueTree, np.ndarray, np.ndarray]:
    """Left iff 2*big - 0.5*mid + 0.001*tiny <= 3 (identity scaling), leaves 10 and 20; y is the tree plus noise."""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0, 3, 400), rng.uniform(0, 3, 400), rng.uniform(0, 1, 400), np.full(400, 5.0)])
    w = np.array([[2.0, -0.5, 0.001, 0.7]])
    tree = ObliqueTree(weights=w, thresholds=[3.0 + 0.7 * 5.0], leaf_intercepts=[10.0, 20.0],
                       leaf_coefs=np.zeros((2, 4)), n_samples=[400, 200, 200], node_values=[15.0, 10.0, 20.0],
                       x_min=np.zeros(4), x_scale=np.ones(4), feature_names=["big", "mid", "tiny", "fixed"])
    return tree, X, tree.predict(X) + rng.normal(scale=0.5, size=400)


def test_terms_rank_by_their_standardized_share_and_the_dominant_one_costs_most_to_drop():
    tree, X, y = _three_term_stump()
    table = node.term_table(tree, 1, X, y)
    assert list(table["feature"]) == ["big", "mid", "tiny", "fixed"]
    spread = X.std(axis=0)
    swing = np.abs(w := tree.weights[0]) * spread
    np.testing.assert_allclose(table["share"], 100 * swing / swing.sum())
    assert table["share"].sum() == pytest.approx(100.0) and table["share"].iloc[3] == 0.0  # constant: no swing
    np.testing.assert_allclose(table["weight"], w)
    cost = dict(zip(table["feature"], table["r2_cost"]))
    assert cost["big"] > 0.5 and cost["big"] > cost["mid"] > 0.01  # the split is mostly 'big'
    assert abs(cost["tiny"]) < 1e-3 and cost["fixed"] == 0.0  # no effect on the node's rows: nothing to lose


def test_dropping_a_term_holds_it_at_the_node_rows_mean():
    tree, X, _ = _three_term_stump()
    dropped = node.drop_term(tree, 1, 1, X)
    assert dropped.weights[0, 1] == 0.0 and tree.weights[0, 1] == -0.5  # a copy: the model is untouched
    kept = X.copy()
    kept[:, 1] = X[:, 1].mean()
    np.testing.assert_allclose(dropped.margins(X)[:, 0], tree.margins(kept)[:, 0], atol=1e-12)


def test_the_term_table_is_for_branches_and_says_none_where_r2_is_undefined():
    tree, X, y = _three_term_stump()
    with pytest.raises(ValueError, match="leaf"):
        node.term_table(tree, 2, X, y)
    constant = node.term_table(tree, 1, X, np.ones(len(y)))
    assert constant["r2_cost"].isna().all() and constant["share"].notna().all()


def _one_hot_stump() -> tuple[ObliqueTree, np.ndarray, np.ndarray]:
    """Left iff 1*carat + 0.8*clarity=SI2 - 0.6*clarity=VS1 <= 1.2 (identity scaling), the levels of a one-hot
    'clarity' column (SI2, VS1, IF) beside 'carat'; y is the tree plus noise."""
    rng = np.random.default_rng(1)
    level = rng.integers(0, 3, 400)
    X = np.column_stack([rng.uniform(0, 2, 400), level == 0, level == 1, level == 2]).astype(float)
    tree = ObliqueTree(weights=np.array([[1.0, 0.8, -0.6, 0.0]]), thresholds=[1.2], leaf_intercepts=[10.0, 20.0],
                       leaf_coefs=np.zeros((2, 4)), n_samples=[400, 200, 200], node_values=[15.0, 10.0, 20.0],
                       x_min=np.zeros(4), x_scale=np.ones(4),
                       feature_names=["carat", "clarity=SI2", "clarity=VS1", "clarity=IF"])
    return tree, X, tree.predict(X) + rng.normal(scale=0.5, size=400)


def test_a_one_hot_columns_levels_are_one_row_of_the_terms_as_in_the_summary():
    """The node panel ranks 'clarity' as one term, like the plain-words summary: its levels' shares summed, their
    weights per level, and the R2 lost when all of them are held at their means at once."""
    tree, X, y = _one_hot_stump()
    apart = node.term_table(tree, 1, X, y)
    assert list(apart["feature"]) == ["carat", "clarity=SI2", "clarity=VS1"]
    grouped = node.term_table(tree, 1, X, y, categories=["clarity"])
    assert sorted(grouped["feature"]) == ["carat", "clarity (one-hot)"]
    row = grouped.set_index("feature").loc["clarity (one-hot)"]
    parts = apart.set_index("feature")
    assert row["share"] == pytest.approx(parts.loc["clarity=SI2", "share"] + parts.loc["clarity=VS1", "share"])
    assert math.isnan(row["weight"]) and row["levels"] == "SI2 0.8, VS1 \u22120.6"
    both = X.copy()
    both[:, 1:3] = X[:, 1:3].mean(axis=0)
    routed = np.where(tree.margins(both)[:, 0] > 0, 20.0, 10.0)
    assert row["r2_cost"] == pytest.approx(r2(y, tree.predict(X)) - r2(y, routed))
    assert grouped.set_index("feature").loc["carat", "levels"] == ""
    assert grouped["share"].sum() == pytest.approx(100.0)
    ranked = node.ranked_terms(tree, 1, X, ["clarity"])
    pd.testing.assert_frame_equal(ranked, grouped.drop(columns="r2_cost"))
    in_words = summary.grouped_shares(summary.feature_shares(tree), ["clarity"])
    assert {name for name, _ in in_words} == set(ranked["feature"])  # the same names as the summary's ranking


def test_ranked_terms_are_the_term_table_without_its_r2_cost():
    tree, X, y = make_tree(depth=3, p=5, seed=4, n_rows=200)
    for t in (1, 2, 5):
        pd.testing.assert_frame_equal(node.ranked_terms(tree, t, X),
                                      node.term_table(tree, t, X, y).drop(columns="r2_cost"))


def test_the_drop_costs_equal_re_routing_each_dropped_tree_in_full():
    tree, X, y = make_tree(depth=4, p=6, seed=2, n_rows=300)
    for t in (1, 3, 6):
        table = node.term_table(tree, t, X, y)
        rows = X[node.reaches(tree, X, t)]
        targets = y[node.reaches(tree, X, t)]
        before = r2(targets, tree.predict(rows))
        by_index = {name: j for j, name in enumerate(tree.feature_names)}
        for name, cost in zip(table["feature"], table["r2_cost"]):
            full = node.drop_term(tree, t, by_index[name], rows).predict(rows)
            assert cost == before - r2(targets, full)  # the same rows on the same sides: the same doubles


def test_explain_rows_in_small_chunks_equals_all_rows_at_once(monkeypatch):
    """Scored tables are computed in row chunks bounded in bytes (every branch's margin, every class's probability):
    the chunks join into the very table one pass gives."""
    tree, X, _ = make_class_tree(depth=3, labels=["a", "b", "c"])
    whole = explain.explain_rows(tree, X)
    monkeypatch.setattr(explain, "CHUNK_BYTES", 8 * 50)  # a row or two per chunk
    pd.testing.assert_frame_equal(explain.explain_rows(tree, X), whole)
    assert explain.explain_rows(tree, X[:0]).columns.equals(whole.columns)


def _top_terms_row_by_row(tree, X, level) -> list[str]:
    """The scored table's ``top_terms_<level>`` as it was computed before issue 50: one row at a time."""
    texts = []
    for x, node_id in zip(X, tree.decision_path(X)[:, level]):
        w, _ = tree.split_in_original_units(int(node_id))
        texts.append("; ".join(f"{labels.fmt(c['weight'], 4, False)}*({c['feature']}-"
                               f"{labels.fmt(c['reference'], 4, False)})={labels.fmt(c['term'], 4, False)}"
                               for c in explain._contributions(tree, w, x, 2, labels.input_labels(tree))))
    return texts


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 16), depth=st.integers(1, 4), p=st.integers(1, 6), sparse=st.booleans(),
       collapsed=st.booleans())
def test_explain_rows_top_terms_and_paths_equal_the_row_by_row_text(seed, depth, p, sparse, collapsed):
    """The top terms are made node by node for all of a node's rows at once, the paths once per leaf: the same text
    as one row at a time, ties, zero weights (a sparse split's), pass-throughs (a collapsed split's) and rows far
    outside the training range included."""
    tree, X, _ = make_tree(depth=depth, p=p, seed=seed, n_rows=60)
    if sparse:
        tree.weights[:, ::2] = 0.0  # every other feature out of every split
    if collapsed:
        tree = prune.collapse_dead_splits(tree, X[:6])  # splits that send these few rows one way pass through
    X[::5] *= 1e3
    X[1::7, 0] = X[1::7, -1]  # equal values: tied terms where the weights agree
    table = explain.explain_rows(tree, X, top_k=2)
    assert table["path"].tolist() == [" > ".join(map(str, prune.shown_path(tree, path)))
                                      for path in tree.decision_path(X)]
    for level in range(depth):
        assert table[f"top_terms_{level}"].tolist() == _top_terms_row_by_row(tree, X, level)


def test_names_in_sentences_read_as_text_even_when_numpy_holds_them():
    """Issue 48: a sentence read np.str_('B') where the name came out of a numpy array."""
    assert explain.quoted(np.array(["a", "B"])) == "'a', 'B'"
