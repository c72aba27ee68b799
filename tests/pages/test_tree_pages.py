"""AppTest flows of the explorer pages (Tree, Compare, Predict) against a store holding hand-made finished runs."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from get_core.model import model_file
from get_core.data.columns import to_parquet_bytes
from get_core.data.encoding import DataSpec
from get_core.runs import worker
from get_core.runs.results import load_results
from get_core.runs.store import RunStatus, RunStore
from get_core.views import labels, node, summary
from pages import common
from tests.explorer_runs import finished_run

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["temp", "<b>pressure</b>", 'wind "speed"']


@pytest.fixture
def store(tmp_path, monkeypatch):
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    store = RunStore(path)
    yield store
    store.close()


@pytest.fixture
def run_id(store):
    return finished_run(store, depth=3, names=NAMES, name="demo run")


def _page(name: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / f"{name}.py"), default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = str(value)
    return at.run()


def _ok(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def test_tree_page_shows_the_node_named_in_the_url(run_id, store):
    at = _page("tree", run=run_id, node=3)
    _ok(at)
    assert at.subheader[0].value == "Node 3 (branch, level 1)"
    assert at.number_input(key="node_pick").value == 3
    tree = model_file.from_dict(store.get_json(run_id, "model"))
    assert any("<b>pressure</b>" in c.value for c in at.code)  # names shown verbatim, not as markup
    results = load_results(store, run_id)
    expected = int(node.reaches(tree, results.X_train, 3).sum())
    assert at.metric[0].label == "Train rows" and at.metric[0].value == f"{expected:,}"


def test_typing_a_node_number_selects_it_and_updates_the_url(run_id):
    at = _page("tree", run=run_id)
    assert at.subheader[0].value == "Node 1 (branch, level 0)"
    at.number_input(key="node_pick").set_value(9).run()
    _ok(at)
    assert at.query_params["node"] == ["9"] or at.query_params["node"] == "9"
    assert at.subheader[0].value == "Node 9 (leaf, level 3)"
    assert any(c.value.startswith("y = ") for c in at.code)


def test_an_invalid_node_in_the_url_falls_back_to_the_root(run_id):
    at = _page("tree", run=run_id, node="999")
    _ok(at)
    assert at.subheader[0].value == "Node 1 (branch, level 0)"


@pytest.mark.parametrize("expand", ["\u00b2", "x,3", "-1", "1e9"])  # a superscript two is a digit to str.isdigit
def test_a_malformed_expand_list_in_the_url_is_ignored(run_id, expand):
    at = _page("tree", run=run_id, expand=expand)
    _ok(at)
    assert at.subheader[0].value == "Node 1 (branch, level 0)"


def test_a_run_id_in_the_url_that_does_not_exist_is_said_so(run_id):
    at = _page("tree", run=99999)
    _ok(at)
    assert "Run 99999 does not exist; showing the newest run that has one." in [i.value for i in at.info]


def test_expand_keeps_the_expanded_node_in_the_url(store):
    deep = finished_run(store, depth=6, names=NAMES, n_rows=400)
    at = _page("tree", run=deep, node=8)
    at.button(key="tree_expand").click().run()
    _ok(at)
    expand = at.query_params["expand"]
    assert (expand if isinstance(expand, str) else expand[0]) == "8"
    at.button(key="tree_collapse").click().run()
    assert "expand" not in at.query_params


def test_a_deep_node_in_the_url_is_revealed(store):
    deep = finished_run(store, depth=6, names=NAMES, n_rows=400)
    at = _page("tree", run=deep, node=40)
    _ok(at)
    assert at.subheader[0].value.startswith("Node 40 ")


def test_tree_page_without_runs_says_what_to_do(store):
    at = _page("tree")
    _ok(at)
    assert "Train page" in at.info[0].value


def test_tree_page_uses_a_loaded_model_file_without_rows(store, run_id):
    tree = model_file.from_dict(store.get_json(run_id, "model"))
    at = AppTest.from_file(str(ROOT / "pages" / "tree.py"), default_timeout=60)
    at.session_state["uploaded_model"] = ("model.json", tree)
    at.session_state["model_source"] = "A model file"
    at.run()
    _ok(at)
    assert at.subheader[0].value == "Node 1 (branch, level 0)"
    assert at.metric[0].label == "Training rows (from the model)"


def _baseline_names(store, run_id: int) -> list[str]:
    """The stored baselines' names in table order: tuned CART (named with its depth), the forest, boosting."""
    models = store.get_json(run_id, "baselines")["models"]
    return [models[k]["name"] for k in ("cart", "random_forest", "hist_gradient_boosting")]


