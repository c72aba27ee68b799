"""In a real browser: upload a CSV, start training, watch the loss curves grow, reload, find the run finishing.

Runs ``streamlit run app.py`` on a free localhost port against a temporary run database (``GET_EXPLORER_DB``) and
drives Debian's headless chromium through Playwright (Playwright's own browser download is not used).
"""

from __future__ import annotations

import re
import time

import pytest

from get_core.runs.store import RunStatus, RunStore
from tests.e2e.streamlit_app import BUSY_MS, ROOT, browser_page, require_chromium, serve_training_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EXAMPLE = ROOT / "data" / "examples" / "airfoil_self_noise.csv"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    with serve_training_app(tmp_path_factory.mktemp("browser")) as served:
        yield served


@pytest.fixture(scope="module")
def page(server):
    with browser_page(height=1100) as page:
        yield page


def _curve_paths(page) -> str:
    """The SVG path data of the plotted loss lines: it changes as points arrive. (Not its length: once a line is
    thinned to ``views.curves.MAX_POINTS_PER_LINE`` points, a redraw with more epochs can be a few characters
    shorter; CI once saw 2,026 characters become 2,023.)"""
    return page.evaluate(
        "() => Array.from(document.querySelectorAll('.js-plotly-plot .scatterlayer path.js-line'))"
        ".map(p => p.getAttribute('d') || '').join('|')")


def _progress(page) -> int:
    text = page.get_by_text(re.compile(r"^\d+%")).first.inner_text()
    return int(text.split("%")[0])


def test_upload_train_watch_reload_and_find_the_run_finishing(server, page):
    url, db = server
    page.goto(url + "/")
    page.locator("input[type=file]").first.set_input_files(str(EXAMPLE))
    page.get_by_text("Ready: 1,503 rows, 5 model inputs", exact=False).wait_for(timeout=180_000)

    page.get_by_role("link", name="Continue to Train").click()
    page.get_by_role("button", name="Start training").wait_for(timeout=180_000)
    page.get_by_text("manual", exact=True).click()  # the default is a 10 s time budget, without an epochs field
    epochs = page.get_by_label("Epochs per alpha stage")
    epochs.fill("3000")
    epochs.press("Enter")
    page.wait_for_timeout(1000)  # let the rerun with the new value land before starting
    page.get_by_role("button", name="Start training").click()

    title = page.get_by_text("Run #1:", exact=False).first
    title.wait_for(timeout=180_000)
    title.wait_for(state="visible", timeout=BUSY_MS)  # the run opens on the Runs page, its panel at the top
    box, viewport = title.bounding_box(), page.viewport_size
    assert box is not None and 0 <= box["y"] < viewport["height"] / 2, (box, viewport)
    deadline = time.monotonic() + 90
    while not _curve_paths(page).strip("|"):  # the worker is starting (a few seconds for torch)
        assert time.monotonic() < deadline, "no loss curve appeared"
        page.wait_for_timeout(500)
    first_paths, first_progress = _curve_paths(page), _progress(page)
    deadline = time.monotonic() + 90  # a quiet machine redraws them within a few seconds; a busy one takes longer
    while _curve_paths(page) == first_paths:
        assert time.monotonic() < deadline, "the loss curves did not move"
        page.wait_for_timeout(500)
    assert _progress(page) >= first_progress
    assert "run=1" in page.url

    page.reload()  # a new browser session: nothing but the URL survives in the browser
    page.get_by_text("Run #1:", exact=False).first.wait_for(timeout=180_000)
    assert RunStore(db).get_run(1).status in (RunStatus.RUNNING, RunStatus.FINISHED)
    page.get_by_text("FINISHED · dataset", exact=False).first.wait_for(timeout=180_000)
    # exact: the runs table's hidden "test R²" column header matches a substring search too
    page.get_by_text("Test R²", exact=True).first.wait_for(timeout=BUSY_MS)
    run = RunStore(db).get_run(1)
    assert run.status is RunStatus.FINISHED and run.test_r2 is not None

    page.goto(url + "/runs")  # the runs table and the opened run, in yet another session
    page.get_by_role("heading", name="Runs").wait_for(timeout=120_000)
    page.get_by_text("FINISHED · dataset", exact=False).first.wait_for(timeout=120_000)


def test_the_run_pickers_label_follows_the_run_to_its_end_without_a_reload(server, page):
    """Streamlit keeps a keyed selectbox's old option labels on screen when only they change: the opened run's
    picker read "(running)" after the run had finished, until a reload (``pages.common.labelled_key``)."""
    url, _ = server
    page.goto(url + "/")
    page.locator("input[type=file]").first.set_input_files(str(EXAMPLE))
    page.get_by_text("Ready: 1,503 rows, 5 model inputs", exact=False).wait_for(timeout=180_000)
    page.get_by_role("link", name="Continue to Train").click()
    page.get_by_role("button", name="Start training").click()  # the default: about 10 s
    running = page.get_by_text(re.compile(r"^#\d+ .*\(running\)$"))
    running.first.wait_for(state="attached", timeout=180_000)
    run_id = int(running.first.text_content().split()[0][1:])
    page.get_by_text("FINISHED · dataset", exact=False).first.wait_for(timeout=180_000)
    page.get_by_text(re.compile(rf"^#{run_id} .*\(finished\)$")).first.wait_for(state="attached", timeout=BUSY_MS)
    deadline = time.monotonic() + 90  # the full rerun redraws the other tabs' pickers a moment later (longer when busy)
    while running.count():
        assert time.monotonic() < deadline, running.first.text_content()
        page.wait_for_timeout(500)
