"""The real app's Predict page under the uploads of issue 50: a 0.3 MB model file of 20,000 classes, then a CSV of
20,000 rows to score, took the server from 222 MB past 6 GB in 21 s. Through the browser, with the server's RSS
sampled every 50 ms, each upload here must be refused with a sentence or scored with the server under 2 GB: the
20,000-class file, and a valid model file of the app's most classes (50) with the most rows the Predict page scores
for it, then a 1,000,000-row file (the readers' limit) that it refuses.

    python -m pytest -q -s -m browser tests/e2e/test_predict_memory.py   # -s prints the figures
"""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pandas as pd
import psutil
import pytest

from get_core.data.classes import MAX_CLASSES
from get_core.data.reading.limits import MAX_ROWS
from get_core.model import model_file
from get_core.views import explain
from tests.e2e.streamlit_app import BUSY_MS, browser_page, require_chromium, serve_measured_app
from tests.e2e.test_hostile_uploads import Watch
from tests.trees import make_class_tree

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MAX_RSS_MB = 2048
N_INPUTS = 19  # the 1,000,000 x 19 table
DEPTH = 8


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    require_chromium()
    with serve_measured_app(tmp_path_factory.mktemp("predict_memory")) as served:
        yield served


def _many_classes_file(n_classes: int) -> str:
    """A depth-1 class tree's model file patched to ``n_classes`` classes (each leaf's shares even): the writer's
    own file in every other field, so the class count is the only check it can fail."""
    data = json.loads(model_file.model_json(make_class_tree(depth=1, n_classes=2)[0]))
    data["classes"] = list(range(n_classes))
    data["leaf_proba"] = [[1.0 / n_classes] * n_classes] * 2
    data["node_counts"] = [[1.0] * n_classes] * 3
    return json.dumps(data)


def _rows_csv(names: list[str], n_rows: int) -> bytes:
    """``n_rows`` rows of the model's inputs, numbers of two decimals (a small file for its rows)."""
    rng = np.random.default_rng(0)
    return pd.DataFrame(np.round(rng.normal(size=(n_rows, len(names))), 2), columns=names).to_csv(
        index=False).encode()


def _until_rested(server: psutil.Process, longest_s: float = 2 * BUSY_MS / 1000) -> None:
    """Waits for the server to work (a rerun that scores the file: seconds of CPU), then to rest (a 2-second window
    of under 0.2 s of CPU): the page shows no sign that a rerun has ended."""
    deadline, worked = time.monotonic() + longest_s, False
    while time.monotonic() < deadline:
        times = server.cpu_times()
        time.sleep(2.0)
        used = sum(server.cpu_times()[:2]) - sum(times[:2])
        if worked and used < 0.2:
            return
        worked = worked or used > 1.0


def _upload(app, tmp_path, model: str, rows: bytes | None, shown: str, rerun: bool = False
            ) -> tuple[float, float, float]:
    """Uploads ``model`` on the Predict page (then ``rows`` to score) and waits for ``shown``, and with ``rerun``
    for the explanation of the first row (made after the CSV download), then of the last one (a rerun that scores
    the file again while the first CSV is still held): the server's baseline and peak RSS in MB and the seconds from
    the last upload to the answer."""
    url, server = app
    (tmp_path / "model.json").write_text(model)
    (tmp_path / "rows.csv").write_bytes(rows or b"")
    with browser_page() as page:
        page.goto(url + "/predict")
        page.get_by_text("A model file", exact=True).click()
        page.locator("input[type=file]").first.wait_for(state="attached", timeout=BUSY_MS)
        baseline = server.memory_info().rss / 2 ** 20
        watch = Watch(url, server)
        watch.start()
        start = time.monotonic()
        page.locator("input[type=file]").first.set_input_files(str(tmp_path / "model.json"))
        if rows is not None:
            uploader = page.locator("input[type=file]").nth(1)
            uploader.wait_for(state="attached", timeout=BUSY_MS)
            start = time.monotonic()
            uploader.set_input_files(str(tmp_path / "rows.csv"))
        page.get_by_text(re.compile(re.escape(shown))).first.wait_for(timeout=2 * BUSY_MS)
        if rerun:
            page.get_by_text("Predicted class", exact=True).first.wait_for(timeout=2 * BUSY_MS)
        seconds = time.monotonic() - start
        if rerun:
            box = page.get_by_role("spinbutton", name="Explain row")
            box.fill(str(rows.count(b"\n") - 1))
            box.press("Enter")
            _until_rested(server)
        watch.done.set()
        watch.join()
    return baseline, watch.peak_mb, seconds


def test_a_model_file_of_20000_classes_is_refused_in_a_sentence_and_the_server_stays_under_2_gb(app, tmp_path):
    model = _many_classes_file(20_000)
    baseline, peak, seconds = _upload(app, tmp_path, model, None, f"The model has 20,000 classes; GET Explorer's app "
                                                                  f"reads models of at most {MAX_CLASSES} classes.")
    print(f"\n| 20,000 classes, {len(model) / 1e6:.2f} MB | refused | {seconds:.1f} | {baseline:,.0f} | {peak:,.0f} |")
    assert peak < MAX_RSS_MB


@pytest.mark.parametrize("most", [True, False], ids=["the most rows it scores", "1,000,000 rows"])
def test_the_most_rows_of_a_50_class_model_are_scored_and_more_refused_under_2_gb(app, tmp_path, most):
    tree = make_class_tree(depth=DEPTH, p=N_INPUTS, n_classes=MAX_CLASSES, n_rows=5_000)[0]
    limit = (explain.SCORED_TABLE_MB << 20) // explain.scored_row_bytes(tree, N_INPUTS)
    n_rows = limit if most else MAX_ROWS
    rows = _rows_csv(list(tree.feature_names), n_rows)
    shown = f"Scored {n_rows:,} rows." if most else f"the Predict page scores at most {limit:,} rows at a time"
    baseline, peak, seconds = _upload(app, tmp_path, model_file.model_json(tree), rows, shown, rerun=most)
    print(f"\n| {MAX_CLASSES} classes, depth {DEPTH}, {n_rows:,} x {N_INPUTS} ({len(rows) / 1e6:.1f} MB) | "
          f"{'scored' if most else 'refused'} | {seconds:.1f} | {baseline:,.0f} | {peak:,.0f} |")
    assert peak < MAX_RSS_MB