def test_compare_page_lists_get_tuned_cart_the_forest_and_boosting(run_id, store):
    at = _page("compare", run=run_id)
    _ok(at)
    table, sizes = at.dataframe[0].value, at.dataframe[1].value  # scores, then sizes: each fits 1,400 px
    assert list(table["Model"]) == list(sizes["Model"]) == ["GET", *_baseline_names(store, run_id)]
    assert table["Model"].iloc[1].startswith("CART (depth ") and table["Model"].iloc[3] == "HistGradientBoosting"
    assert (sizes["Parameters"] > 0).all()


def test_compare_page_puts_the_sparse_get_tree_beside_the_dense_one_with_features_per_split(store):
    names = ["temp", "pressure", "wind", "rain", "sun"]
    run_id = finished_run(store, depth=2, names=names, counterpart=True)
    at = _page("compare", run=run_id)
    _ok(at)
    table = at.dataframe[0].value
    cart, forest, boosting = _baseline_names(store, run_id)
    assert list(table["Model"]) == ["GET", "GET, at most 3 features per split", cart, forest, boosting]
    sizes = at.dataframe[1].value
    widths = dict(zip(sizes["Model"], sizes["Features per split (most)"]))
    assert widths["GET"] == 5 and 1 <= widths["GET, at most 3 features per split"] <= 3
    assert widths[cart] == widths[forest] == widths[boosting] == 1
    sparse = store.get_json(run_id, "baselines")["models"]["get_sparse"]
    assert table["Test R\u00b2"].iloc[1] == pytest.approx(sparse["r2"])  # the stored fit, on the run's test rows
    assert any("other kind of splits" in c.value for c in at.caption)
    assert len(at.get("plotly_chart")) == 5  # predicted against actual for each model


def test_compare_page_shows_an_old_run_without_the_sparse_tree_and_says_why(store):
    old = finished_run(store, depth=2, names=["temp", "pressure", "wind", "rain"])
    at = _page("compare", run=old)
    _ok(at)
    assert list(at.dataframe[0].value["Model"]) == ["GET", *_baseline_names(store, old)]
    assert any("fitted before that comparison existed" in c.value for c in at.caption)
    narrow = finished_run(store, depth=2, seed=1)  # three features: a 3-sparse tree would be the same tree
    at = _page("compare", run=narrow)
    _ok(at)
    assert any("would be this same tree" in c.value for c in at.caption)


def test_a_run_cancelled_before_its_baselines_offers_to_fit_them_and_compare_shows_them(store):
    run_id = finished_run(store, depth=2, baselines=False, status=RunStatus.CANCELLED)
    at = _page("compare", run=run_id)
    _ok(at)
    assert "ended before its baselines (CART, random forest, HistGradientBoosting) were fitted" in at.info[0].value
    at.button(key="fit_baselines").click().run()
    _ok(at)
    assert list(at.dataframe[0].value["Model"]) == ["GET", *_baseline_names(store, run_id)]
    assert set(store.get_json(run_id, "baselines")["models"]) == {"cart", "random_forest", "hist_gradient_boosting"}


def test_compare_page_explains_missing_baselines(store):
    bare = finished_run(store, depth=2, names=NAMES, baselines=False)
    at = _page("compare", run=bare)
    _ok(at)
    assert "No baselines (CART, random forest, HistGradientBoosting)" in at.info[0].value


