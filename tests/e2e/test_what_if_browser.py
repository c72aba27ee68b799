"""In a real browser: on the Predict page, set a goal on an uploaded row, read the changes that meet it, and see the
new path drawn on the diagram (issue 36)."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from get_core import counterfactual
from get_core.model import model_file
from get_core.runs.results import load_results
from get_core.runs.store import RunStore
from get_core.views import what_if
from tests.e2e.streamlit_app import BUSY_MS, browser_page, require_diagram_browser, serve_app
from tests.explorer_runs import finished_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NAMES = ["temp", "pressure", "wind"]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    require_diagram_browser()
    db = tmp_path_factory.mktemp("e2e") / "runs.sqlite"
    store = RunStore(db)
    run_id = finished_run(store, depth=3, names=NAMES, name="what if")
    results = load_results(store, run_id)
    tree = model_file.from_dict(store.get_json(run_id, "model"))
    store.close()
    with serve_app(db) as url:
        yield url, run_id, tree, results


def test_a_goal_on_a_row_shows_the_changes_and_the_new_path(app, tmp_path):
    url, run_id, tree, results = app
    rows = pd.DataFrame(results.X_test[:3], columns=NAMES)
    path = tmp_path / "rows.csv"
    rows.to_csv(path, index=False)
    x = rows.to_numpy()[0]
    values = np.unique(tree.predict(results.X_train))
    goal = float(values[values > tree.predict(x[None])[0]][0])  # the next leaf value up: a real change
    expected = counterfactual(tree, x, (goal, None), reference=results.X_train)
    with browser_page() as page:
        page.goto(url + "/")
        page.get_by_text("Data", exact=True).first.wait_for(timeout=BUSY_MS)
        page.goto(f"{url}/predict?run={run_id}")
        page.locator("input[type=file]").first.set_input_files(str(path))
        page.get_by_text("Scored 3 rows.").wait_for(timeout=BUSY_MS)
        low = page.get_by_role("spinbutton", name="Low").first
        low.fill(repr(goal))
        low.press("Enter")
        page.get_by_role("button", name="Find the smallest change").first.click()
        said = what_if.sentence(tree, expected)
        page.get_by_text(said).wait_for(timeout=BUSY_MS)
        changes = page.locator("[data-testid=stTable]").last
        for change in expected.changes:  # the table names each feature changed, with the value it needs
            row = changes.locator("tr", has_text=change.feature).first
            row.wait_for(timeout=BUSY_MS)
            assert what_if.changes_table([change])["needed"][0] in row.inner_text()
        caption = page.get_by_text("after the change (green)", exact=False).first.inner_text()
        new_path = what_if.path_of(tree, expected.x)
        assert " \u2192 ".join(map(str, new_path)) in caption
        leaf = page.locator(f"#get-node-{expected.leaf}.get-path-node").first
        leaf.wait_for(state="attached", timeout=BUSY_MS)
        assert what_if.NEW_PATH_COLOR in leaf.inner_html()
