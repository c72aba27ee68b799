"""In a real browser: on the Predict page, ask what would change an uploaded row, read the nearest answer's needed
values off the page, type the row back with them into "Type one row" and get the answer's leaf and outcome; the new
path is drawn on the diagram (issues 36 and 49)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from get_core.model import model_file
from get_core.model.counterfactual import CounterfactualError
from get_core.runs.results import load_results
from get_core.runs.store import RunStore
from get_core.views import labels, what_if
from pages.what_if_ui import ANSWERS
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


def first_answered(tree, results) -> tuple[np.ndarray, tuple, tuple]:
    """A test row (to two decimals, as a person types it) that the page's default goal has answers for."""
    for x in np.round(results.X_test, 2):
        goal = what_if.regression_goal(*what_if.default_goal(tree, x))
        try:
            return x, goal, what_if.ask(tree, x, goal, encoding=results.encoding, reference=results.X_train,
                                  integers=what_if.whole_columns(tree, x, results.X_train, results.encoding),
                                  n=ANSWERS)
        except CounterfactualError:
            continue
    raise AssertionError("no test row has an answer to the default goal")


def test_a_suggested_row_typed_back_into_predict_gives_the_answer(app, tmp_path):
    url, run_id, tree, results = app
    x, (low, high), expected = first_answered(tree, results)
    nearest = expected[0]
    path = tmp_path / "rows.csv"
    pd.DataFrame([x], columns=NAMES).to_csv(path, index=False)
    with browser_page() as page:
        page.goto(url + "/")
        page.get_by_text("Data", exact=True).first.wait_for(timeout=BUSY_MS)
        page.goto(f"{url}/predict?run={run_id}")
        page.locator("input[type=file]").first.set_input_files(str(path))
        page.get_by_text("Scored 1 rows.").wait_for(timeout=BUSY_MS)
        page.get_by_role("button", name="Find the smallest change").first.click()  # the goal as the page starts it
        for answer in expected:  # side by side, nearest first
            page.get_by_text(answer.sentence).wait_for(timeout=BUSY_MS)
        shown = {}
        table = page.locator("[data-testid=stTable]").first
        for change in nearest.result.changes:  # the needed values as the page shows them
            row = table.locator("tr", has_text=change.feature).first
            row.wait_for(timeout=BUSY_MS)
            cells = row.locator("td").all_inner_texts()
            shown[change.feature] = cells[1]  # now, needed, change, keeps it
            assert cells[1] == what_if.value_text(change.needed, change.step)
        caption = page.get_by_text("after answer 1 (green)", exact=False).first.inner_text()
        assert " \u2192 ".join(map(str, nearest.new_path)) in caption
        leaf = page.locator(f"#get-node-{nearest.result.leaf}.get-path-node").first
        leaf.wait_for(state="attached", timeout=BUSY_MS)
        assert what_if.NEW_PATH_COLOR in leaf.inner_html()

        page.get_by_role("tab", name="Type one row").click()  # the row typed back, as shown
        for j, name in enumerate(NAMES):
            box = page.get_by_role("spinbutton", name=name).first
            box.fill(shown.get(name, f"{x[j]:.2f}"))
            box.press("Tab")
        page.get_by_role("button", name="Predict").first.click()
        typed = page.locator("[data-testid=stMetric]:visible", has_text="Leaf").first
        typed.wait_for(timeout=BUSY_MS)
        page.wait_for_function("leaf => [...document.querySelectorAll('[data-testid=stMetric]')].some(m => "
                               "m.offsetParent !== null && m.innerText.includes('Leaf') && "
                               "m.innerText.trim().endsWith(leaf))", arg=str(nearest.result.leaf), timeout=BUSY_MS)
        prediction = page.locator("[data-testid=stMetric]:visible", has_text="Prediction").first.inner_text()
        assert labels.fmt(nearest.result.prediction, 6) in prediction
        assert (low is None or nearest.result.prediction >= low) and (high is None or nearest.result.prediction <= high)
