"""In a real browser, issue 48's points 2, 4 and 6: a depth-5 class tree drawn with no dead rule and yes/no edges; the
diagram in a 1,000 x 800 window inside its box with readable text; a search's curves showing the fits that made its
tree, the rest folded; the Runs table of a class run without "None"; an upload with a column named target that
chooses it and logs no "missing ScriptRunContext".

Tables are generated here; the runs train through the real worker before the server starts (seconds each).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from get_core import export
from get_core.model import model_file, prune
from get_core.runs import worker
from get_core.runs.store import RunStatus, RunStore
from get_core.views import diagram
from get_core.views.curves import BEST_CHECKPOINT
from tests.e2e.streamlit_app import browser_page, require_diagram_browser, serve_app, server_log
from tests.runs.test_class_run import class_run, three_classes

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TREE, SEARCHED = 1, 2  # the runs: a depth-5 class tree, and a class run whose depth was searched


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    require_diagram_browser()
    folder = tmp_path_factory.mktemp("round4")
    db = folder / "runs.sqlite"
    (folder / "calibration.measuring").write_text("held by the test")  # no run-time measurement on the machine
    store = RunStore(db)
    table = three_classes(300)
    assert class_run(store, table, config={"depth": 5, "n_epochs": 60}) == TREE
    assert class_run(store, table, extra={"search": {"depths": [1, 2, 3], "split_features": None}}) == SEARCHED
    for run_id in (TREE, SEARCHED):
        assert worker.execute(store, run_id, hard_stop=False) is RunStatus.FINISHED
    store.close()
    with serve_app(db) as url:
        yield url, db


def _open(page, url: str, path: str) -> None:
    page.goto(url + "/")  # the app's entry page first: st.navigation takes over from the pages/ folder
    page.get_by_text("Data", exact=True).first.wait_for(timeout=120_000)
    page.goto(url + path)


def _drawn(page) -> dict:
    """The diagram as drawn: its box and picture widths, every node's text and whether it sits inside the box
    horizontally, the edges' labels, and the smallest text height in px."""
    return page.locator(".get-tree-view").evaluate("""(view) => {
        const frame = view.getBoundingClientRect();
        const nodes = [...view.querySelectorAll('g.get-node')].map((g) => { const b = g.getBoundingClientRect();
            return {id: g.id, text: g.textContent, inside: b.left >= frame.left - 1 && b.right <= frame.right + 1}; });
        const edges = [...view.querySelectorAll('g.edge text')].map((t) => t.textContent);
        const heights = [...view.querySelectorAll('g.get-node text')].map((t) => t.getBoundingClientRect().height);
        return {box: frame.width, nodes, edges, text: Math.min(...heights)}; }""")


def test_a_depth_5_class_tree_draws_no_dead_rule_and_its_edges_read_yes_and_no(app):
    url, db = app
    tree = model_file.from_dict(RunStore(db).get_json(TREE, "model"))
    with browser_page(1400, 1000) as page:
        _open(page, url, f"/tree?run={TREE}")
        page.locator("#get-node-1").wait_for(timeout=180_000)
        drawn = _drawn(page)
    live = {f"get-node-{t}" for t in np.flatnonzero(prune.live(tree)) + 1}
    assert drawn["nodes"] and {n["id"] for n in drawn["nodes"]} <= live  # no pass-through, nothing on a dead side
    assert not [n["text"] for n in drawn["nodes"] if " 0 rows" in n["text"] or "empty" in n["text"]]
    assert drawn["edges"] and set(drawn["edges"]) == {"yes", "no"}
    assert "if 0 <= 1" not in export.rules_text(tree) and "if 0 >= " not in export.rules_text(tree)


def test_in_a_1000_by_800_window_the_diagram_opens_inside_its_box_with_readable_text(app):
    url, _ = app
    with browser_page(1000, 800) as page:
        _open(page, url, f"/tree?run={TREE}")
        page.locator("#get-node-1").wait_for(timeout=180_000)
        page.wait_for_timeout(1500)  # the box's width went back to the page, which drew the levels that fit it
        drawn = _drawn(page)
        scale = float(page.locator(".get-tree-host").get_attribute("data-scale"))
    assert drawn["box"] < 700  # the narrow window's box (the page planned for 1,100 px)
    assert all(n["inside"] for n in drawn["nodes"]), [n["id"] for n in drawn["nodes"] if not n["inside"]]
    assert scale >= diagram.READABLE and drawn["text"] >= 8, (scale, drawn["text"])


def test_a_search_runs_curves_show_the_chosen_fit_and_its_refit_with_every_fit_folded(app):
    url, db = app
    fits = RunStore(db).get_json(SEARCHED, "fits")
    with browser_page(1400, 1000) as page:
        _open(page, url, f"/runs?run={SEARCHED}")
        page.get_by_text(BEST_CHECKPOINT, exact=False).first.wait_for(timeout=180_000)
        page.locator(".js-plotly-plot .gtitle", has_text="each fit of the search").wait_for(
            state="attached", timeout=180_000)  # the folded figure, drawn inside its closed expander
        assert page.get_by_text(f"Every fit of the search ({len(fits)})").count() == 1
        figures = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map((p) => ({
            title: (p.querySelector('.gtitle') || {}).textContent || '',
            panels: [...p.querySelectorAll('.annotation-text')].map((t) => t.textContent)}))""")
    refit = fits[-1]["name"]
    main = next(f for f in figures if "the fits that made the run's tree" in f["title"])
    every = next(f for f in figures if "each fit of the search" in f["title"])
    assert refit.startswith("refit, ") and main["panels"] == [refit.removeprefix("refit, "), refit], main
    assert every["panels"] == [fit["name"] for fit in fits], every  # every fit had a checkpoint: no empty panel


@pytest.mark.parametrize("path, tables", [("/runs", 1), (f"/compare?run={TREE}", 2)])
def test_the_runs_and_compare_tables_fit_a_1400_px_window(app, path, tables):
    url, _ = app
    with browser_page(1400, 1000) as page:
        _open(page, url, path)
        grids = page.locator('[data-testid="stDataFrame"]')
        grids.nth(tables - 1).wait_for(timeout=180_000)
        page.wait_for_timeout(1000)
        cut = [grids.nth(i).evaluate("""(frame) => { const s = frame.querySelector('.dvn-scroller');
            return s ? s.scrollWidth - s.clientWidth : null; }""") for i in range(tables)]
    assert all(c is not None and c <= 1 for c in cut), cut  # every column in view: no horizontal scroll


def test_an_upload_with_a_column_named_target_chooses_it_and_logs_no_script_run_context(app, tmp_path):
    url, db = app
    rng = np.random.default_rng(4)
    path = tmp_path / "kinds.csv"
    pd.DataFrame({"target": rng.choice(["red", "blue", "green"], 90), "a": rng.random(90),
                  "b": rng.random(90)}).to_csv(path, index=False)
    with browser_page(1400, 1000) as page:
        page.goto(url + "/")
        page.locator("input[type=file]").first.set_input_files(str(path))
        page.get_by_text("Ready: 90 rows, 2 model inputs, classes of 'target'", exact=False).first.wait_for(
            timeout=180_000)
    assert "missing ScriptRunContext" not in server_log(db).read_text(errors="replace")
