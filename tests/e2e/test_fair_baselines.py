"""In a real browser, issue 48's fair baselines and honest time left: Compare lists the depth-tuned CART (named with
its depth), the 100-tree forest and HistGradientBoosting of a regression run; a running run's time left counts down
from its estimate while its baselines are fitted (the forest reports no progress)."""

from __future__ import annotations

import threading

import pytest

from get_core.runs.store import RunStatus, RunStore
from tests.e2e.streamlit_app import BUSY_MS, browser_page, require_chromium, serve_app
from tests.explorer_runs import finished_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    require_chromium()
    db = tmp_path_factory.mktemp("e2e") / "runs.sqlite"
    store = RunStore(db)
    fair = finished_run(store, depth=2, name="fair baselines")
    store.close()
    with serve_app(db) as url:
        yield url, db, fair


@pytest.fixture
def page(app):
    with browser_page() as page:
        yield page


def test_compare_lists_the_tuned_cart_the_whole_forest_and_boosting(app, page):
    url, db, fair = app
    names = [m["name"] for m in RunStore(db).get_json(fair, "baselines")["models"].values()]
    assert names[0].startswith("CART (depth ") and "HistGradientBoosting" in names
    page.goto(url + "/")
    page.get_by_text("Data", exact=True).first.wait_for(timeout=120_000)
    page.goto(f"{url}/compare?run={fair}")
    page.get_by_text("never cut by GET's time budget", exact=False).first.wait_for(timeout=BUSY_MS)
    for name in names:
        page.get_by_text(name, exact=True).first.wait_for(state="attached", timeout=BUSY_MS)


def test_a_running_runs_time_left_counts_down_from_its_estimate_while_its_baselines_fit(app, page):
    url, db, fair_id = app
    store = RunStore(db)
    fair = store.get_run(fair_id)
    params = {**fair.params, "estimated_seconds": 600.0}
    run_id = store.create_run(params, store.get_dataset(fair_id).data, "running.csv", n_rows=fair.n_rows,
                              n_features=fair.n_features, name="fitting its baselines")
    store.start_run(run_id)
    store.record_progress(run_id, progress=0.8, phase="baselines")
    beating = threading.Event()

    def beat() -> None:  # the worker's heartbeat, so the run is not failed as stale while the page loads
        while not beating.wait(1.0):
            RunStore(db).record_heartbeat(run_id)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        page.goto(url + "/")
        page.get_by_text("Data", exact=True).first.wait_for(timeout=120_000)
        page.goto(f"{url}/runs?run={run_id}")
        progress = page.get_by_text("fitting the baselines", exact=False).first
        progress.wait_for(timeout=BUSY_MS)
        shown = progress.inner_text()
        assert "80%" in shown and "min" in shown and "left" in shown, shown  # about 9-10 min of the 600 s estimate
    finally:
        beating.set()
        thread.join(timeout=5)
        store.set_status(run_id, RunStatus.CANCELLED)
