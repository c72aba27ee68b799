"""In a real browser: open a finished run's tree, click a node in the diagram, see its weights, reload, still there.

Runs ``streamlit run app.py`` on a free localhost port against a temporary store (``GET_EXPLORER_DB``) holding a
hand-made finished run, and drives Debian's headless chromium through Playwright.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from get_core.runs.store import RunStore
from get_core.tree import ObliqueTree
from get_core.views import labels
from tests.explorer_runs import finished_run

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
NAMES = ["temp", "<b>pressure</b>", 'wind "speed"', "rain"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError("streamlit did not become healthy")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (make system-deps)")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz dot is not installed (make system-deps)")
    db = tmp_path_factory.mktemp("e2e") / "runs.sqlite"
    store = RunStore(db)
    run_id = finished_run(store, depth=4, names=NAMES, n_rows=240, name="click test")
    tree = ObliqueTree.from_dict(store.get_json(run_id, "model"))
    store.close()
    port = _free_port()
    env = {**os.environ, "GET_EXPLORER_DB": str(db)}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true",
                             f"--server.port={port}", "--server.address=127.0.0.1",
                             "--browser.gatherUsageStats=false"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc)
        yield url, run_id, tree
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def page(app):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 1000})
        finally:
            browser.close()


def _expect_node_panel(page, tree: ObliqueTree, node: int) -> None:
    page.get_by_text(f"Node {node} (branch, level", exact=False).wait_for(timeout=30_000)
    page.get_by_text(f"Node {node}: weights (original units)", exact=False).first.wait_for(timeout=30_000)
    split = labels.split_text(tree, node, digits=4, max_terms=None)
    page.get_by_text(split, exact=False).first.wait_for(timeout=10_000)  # every weight, names verbatim


def test_click_a_node_see_its_weights_and_keep_it_across_a_reload(app, page):
    url, run_id, tree = app
    page.goto(url + "/")  # the app's entry page first: st.navigation takes over from the pages/ folder
    page.get_by_text("Data", exact=True).first.wait_for(timeout=30_000)
    page.goto(f"{url}/tree?run={run_id}")
    page.locator("#get-node-1").wait_for(timeout=60_000)
    page.get_by_text("Node 1 (branch, level 0)").wait_for(timeout=30_000)

    page.locator("#get-node-5").click()
    _expect_node_panel(page, tree, 5)
    assert "node=5" in page.url
    assert page.locator("#get-node-5.get-selected").count() == 1

    page.reload()
    page.locator("#get-node-5.get-selected").wait_for(timeout=60_000)
    _expect_node_panel(page, tree, 5)
    assert "node=5" in page.url
