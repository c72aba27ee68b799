"""The real app under hostile uploads (issue 18): through the browser's file uploader, each file of the issue at its
full size, and the largest legitimate tables. While each is read, the server's RSS is sampled every 50 ms and
``/_stcore/health`` is polled; its peak must stay under 1.5 GB and every answer come within 10 s (a parse holding
the server would take minutes).

    python -m pytest -q -s -m browser tests/e2e/test_hostile_uploads.py   # -s prints the figures
"""

from __future__ import annotations

import re
import threading
import time
import urllib.request

import psutil
import pytest

from tests import hostile_files as hostile
from tests.e2e.streamlit_app import browser_page, require_chromium, serve_measured_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MAX_RSS_MB = 1536
MAX_HEALTH_S = 10.0  # the server answers while it reads: a parse on its event loop held it for minutes;
# a busy machine (load 5-30) stretched answers to 1.3-2.5 s, hence the margin
CASES = {  # name: (file name, builder, what the page shows once the file is read)
    "shared string 1.2 GB": ("shared.xlsx", lambda: hostile.huge_shared_string_xlsx(1_200_000_000),
                             "1,144 MB of text cells"),
    "inline cell 1.2 GB": ("inline.xlsx", lambda: hostile.huge_inline_cell_xlsx(1_200_000_000), "zip bomb"),
    "plain Parquet 5.7 GB": ("plain.parquet", lambda: hostile.plain_text_parquet(20_000, 3, 100_000),
                             "once decompressed"),
    "dictionary Parquet 5.7 GB": ("dict.parquet", lambda: hostile.plain_text_parquet(20_000, 3, 100_000, True),
                                 "once decompressed"),
    "CSV of 1,000,000 columns": ("wide.csv", lambda: hostile.wide_csv(1_000_000), "1,000,000 columns"),
    "xlsx header of 3,000,000 cells": ("wide.xlsx", lambda: hostile.wide_header_xlsx(3_000_000), "16,384 cells"),
    "CSV 100,000 x 75": ("numbers.csv", lambda: hostile.numeric_csv(100_000, 75), "100,000 rows × 75 columns"),
    "Parquet 100,000 x 200": ("numbers.parquet", lambda: hostile.numeric_parquet(100_000, 200),
                              "100,000 rows × 200 columns"),
}


class Watch(threading.Thread):
    """Samples the server's RSS and the health check's latency until stopped."""

    def __init__(self, url: str, server: psutil.Process) -> None:
        super().__init__(daemon=True)
        self.url, self.server = url, server
        self.peak_mb, self.slowest_s, self.helper_mb = 0.0, 0.0, 0.0
        self.done = threading.Event()

    def run(self) -> None:
        last_health = 0.0
        while not self.done.is_set():
            self.peak_mb = max(self.peak_mb, self.server.memory_info().rss / 2**20)
            helpers = [c.memory_info().rss for c in self.server.children(recursive=True) if _alive(c)]
            self.helper_mb = max([self.helper_mb, *(rss / 2**20 for rss in helpers)])
            if time.monotonic() - last_health > 0.2:
                last_health = time.monotonic()
                try:  # a late answer is measured (and fails the test), never lost with this thread
                    with urllib.request.urlopen(self.url + "/_stcore/health", timeout=6 * MAX_HEALTH_S) as response:
                        answered = response.status == 200
                except OSError:
                    answered = False
                self.slowest_s = max(self.slowest_s, time.monotonic() - last_health if answered else float("inf"))
            time.sleep(0.05)


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    require_chromium()
    with serve_measured_app(tmp_path_factory.mktemp("hostile")) as served:
        yield served


@pytest.mark.parametrize("case", list(CASES))
def test_an_upload_keeps_the_server_under_1_5_gb_and_its_health_check_answering(app, case, tmp_path):
    url, server = app
    filename, build, shown = CASES[case]
    content = build()
    upload = tmp_path / filename  # a file, not a buffer: Playwright sent a 40 MB buffer to the browser in 78 s
    upload.write_bytes(content)
    with browser_page() as page:
        page.goto(url + "/")
        page.locator("input[type=file]").first.wait_for(state="attached", timeout=180_000)
        watch = Watch(url, server)
        watch.start()
        start = time.monotonic()
        page.locator("input[type=file]").first.set_input_files(str(upload))
        page.get_by_text(re.compile(re.escape(shown))).first.wait_for(timeout=240_000)
        seconds = time.monotonic() - start
        watch.done.set()
        watch.join()
    print(f"\n| {case} | {len(content) / 1e6:.2f} MB | {seconds:.1f} | {watch.peak_mb:,.0f} | {watch.helper_mb:,.0f} "
          f"| {watch.slowest_s * 1000:.0f} |")
    assert watch.peak_mb < MAX_RSS_MB and watch.slowest_s < MAX_HEALTH_S