def test_predict_page_scores_one_typed_row(run_id, store):
    at = _page("predict", run=run_id)
    _ok(at)
    values = [12.0, 9.0, 11.0]
    for box, value in zip([w for w in at.number_input if w.key.startswith("one_row_")], values):
        box.set_value(value)
    at.button[0].click().run()  # the form's submit button
    _ok(at)
    tree = model_file.from_dict(store.get_json(run_id, "model"))
    shown = {m.label: m.value for m in at.metric}
    assert float(shown["Prediction"]) == pytest.approx(tree.predict(np.array([values]))[0], rel=1e-5)
    assert int(shown["Leaf"]) == tree.apply(np.array([values]))[0]
    steps = at.dataframe[0].value  # contributions from the middle of each feature's range, and said so
    middle = tree.x_min + tree.x_scale / 2
    assert f"({values[0]:.4g} \u2212 {middle[0]:.4g})" in " ".join(steps["largest contributions"])
    assert any("middle of the feature's training range" in c.value for c in at.caption)
    other = finished_run(store, depth=2, names=NAMES, seed=7)
    at.run()  # the run list now holds it
    next(w for w in at.selectbox if w.label == "Run").set_value(other).run()
    _ok(at)
    assert not at.metric  # another model: no result until its own Predict
    typed = [w.value for w in at.number_input if w.key.startswith("one_row_")]
    other_tree = model_file.from_dict(store.get_json(other, "model"))
    assert typed == [float(f"{lo + scale / 2:.4g}") for lo, scale in zip(other_tree.x_min, other_tree.x_scale)]


def test_predict_page_scores_uploaded_rows_and_warns_about_values_never_seen_in_training(store):
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"x": rng.random(120), "site": rng.choice(["north", "south"], 120)})
    table["y"] = table["x"] + (table["site"] == "south")
    spec = DataSpec(target="y", features=("x", "site"))
    config = {"depth": 2, "leaf": "constant", "n_starts": 1, "n_epochs": 10, "alpha_range": [5.0, 150.0],
              "n_alphas": 2, "learning_rate": 0.01, "l1": 0.0, "polish": False, "device": "cpu"}
    run_id = store.create_run({"config": config, "data": spec.to_dict(), "test_fraction": 0.25, "seed": 0},
                              to_parquet_bytes(table), "sites.csv", n_rows=120, n_features=2)
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    at = _page("predict", run=run_id)
    rows = pd.DataFrame({"x": [0.1, 0.5, 0.9], "site": ["north", "east", "east"]})
    at.file_uploader(key="predict_file").upload("rows.csv", rows.to_csv(index=False).encode(), "text/csv").run()
    _ok(at)
    assert at.success[0].value == "Scored 3 rows."
    assert [w.value for w in at.warning] == [
        "Column 'site': 2 rows hold 'east', never seen in training; scored with every 'site=...' input at 0."]


def test_node_metrics_and_the_forest_table_show_rounded_values_under_readable_names(run_id):
    at = _page("tree", run=run_id, node=2)
    _ok(at)
    metrics = {m.label: m.value for m in at.metric}
    assert {"RMSE train", "RMSE test"} <= set(metrics) and not [v for v in metrics.values() if " / " in v]
    forest = at.dataframe[-1].value
    assert list(forest.columns) == ["rows", "tree RMSE", "forest RMSE", "tree MAE", "forest MAE", "reaching this node"]
    digits = [len(v.replace(",", "").replace(".", "").replace("-", "").lstrip("0")) for v in forest["tree RMSE"]]
    assert digits and max(digits) <= 4, forest["tree RMSE"].tolist()


def test_the_node_panel_ranks_a_splits_terms_by_share_with_their_r2_cost(run_id, store):
    at = _page("tree", run=run_id, node=2)
    _ok(at)
    terms = next(d.value for d in at.dataframe if "share of the split" in d.value.columns)
    assert list(terms.columns) == ["feature", "weight (original units)", "share of the split", "R\u00b2 lost if dropped"]
    results = load_results(store, run_id)
    expected = node.term_table(results.tree, 2, results.X_train, results.y_train)
    assert list(terms["feature"]) == list(expected["feature"])
    assert terms["share of the split"].iloc[0] == f"{expected['share'].iloc[0]:.1f}%"
    assert any("standardized units" in c.value for c in at.caption)
    leaf = _page("tree", run=run_id, node=9)
    _ok(leaf)
    assert not any("share of the split" in d.value.columns for d in leaf.dataframe)


