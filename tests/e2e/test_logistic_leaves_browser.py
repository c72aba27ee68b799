"""In a real browser, issue 52's class runs with logistic leaves: a generated two-class table whose odds change
smoothly with the inputs; a run with logistic leaves set in the page's address (the setting restored from the URL),
its node panel's odds in words and a typed row's prediction; then a "choose for me" run, whose search chooses the
leaves too (from depth 0, one logistic model): its chart has a line per kind of leaves and its tree opens drawn.

Small data (400 rows, 3 inputs) and a tiny budget (one start, 60 epochs) keep both runs to seconds.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit

import numpy as np
import pandas as pd
import pytest

from get_core.model import model_file
from get_core.model.prune import live_leaves
from get_core.runs.search import SEARCH
from get_core.runs.store import RunStatus, RunStore
from get_core.views import labels
from tests.e2e.streamlit_app import BUSY_MS, browser_page, require_diagram_browser, serve_training_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NAMES = ["age", "income", "debt"]
TINY = "budget:manual,starts:1,epochs:60"
# each drawn chart's trace names (plotly's own objects)
TRACE_NAMES = ("() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(gd => (gd.data || [])"
               ".map(t => t.name))")


def odds_table(n: int = 400, seed: int = 0) -> pd.DataFrame:
    """'yes' (the column 'target') with log-odds linear in age and debt (income does nothing): a table logistic leaves fit in one piece."""
    rng = np.random.default_rng(seed)
    table = pd.DataFrame({"age": rng.uniform(20, 70, n), "income": rng.uniform(1, 9, n),
                          "debt": rng.uniform(0, 5, n)})
    logit = 0.12 * (table.age - 45) - 0.9 * (table.debt - 2.5)
    table["target"] = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    return table


def _start(page, url: str, db, train: str) -> int:
    """Open the Train page at ``url`` with ``train`` as its settings (as a reload of such an address would), start,
    and wait for the run to finish; its id."""
    page.goto(url)
    query = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
    page.goto(f"{url.split('?')[0]}?{urlencode({**query, 'train': train})}")
    page.get_by_role("button", name="Start training").wait_for(timeout=180_000)
    before = {run.run_id for run in RunStore(db).list_runs()}
    page.get_by_role("button", name="Start training").click()
    page.wait_for_url(lambda address: "run=" in address and int(address.split("run=")[1].split("&")[0]) not in before,
                      timeout=180_000)
    run_id = int(page.url.split("run=")[1].split("&")[0])
    for _ in range(480):  # up to 240 s on a busy machine
        if RunStore(db).get_run(run_id).status.is_finished():
            break
        page.wait_for_timeout(500)
    assert RunStore(db).get_run(run_id).status is RunStatus.FINISHED, RunStore(db).get_run(run_id).error
    return run_id


def test_logistic_leaves_and_a_search_that_chooses_them_from_upload_to_a_prediction(tmp_path):
    require_diagram_browser()
    path = tmp_path / "loans.csv"
    odds_table().to_csv(path, index=False)
    with serve_training_app(tmp_path) as (url, db), browser_page(1400, 1100) as page:
        page.goto(url + "/")
        page.locator("input[type=file]").first.set_input_files(str(path))
        page.get_by_text("classes of 'target'", exact=False).first.wait_for(timeout=BUSY_MS)
        page.get_by_role("link", name="Continue to Train").click()
        page.get_by_role("button", name="Start training").wait_for(timeout=BUSY_MS)
        leaves = page.locator('[data-testid="stRadio"]').filter(has=page.get_by_text("Leaves", exact=True))
        assert leaves.get_by_text("logistic", exact=True).count() == 1  # a class target's leaves
        assert leaves.get_by_text("linear", exact=True).count() == 0
        train_url = page.url

        # a fixed depth-1 tree with logistic leaves, set through the address
        fixed = _start(page, train_url, db, f"depth:1,class_leaf:logistic,{TINY}")
        store = RunStore(db)
        assert store.get_run(fixed).params["config"]["class_leaf"] == "logistic"
        tree = model_file.from_dict(store.get_json(fixed, "model"))
        modelled = [t for t in live_leaves(tree) if labels.has_logistic_model(tree, t)]
        assert tree.has_logistic_leaves and modelled, "no leaf kept a logistic model on 150 rows of smooth odds"
        leaf = int(modelled[0])
        page.goto(f"{url}/tree?run={fixed}&node={leaf}")
        page.locator(f"#get-node-{leaf}").wait_for(timeout=BUSY_MS)
        page.get_by_text(f"Node {leaf} (leaf", exact=False).wait_for(timeout=BUSY_MS)
        words = page.get_by_text("In this leaf, each +", exact=False).first  # the node panel's, not the summary's
        words.wait_for(timeout=BUSY_MS)
        assert "multiplies the odds of 'yes'" in words.inner_text() and "age" in words.inner_text()

        # Predict: a typed row gets the class its leaf's logistic model gives it
        page.goto(f"{url}/predict?run={fixed}")
        tab = page.get_by_role("tab", name="Type one row")
        tab.wait_for(timeout=BUSY_MS)
        tab.click()
        row = {"age": 65.0, "income": 5.0, "debt": 0.5}
        for name, value in row.items():
            box = page.get_by_label(name, exact=True)
            box.wait_for(timeout=BUSY_MS)
            box.fill(str(value))
            box.press("Tab")
        page.get_by_role("button", name="Predict", exact=True).click()
        metric = page.locator("[data-testid='stMetric']").filter(has_text="Predicted class")
        metric.wait_for(timeout=BUSY_MS)
        expected = tree.predict(np.array([[row[n] for n in tree.feature_names]]))[0]
        assert metric.locator("[data-testid='stMetricValue']").inner_text() == str(expected)

        # "choose for me": the search chooses the leaves too, from depth 0 (one logistic model)
        chosen_run = _start(page, train_url, db, f"depth:2,depth_mode:choose,{TINY}")
        params = store.get_run(chosen_run).params
        assert params["search"]["leaf"] == "auto" and params["search"]["depths"] == [0, 1, 2]
        search = store.get_json(chosen_run, SEARCH)
        pairs = {(p["depth"], p["leaf"]) for p in search["points"]}
        assert (0, "logistic") in pairs and {(1, "constant"), (1, "logistic")} <= pairs
        page.goto(f"{url}/runs?run={chosen_run}")
        page.get_by_text("Depth chosen for you", exact=False).first.wait_for(timeout=BUSY_MS)
        page.wait_for_function("() => Array.from(document.querySelectorAll('.js-plotly-plot')).some(gd => "
                               "(gd.data || []).some(t => t.name === 'logistic leaves'))", timeout=BUSY_MS)
        names = {name for chart in page.evaluate(TRACE_NAMES) for name in chart}
        assert {"logistic leaves", "class-share leaves"} <= names

        chosen = model_file.from_dict(store.get_json(chosen_run, "model"))
        page.goto(f"{url}/tree?run={chosen_run}")
        page.locator(f"#get-node-{int(live_leaves(chosen)[0])}").wait_for(timeout=BUSY_MS)  # the run's own tree

        # the search's depth 0, opened from the run: one logistic model, drawn as its one leaf without a split
        page.goto(f"{url}/tree?run={chosen_run}&tree=d0-kany-logistic")
        page.get_by_text("Showing a tree of the search, not the run's own: depth 0, one logistic model",
                         exact=False).wait_for(timeout=BUSY_MS)
        page.locator("#get-node-2").wait_for(timeout=BUSY_MS)
        assert page.locator("#get-node-1").count() == 0 and page.locator("#get-node-3").count() == 0
        page.get_by_text("one logistic model of the features and no split", exact=False).first.wait_for(
            timeout=BUSY_MS)
        store.close()
