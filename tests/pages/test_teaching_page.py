"""The Teaching page (issues 33 and 35): its own page with the formula, the stage labels, the scaled sigmoid per alpha
stage and a chosen split's routing; for a class tree also the class shares of the rows going left and right."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from get_core.runs import worker
from get_core.runs.results import load_results
from get_core.runs.store import RunStatus
from get_core.views import node
from tests.explorer_runs import finished_run
from tests.pages.test_tree_pages import store  # noqa: F401  (the fixture: a store the pages open)
from tests.runs.test_class_run import class_run, three_classes

ROOT = Path(__file__).resolve().parents[2]


def _teaching(**params) -> AppTest:
    """The Teaching page through the router (it must be one of app.py's pages)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = str(value)
    at.switch_page("pages/teaching.py").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def _charts(at: AppTest) -> list:
    return at.get("plotly_chart")


def test_a_regression_run_gets_the_formula_stage_labels_sigmoid_and_the_chosen_splits_routing(store):
    run_id = finished_run(store, depth=3, name="demo run")
    at = _teaching(run=run_id, node=3)
    assert any(r"\sigma(\alpha \cdot m)" in latex.value for latex in at.latex)
    n_stages = len(load_results(store, run_id).alphas)
    text = "\n".join(m.value for m in at.markdown)
    assert all(f"stage {i} of {n_stages}" in text for i in range(1, n_stages + 1)), text
    assert at.selectbox(key="teaching_node").value == 3  # the node the URL (the Tree page) names
    assert len(_charts(at)) == 2  # the sigmoid per stage, and node 3's routing
    at.selectbox(key="teaching_node").set_value(1).run()
    assert not at.exception and len(_charts(at)) == 2


def test_a_class_run_shows_the_class_shares_of_the_rows_each_side_of_the_split(store):
    run_id = class_run(store, three_classes(160), config={"depth": 2})
    assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    at = _teaching(run=run_id)
    table = next(d.value for d in at.dataframe if "rows going left" in d.value.columns)
    results = load_results(store, run_id)
    reaching = int(node.reaches(results.tree, results.X_train, 1).sum())
    assert int(np.sum(table["rows going left"]) + np.sum(table["rows going right"])) == reaching
    assert 0 < int(np.sum(table["rows going left"])) < reaching  # the root splits its rows


def test_the_tree_page_links_to_the_teaching_page_instead_of_a_tab(store):
    run_id = finished_run(store, depth=2)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["run"] = str(run_id)
    at.switch_page("pages/tree.py").run()
    assert not at.exception
    assert not any(tab.label == "Teaching" for tab in at.tabs)
    assert any("Teaching page" in caption.value for caption in at.caption)