def test_the_tree_page_opens_with_the_summary_in_plain_words(run_id, store):
    at = _page("tree", run=run_id)
    _ok(at)
    assert at.expander[0].label == "In plain words"
    text = at.expander[0].markdown[0].value
    results = load_results(store, run_id)
    weakest = summary.weakest_leaves(results.tree, results.X_test, results.y_test)[0]
    assert text.startswith("- The tree predicts yield with 8 rules, one per leaf")
    assert "random forest of 100 trees" in text and f"least accurate in leaf {weakest.leaf} " in text
    assert "\\<b\\>pressure\\</b\\> (" in text  # all three features listed, names escaped for Markdown


def test_compare_two_names_settings_as_the_train_page_does(store):
    for seed in (0, 1):
        finished_run(store, depth=2, seed=seed)
    at = _page("runs")
    _ok(at)
    table = at.dataframe[-1].value
    assert {"Starts", "Epochs per alpha stage", "Alpha stages", "L1 penalty"} <= set(table["setting"])
    assert not [k for k in table["setting"] if "_" in k], list(table["setting"])


@pytest.mark.parametrize("value, digits, shown", [
    (12345.6, 4, "12,346"), (4.36512, 4, "4.365"), (-2500.0, 4, "-2,500"), (1234.567, 6, "1,234.57"),
    (None, 4, "\u2013"), (float("nan"), 4, "\u2013")])
def test_numbers_for_people_have_thousands_separators_and_their_digits(value, digits, shown):
    assert common.number(value, digits) == shown


def test_a_tree_opens_with_the_levels_that_stay_readable_fitted_to_the_page(store):
    """Issue 35, defect 8: the diagram opens fitted to the width of the page with readable text, deeper levels
    collapsed rather than shrunk ("Fit" drew a depth-4 tree's labels 4 px high)."""
    from get_core.views import diagram

    for depth, names in ((2, NAMES), (5, NAMES), (7, ["a", "b"])):
        run_id = finished_run(store, depth=depth, names=names, n_rows=300, name=f"depth {depth}")
        tree = model_file.from_dict(store.get_json(run_id, "model"))
        at = _page("tree", run=run_id)
        _ok(at)
        levels = at.slider(key="tree_levels").value
        assert levels == diagram.readable_levels(tree) and at.slider(key="tree_levels").max == min(depth + 1, 7)
        drawn = diagram.render_svg(diagram.to_dot(tree, diagram.DiagramOptions(levels=levels)))
        assert diagram.svg_width_px(drawn) * diagram.READABLE <= diagram.OPEN_WIDTH_PX or levels == 2
        assert depth > 2 or levels == depth + 1  # a small tree opens whole
        assert depth < 5 or levels < depth + 1  # a deep one with its lower levels collapsed


def test_a_one_feature_split_reads_as_a_threshold_in_the_node_panel(store):
    """Issue 35, defect 4: ``temp ≤ 10.2``, not ``0.2·temp ≤ 0.9``; a 1e-28 weight is not printed."""
    run_id = finished_run(store, depth=3, names=["temp", "pressure", "wind"], one_feature_root=0, tiny_term=True)
    tree = model_file.from_dict(store.get_json(run_id, "model"))
    at = _page("tree", run=run_id, node=1)
    _ok(at)
    shown = [c.value for c in at.code]
    assert f"temp \u2264 {labels.fmt(labels.feature_threshold(tree, 1).value, 4)}" in shown, shown
    at = _page("tree", run=run_id, node=4)
    path = next(c.value for c in at.code if c.value.startswith("1. "))
    assert path.splitlines()[0].startswith("1. temp \u2264 ") and "\u00b7temp" not in path.splitlines()[0]
    at = _page("tree", run=run_id, node=2)
    split = next(c.value for c in at.code if "\u2264" in c.value and not c.value.startswith("1. "))
    assert "wind" not in split and "e-" not in split, split  # node 2's 1e-28 wind term


