"""In a real browser: a run whose depth is chosen for the user draws a point per depth, and a click on a point opens
that shallower tree (issue 22); a run with 2 features per split reads as whole split sentences on a clicked node
(issue 20).

Small planted data (200 rows, 4 inputs) and a tiny budget keep both runs to seconds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from get_core.model import model_file
from get_core.runs.search import SEARCH
from get_core.runs.store import RunStatus, RunStore
from get_core.views import labels
from tests.e2e.streamlit_app import browser_page, require_chromium, serve_training_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NAMES = ["temperature", "vacuum", "humidity", "noise"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    folder = tmp_path_factory.mktemp("search")
    rng = np.random.default_rng(0)
    table = pd.DataFrame(rng.uniform(size=(200, 4)), columns=NAMES)
    table["target"] = 5.0 * (table.temperature + table.vacuum > 1) + 0.1 * rng.normal(size=200)  # a 2-feature split
    csv = folder / "planted.csv"
    table.to_csv(csv, index=False)
    with serve_training_app(folder) as (url, db):
        yield url, db, csv


@pytest.fixture
def page(server):
    with browser_page(height=1100) as page:
        yield page


def _radio(page, label: str, option: str) -> None:
    group = page.locator('[data-testid="stRadio"]').filter(has=page.get_by_text(label, exact=True))
    group.get_by_text(option, exact=True).click()
    page.wait_for_timeout(700)  # the rerun with the new value


def _number(page, label: str, value: int) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    page.wait_for_timeout(700)


def _train(page, url: str, db, csv, choices, starts: int = 1) -> int:
    """Upload ``csv``, set a tiny budget and ``choices`` on the Train page, start; the finished run's id (the
    store's newest: the Train page shows the newest run, so an earlier test's finished run may be on screen)."""
    page.goto(url + "/")
    page.locator("input[type=file]").first.set_input_files(str(csv))
    page.get_by_text("Ready: 200 rows, 4 model inputs", exact=False).wait_for(timeout=180_000)
    page.get_by_role("link", name="Continue to Train").click()
    page.get_by_role("button", name="Start training").wait_for(timeout=180_000)
    _radio(page, "Budget", "manual")  # the default is a 10 s time budget, without starts and epochs fields
    _number(page, "Starts", starts)
    _number(page, "Epochs per alpha stage", 60)
    for label, option in choices:
        _radio(page, label, option)
    before = {run.run_id for run in RunStore(db).list_runs()}
    page.get_by_role("button", name="Start training").click()
    page.wait_for_url(lambda address: any(f"run={new}" in address for new in _new_runs(db, before)),
                      timeout=180_000)
    run_id = int(page.url.split("run=")[1].split("&")[0])
    for _ in range(360):  # the run itself, not a finished one on screen: up to 180 s
        if RunStore(db).get_run(run_id).status.is_finished():
            break
        page.wait_for_timeout(500)
    assert RunStore(db).get_run(run_id).status is RunStatus.FINISHED, RunStore(db).get_run(run_id).error
    page.get_by_text("FINISHED · dataset", exact=False).first.wait_for(timeout=180_000)
    return run_id


def _new_runs(db, before: set[int]) -> set[int]:
    return {run.run_id for run in RunStore(db).list_runs()} - before


def _chart_keys(page) -> list[str]:
    """The tree keys of the search chart's validation R2 markers, as plotly holds them."""
    return page.evaluate(
        "() => { for (const gd of document.querySelectorAll('.js-plotly-plot')) {"
        " const t = (gd.data || [])[0]; if (t && t.customdata && String(t.customdata[0]).startsWith('d'))"
        " return Array.from(t.customdata); } return []; }")


def test_depth_chosen_for_me_charts_each_depth_and_opens_a_shallower_tree(server, page):
    url, db, csv = server
    run_id = _train(page, url, db, csv, [("Depth", "choose for me")])
    page.get_by_text("Depth chosen for you", exact=False).first.wait_for(timeout=120_000)
    search = RunStore(db).get_json(run_id, SEARCH)
    depths = [p["depth"] for p in search["points"]]
    assert depths == list(range(1, len(depths) + 1)) and len(depths) >= 2
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 2", timeout=120_000)
    assert _chart_keys(page) == [p["key"] for p in search["points"]]  # a point per depth

    markers = page.locator(".js-plotly-plot").first.locator(".scatterlayer .trace").first.locator("path.point")
    markers.nth(len(depths) - 1).wait_for(timeout=120_000)
    assert markers.count() == len(depths)
    markers.first.click(force=True)  # the depth-1 point (a picker beside the chart does the same: tests/pages)
    page.get_by_text("Showing a tree of the search, not the run's own: depth 1", exact=False).wait_for(
        timeout=180_000)
    assert "tree=d1-kany" in page.url
    page.locator("#get-node-3").wait_for(timeout=180_000)  # a depth-1 tree: the root and its two leaves
    assert page.locator("#get-node-1").count() == 1 and page.locator("#get-node-4").count() == 0
    page.get_by_text("Node 1 (branch, level 0)", exact=False).wait_for(timeout=120_000)


def test_two_features_per_split_read_as_a_whole_sentence_on_a_clicked_node(server, page):
    url, db, csv = server
    run_id = _train(page, url, db, csv, [("Features per split", "2")], starts=2)  # one start is CART's (1 feature)
    tree = model_file.from_dict(RunStore(db).get_json(run_id, "model"))
    widths = {t: int(np.count_nonzero(tree.weights[t - 1])) for t in range(1, 2 ** tree.depth)}
    assert max(widths.values()) <= 2
    node = min((t for t, w in widths.items() if w == 2), default=None)
    assert node is not None, f"no split of the planted data uses 2 features: {widths}"
    page.goto(f"{url}/tree?run={run_id}")
    page.locator(f"#get-node-{node}").wait_for(timeout=180_000)
    page.locator(f"#get-node-{node}").click()
    page.get_by_text(f"Node {node} (branch, level", exact=False).wait_for(timeout=120_000)
    sentence = labels.split_text(tree, node, digits=4, max_terms=None)
    used = [tree.feature_names[j] for j in np.flatnonzero(tree.weights[node - 1])]
    assert all(name in sentence for name in used) and "more)" not in sentence
    page.get_by_text(sentence, exact=False).first.wait_for(timeout=120_000)  # both names, whole, in the panel
