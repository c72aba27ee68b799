"""A real ``streamlit run app.py`` on a free localhost port, and Debian's headless chromium, for browser tests.

Playwright's own browser download is not reachable here: chromium comes from Debian (``make system-deps``) and is
launched by ``executable_path`` with the flags that keep it off the network.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


#: How long a browser test waits for a page or an action, generous: a busy laptop (load 5-30 on 2 cores) took more
#: than 60 s to show a page that a quiet machine shows in a few; a wait ends as soon as its element is there.
BUSY_MS = 180_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, process: subprocess.Popen, timeout: float = 240.0) -> None:
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


def require_chromium() -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (make system-deps)")


def require_diagram_browser() -> None:
    """Chromium and Graphviz's dot: what a browser test of the tree diagram needs."""
    require_chromium()
    if shutil.which("dot") is None:
        pytest.skip("Graphviz dot is not installed (make system-deps)")


def server_log(db: Path) -> Path:
    """Where ``serve_app(db)`` writes the server's output: what a failed browser test quotes."""
    return db.parent / "streamlit.log"


@contextmanager
def serve_app(db: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """The app against run store ``db`` (with ``env`` added to its environment); yields its base URL and stops the
    server afterwards. The server's output goes to ``server_log(db)``."""
    port = free_port()
    env = {**os.environ, **(env or {}), "GET_EXPLORER_DB": str(db)}
    with open(server_log(db), "ab") as log:
        process = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true",
                                    f"--server.port={port}", "--server.address=127.0.0.1",
                                    "--browser.gatherUsageStats=false"],
                                   cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def open_until(page, url: str, locator, timeout_ms: int, log: Path, retry_ms: int = BUSY_MS) -> None:
    """Open ``url`` until ``locator`` shows, reloading once if it has not after ``timeout_ms``; the reloaded page
    gets ``retry_ms``, the busy default (what the server computed for the first render is cached by then).

    Why: once in many runs of the whole suite, a page's first render never finished in the test's browser (540 s
    with the machine idle), while a second browser on the same server had the same page in seconds (November 27).
    The reload keeps such a stall from hiding what the test is about; the warning keeps it from going unseen, with
    the page's words and the end of the server's log."""
    page.goto(url)
    try:
        locator.wait_for(timeout=timeout_ms)
        return
    except Exception as exc:  # Playwright's TimeoutError: say what the page showed, then try once more
        shown = page.inner_text("body")[-1500:] if page.query_selector("body") else ""
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no server log)"
        warnings.warn(f"{url} did not show {locator} in {timeout_ms / 1000:.0f} s ({type(exc).__name__}); "
                      f"reloading once. The page showed:\n{shown}\nThe server's log ended:\n{tail}",
                      RuntimeWarning, stacklevel=2)
    page.reload()
    locator.wait_for(timeout=retry_ms)


@contextmanager
def serve_training_app(folder: Path) -> Iterator[tuple[str, Path]]:
    """The app on a fresh store in ``folder`` for tests that train through the pages: no run-time measurement is
    started (one is marked as under way, to keep the shared machine quiet), and the runs still queued or running
    at the end are cancelled (workers outlive the server by design). Yields the URL and the store's path."""
    from get_core.runs.store import RunStatus, RunStore

    db = folder / "runs.sqlite"
    (folder / "calibration.measuring").write_text("held by the test")
    try:
        with serve_app(db) as url:
            yield url, db
    finally:
        store = RunStore(db)
        for run in store.list_runs([RunStatus.QUEUED, RunStatus.RUNNING]):
            store.request_cancel(run.run_id)


@contextmanager
def serve_measured_app(folder: Path) -> Iterator[tuple[str, psutil.Process]]:
    """The app on a fresh store in ``folder`` (no run-time measurement started) and its server process, for tests
    that sample the server's memory; yields the URL and the process."""
    (folder / "calibration.measuring").write_text("held by the test")
    with serve_app(folder / "runs.sqlite") as url:
        port = url.rsplit(":", 1)[1]
        yield url, next(p for p in psutil.Process().children(recursive=True)
                        if f"--server.port={port}" in " ".join(p.cmdline()))


@contextmanager
def browser_page(width: int = 1400, height: int = 1000):
    """A fresh page in headless Debian chromium."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(BUSY_MS)  # Playwright's 30 s per action is too little on a busy machine
            yield page
        finally:
            browser.close()