def test_the_export_panel_offers_the_onnx_model_beside_the_code(run_id):
    at = _page("tree", run=run_id)
    _ok(at)
    buttons = [b.proto.label for b in at.get("download_button")]
    assert {"Python code", "C code", "ONNX model"} <= set(buttons)


def test_a_logistic_model_files_leaf_reads_as_odds_on_the_tree_page(store):
    """Issue 52: a leaf with a logistic model shows its odds in words, with what they leave out."""
    from tests.model.test_logistic_leaves_model import with_logits
    from tests.trees import make_class_tree

    tree = with_logits(make_class_tree(depth=2, p=3, seed=5, names=["age", "income", "debt"])[0], 5, modelled=1.0)
    at = AppTest.from_file(str(ROOT / "pages" / "tree.py"), default_timeout=60)
    at.session_state["uploaded_model"] = ("model.json", tree)
    at.session_state["model_source"] = "A model file"
    at.query_params["node"] = str(tree.n_leaves)
    at.run()
    _ok(at)
    assert at.subheader[0].value.startswith(f"Node {tree.n_leaves} (leaf")
    said = "\n".join(m.value for m in at.markdown)
    assert "Leaf model" in said and "multiplies the odds of" in said
    assert any("share of even odds" in c.value for c in at.caption)


def _category_run(store, task: str = "regression") -> int:
    """A real run as the Data page trains it by default: 'site' handed to the estimator as categories, holes kept."""
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"x": rng.random(160), "site": rng.choice(["north", "south", "east"], 160)})
    table["y"] = table["x"] + 3 * (table["site"] == "south")
    if task == "classification":
        table["y"] = np.where(table["y"] > 1.5, "high", "low")
    table.loc[[1, 5], "site"], table.loc[2, "x"] = None, np.nan
    spec = DataSpec(target="y", features=("x", "site"), missing="keep", task=task, one_hot=False)
    config = {"depth": 2, "leaf": "constant", "n_starts": 1, "n_epochs": 30, "alpha_range": [5.0, 150.0],
              "n_alphas": 2, "learning_rate": 0.01, "l1": 0.0, "polish": False, "device": "cpu",
              "max_split_features": 1}
    run_id = store.create_run({"config": config, "data": spec.to_dict(), "test_fraction": 0.25, "seed": 0},
                              to_parquet_bytes(table), "sites.csv", n_rows=160, n_features=4)
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    return run_id


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_a_category_runs_tree_and_compare_pages_read_its_raw_rows(store, task):
    run_id = _category_run(store, task)
    root = _page("tree", run=run_id, node=1)
    _ok(root)
    assert any(" in {" in c.value for c in root.code)  # "site not in {south}": the user's categories
    for leaf in range(4, 8):
        at = _page("tree", run=run_id, node=leaf)
        _ok(at)
        for way in [b for b in at.button if b.label == "Find the shortest way in"]:  # a leaf's what-if
            way.click().run()
            _ok(at)
    _ok(_page("compare", run=run_id))
    _ok(_page("teaching", run=run_id))  # the soft routing of the root over the raw rows


def test_the_shortest_way_into_a_leaf_switches_a_category_as_a_whole(store):
    run_id = _category_run(store)
    tree = load_results(store, run_id).tree
    south = next(leaf for leaf in range(4, 8) if "site in {south}" in "".join(labels.path_rules(tree, leaf))
                 and tree.n_samples[leaf - 1] >= 10)  # the typical row (site 'east') is elsewhere
    at = _page("tree", run=run_id, node=south)
    next(b for b in at.button if b.label == "Find the shortest way in").click().run()
    _ok(at)
    assert any(s.value.startswith("Switch site from '") for s in at.success)


def test_the_forest_importances_of_a_category_run_are_matched_by_name(store):
    run_id = _category_run(store)
    results = load_results(store, run_id)
    forest = results.baselines["forest"]["feature_importances"]
    table = node.forest_importance_table(results.tree, 1, forest, names=results.baselines["feature_names"])
    shares = dict(zip(table["feature"], table["forest"]))
    assert {f: shares[f] for f in ("x", "site=east", "site=north", "site=south")} == dict(
        zip(results.baselines["feature_names"], forest))
