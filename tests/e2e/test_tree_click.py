"""In a real browser: open a finished run's tree, click a node in the diagram, see its weights, reload, still there.

Runs ``streamlit run app.py`` on a free localhost port against a temporary store (``GET_EXPLORER_DB``) holding a
hand-made finished run, and drives Debian's headless chromium through Playwright.
"""

from __future__ import annotations


import pytest

from get_core.model import model_file
from get_core.runs.store import RunStore
from get_core.model.tree import ObliqueTree
from get_core.views import labels
from tests.e2e.streamlit_app import BUSY_MS, browser_page, require_diagram_browser, serve_app
from tests.explorer_runs import finished_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NAMES = ["temp", "<b>pressure</b>", 'wind "speed"', "rain"]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    require_diagram_browser()
    db = tmp_path_factory.mktemp("e2e") / "runs.sqlite"
    store = RunStore(db)
    run_id = finished_run(store, depth=4, names=NAMES, n_rows=240, name="click test")
    tree = model_file.from_dict(store.get_json(run_id, "model"))
    store.close()
    with serve_app(db) as url:
        yield url, run_id, tree


@pytest.fixture(scope="module")
def page(app):
    with browser_page() as page:
        yield page


def _expect_node_panel(page, tree: ObliqueTree, node: int) -> None:
    page.get_by_text(f"Node {node} (branch, level", exact=False).wait_for(timeout=120_000)
    page.get_by_text(f"Node {node}: weights (original units)", exact=False).first.wait_for(timeout=120_000)
    split = labels.split_text(tree, node, digits=4, max_terms=None)
    page.get_by_text(split, exact=False).first.wait_for(timeout=BUSY_MS)  # every weight, names verbatim


def test_click_a_node_see_its_weights_and_keep_it_across_a_reload(app, page):
    url, run_id, tree = app
    page.goto(url + "/")  # the app's entry page first: st.navigation takes over from the pages/ folder
    page.get_by_text("Data", exact=True).first.wait_for(timeout=120_000)
    page.goto(f"{url}/tree?run={run_id}")
    page.locator("#get-node-1").wait_for(timeout=180_000)
    page.get_by_text("Node 1 (branch, level 0)").wait_for(timeout=120_000)

    page.locator("#get-node-5").click()
    _expect_node_panel(page, tree, 5)
    assert "node=5" in page.url
    assert page.locator("#get-node-5.get-selected").count() == 1

    page.reload()
    page.locator("#get-node-5.get-selected").wait_for(timeout=180_000)
    _expect_node_panel(page, tree, 5)
    assert "node=5" in page.url
