"""In a real browser: upload a CSV, start training, watch the loss curves grow, reload, find the run finishing.

Runs ``streamlit run app.py`` on a free localhost port against a temporary run database (``GET_EXPLORER_DB``) and
drives Debian's headless chromium through Playwright (Playwright's own browser download is not used).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from get_core.runs.store import RunStatus, RunStore

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "data" / "examples" / "airfoil_self_noise.csv"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, process: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError("streamlit did not become healthy")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (make system-deps)")
    folder = tmp_path_factory.mktemp("browser")
    db = folder / "runs.sqlite"
    (folder / "calibration.measuring").write_text("held by the test")  # keep the shared machine quiet
    port = _free_port()
    env = {**os.environ, "GET_EXPLORER_DB": str(db)}
    process = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true",
                                f"--server.port={port}", "--server.address=127.0.0.1",
                                "--browser.gatherUsageStats=false"],
                               cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process)
        yield url, db
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        store = RunStore(db)
        for run in store.list_runs([RunStatus.QUEUED, RunStatus.RUNNING]):
            store.request_cancel(run.run_id)  # workers outlive the server by design; stop ours


@pytest.fixture(scope="module")
def page(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 1100})
        finally:
            browser.close()


def _curve_length(page) -> int:
    """Characters of SVG path data in the plotted loss lines: grows as points arrive."""
    return page.evaluate(
        "() => Array.from(document.querySelectorAll('.js-plotly-plot .scatterlayer path.js-line'))"
        ".reduce((n, p) => n + (p.getAttribute('d') || '').length, 0)")


def _progress(page) -> int:
    text = page.get_by_text(re.compile(r"^\d+%")).first.inner_text()
    return int(text.split("%")[0])


def test_upload_train_watch_reload_and_find_the_run_finishing(server, page):
    url, db = server
    page.goto(url + "/")
    page.locator("input[type=file]").first.set_input_files(str(EXAMPLE))
    page.get_by_text("Ready: 1,503 rows, 5 model inputs", exact=False).wait_for(timeout=60_000)

    page.get_by_role("link", name="Continue to Train").click()
    page.get_by_role("button", name="Start training").wait_for(timeout=60_000)
    epochs = page.get_by_label("Epochs per alpha stage")
    epochs.fill("3000")
    epochs.press("Enter")
    page.wait_for_timeout(1000)  # let the rerun with the new value land before starting
    page.get_by_role("button", name="Start training").click()

    page.get_by_text("Run #1:", exact=False).first.wait_for(timeout=60_000)
    deadline = time.monotonic() + 90
    while _curve_length(page) == 0:  # the worker is starting (a few seconds for torch)
        assert time.monotonic() < deadline, "no loss curve appeared"
        page.wait_for_timeout(500)
    first_length, first_progress = _curve_length(page), _progress(page)
    page.wait_for_timeout(3000)
    assert _curve_length(page) > first_length, "the loss curves did not grow"
    assert _progress(page) >= first_progress
    assert "run=1" in page.url

    page.reload()  # a new browser session: nothing but the URL survives in the browser
    page.get_by_text("Run #1:", exact=False).first.wait_for(timeout=60_000)
    assert RunStore(db).get_run(1).status in (RunStatus.RUNNING, RunStatus.FINISHED)
    page.get_by_text("✅ Run #1", exact=False).first.wait_for(timeout=180_000)
    page.get_by_text("Test R²").first.wait_for(timeout=10_000)
    run = RunStore(db).get_run(1)
    assert run.status is RunStatus.FINISHED and run.test_r2 is not None

    page.goto(url + "/runs")  # the runs table and the opened run, in yet another session
    page.get_by_role("heading", name="Runs").wait_for(timeout=30_000)
    page.get_by_text("✅ Run #1", exact=False).first.wait_for(timeout=30_000)
