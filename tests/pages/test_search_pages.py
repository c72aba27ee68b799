"""Depth and features per split chosen for the user, in the pages: the Train choices reach the run's parameters,
the run's panel draws the search, and the explorer pages open any tree the search fitted, saying which is open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from get_core.runs import estimate, worker
from get_core.config import APP_DEFAULTS
from get_core.runs.search import tree_key
from get_core.runs.store import RunStore, default_db_path
from pages import common
from tests.pages.test_app import app, assert_no_traceback, db, texts, upload, widget  # noqa: F401 (db: a fixture)
from tests.pages.test_page_state import go, query, small_table
from tests.runs.test_worker import TINY, submit

pytestmark = pytest.mark.usefixtures("db")


def _start(at) -> dict:
    at.radio(key="cfg_budget").set_value("manual").run()
    at.number_input(key="cfg_starts").set_value(1).run()
    at.number_input(key="cfg_epochs").set_value(5).run()
    at.button(key="start").click().run()
    assert_no_traceback(at)
    return RunStore(default_db_path()).get_run(1)


def test_depth_chosen_for_me_sends_the_depths_up_to_the_deepest_and_names_the_run_so():
    at = go(upload(app(), "t.csv", small_table()), "pages/train.py")
    assert widget(at.radio, "Depth").value == "fixed" and widget(at.radio, "Features per split").value == "any"
    widget(at.radio, "Depth").set_value("choose").run()
    assert at.slider(key="cfg_depth").label == "Deepest depth to try"
    at.slider(key="cfg_depth").set_value(3).run()
    at.radio(key="cfg_budget").set_value("manual").run()
    at.number_input(key="cfg_starts").set_value(1).run()
    estimate.save_measurement(Path(default_db_path()).parent / "calibration.json",
                              estimate.shape_key(3, APP_DEFAULTS.leaf, 1, 1, 30), {"per_epoch": 0.01, "per_stage": 0.5},
                              {"startup": 4.0, "baselines": 1.0, "baselines_per_row": 0.001})
    at.run()
    assert any("Estimated run time: at most" in c and "a search of up to 4 fits" in c for c in texts(at, "caption"))
    run = _start(at)
    assert run.params["search"] == {"depths": [1, 2, 3], "split_features": None}
    assert run.params["config"]["depth"] == 3 and run.params["config"]["max_split_features"] is None
    assert run.name == f"t.csv · depth chosen from 1 to 3 {APP_DEFAULTS.leaf}"


@pytest.mark.parametrize("choice, k, search", [("2", 2, None), ("any", None, None),
                                               ("auto", None, {"depths": [2], "split_features": "auto"})])
def test_features_per_split_reach_the_run_as_k_dense_or_the_path(choice, k, search):
    at = go(upload(app(), "t.csv", small_table()), "pages/train.py")
    at.slider(key="cfg_depth").set_value(2).run()
    assert at.slider(key="cfg_depth").label == "Fixed depth"
    widget(at.radio, "Features per split").set_value(choice).run()
    run = _start(at)
    assert run.params["config"]["max_split_features"] == k and run.params.get("search") == search
    assert common.CONFIG_LABELS["max_split_features"] == "Features per split"


def _finished_search_run() -> tuple[RunStore, int]:
    store = RunStore(default_db_path())
    run_id = submit(store, {**TINY, "depth": 2}, extra={"search": {"depths": [1, 2], "split_features": None}})
    worker.execute(store, run_id, hard_stop=False)
    return store, run_id


def test_the_run_panel_draws_a_point_per_depth_and_offers_each_tree():
    store, run_id = _finished_search_run()
    at = app()
    at.query_params["run"] = str(run_id)
    at.switch_page("pages/runs.py").run()
    assert_no_traceback(at)
    assert any("Depth chosen for you" in m for m in texts(at, "markdown"))
    chart = next(c for c in at.get("plotly_chart") if "search-chart" in c.proto.id or "validation" in c.proto.spec)
    assert '"customdata":["d1-kany","d2-kany"]' in chart.proto.spec.replace(" ", "")
    picker = widget(at.selectbox, "Tree of the search")
    assert picker.options[0].startswith("depth 1 (validation R²")
    picker.select_index(0).run()
    next(b for b in at.button if b.label == "Open this tree").click().run()
    assert_no_traceback(at)
    assert at.title[0].value == "Tree" and query(at, "tree") == "d1-kany"
    assert any("Showing a tree of the search, not the run's own: depth 1" in i for i in texts(at, "info"))


def test_the_tree_page_opens_a_search_fit_from_the_url_and_says_it_is_not_the_runs_tree():
    store, run_id = _finished_search_run()
    at = app()
    at.query_params["run"] = str(run_id)
    at.query_params["tree"] = tree_key(1, None)
    at.switch_page("pages/tree.py").run()
    assert_no_traceback(at)
    assert any("Showing a tree of the search, not the run's own: depth 1" in i for i in texts(at, "info"))
    picker = widget(at.selectbox, "Tree of this run")
    assert picker.value == "d1-kany" and len(picker.options) == 3
    assert any(s.startswith("Node 1 (branch") for s in texts(at, "subheader"))
    counts = "of the run's training rows reach this node; the diagram counts the"  # a search fit saw two thirds
    assert any(counts in c for c in texts(at, "caption"))
    picker.select_index(0).run()  # back to the run's own tree
    assert_no_traceback(at)
    assert query(at, "tree") is None and not any("Showing a tree of the search" in i for i in texts(at, "info"))
    assert not any(counts in c for c in texts(at, "caption"))  # the run's tree was fitted on all of them


def test_compare_two_names_features_per_split_and_what_was_chosen_for_the_user():
    store = RunStore(default_db_path())
    data_spec = {"target": "y", "features": ["x"]}
    fixed = {"config": {**TINY, "max_split_features": 2}, "seed": 0, "data": data_spec}
    searched = {"config": {**TINY, "depth": 5}, "seed": 0, "data": data_spec,
                "search": {"depths": [1, 2, 3, 4, 5], "split_features": "auto"}}
    for params in (fixed, searched):
        store.create_run(params, b"x,y\n", "toy.csv", n_rows=1, n_features=1)
    at = app()
    at.switch_page("pages/runs.py").run()
    assert_no_traceback(at)
    table = next(d.value for d in at.dataframe if "setting" in d.value.columns).set_index("setting")
    assert table.loc["Features per split"].tolist()[:2] == ["any", "2"]  # newest run first
    assert table.loc["depth and features per split"].tolist()[:2] == [
        "depth chosen from 1 to 5, features per split chosen", "depth 2, 2 features per split"]


def test_predict_scores_a_row_with_the_search_fit_the_url_names():
    store, run_id = _finished_search_run()
    at = app()
    at.query_params["run"] = str(run_id)
    at.query_params["tree"] = tree_key(1, None)
    at.switch_page("pages/predict.py").run()
    assert_no_traceback(at)
    assert widget(at.selectbox, "Tree of this run").value == "d1-kany"
    next(b for b in at.button if b.label == "Predict").click().run()
    assert_no_traceback(at)
    path = next(m.value for m in at.markdown if m.value.startswith("Path"))  # whole, not a metric cut short
    assert path.count("\u2192") == 1  # the depth-1 tree: the root, then a leaf


def test_a_class_runs_search_chart_and_picker_speak_of_validation_accuracy_in_percent():
    from tests.runs.test_class_run import class_run, three_classes

    store = RunStore(default_db_path())
    run_id = class_run(store, three_classes(90), extra={"search": {"depths": [1, 2], "split_features": None}},
                       config={"n_epochs": 5})
    worker.execute(store, run_id, hard_stop=False)
    points = store.get_json(run_id, "search")["points"]
    at = app()
    at.query_params["run"] = str(run_id)
    at.switch_page("pages/runs.py").run()
    assert_no_traceback(at)
    assert any("Depth chosen for you: validation accuracy" in m for m in texts(at, "markdown"))
    chart = next(c for c in at.get("plotly_chart") if "validation accuracy" in c.proto.spec)
    figure = json.loads(chart.proto.spec)
    assert figure["layout"]["yaxis"]["title"]["text"] == "validation accuracy (%)" and "R²" not in chart.proto.spec
    assert figure["data"][0]["y"] == pytest.approx([100 * p["validation_accuracy"] for p in points])  # %, not shares
    picker = widget(at.selectbox, "Tree of the search")
    assert picker.options[0] == (f"depth 1, class-share leaves (validation accuracy "
                                 f"{100 * points[0]['validation_accuracy']:.1f}%, "
                                 f"{points[0]['n_parameters']:,} parameters)")
    assert any("validation accuracy" in c for c in texts(at, "caption"))
