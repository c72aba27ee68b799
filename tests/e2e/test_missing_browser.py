"""In a real browser, issue 47's road for a table as it comes: a generated table with holes in a number column and
a text column of categories; the Data page keeps every row and says what the tree does with the holes, the run
trains on them, and the Tree page writes the split in the table's terms (what a missing value counts as)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from get_core.runs.results import load_results
from get_core.runs.store import RunStatus, RunStore
from tests.e2e.streamlit_app import BUSY_MS, browser_page, require_chromium, serve_training_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def holed_table(n: int = 240, seed: int = 0) -> pd.DataFrame:
    """price = 2·income + a colour's bonus; a quarter of income missing, colour as text."""
    rng = np.random.default_rng(seed)
    income = rng.uniform(20, 80, n)
    colour = rng.choice(["red", "blue", "green"], n)
    price = 2 * income + np.where(colour == "red", 30.0, 0.0) + rng.normal(0, 1, n)
    income[rng.choice(n, n // 4, replace=False)] = np.nan
    return pd.DataFrame({"income": income, "colour": colour, "price": price})


def test_holes_are_kept_trained_on_and_written_as_what_they_count_as(tmp_path):
    require_chromium()
    path = tmp_path / "prices.csv"
    holed_table().to_csv(path, index=False)
    with serve_training_app(tmp_path) as (url, db), browser_page(1400, 1000) as page:
        page.goto(url + "/")
        page.locator("input[type=file]").first.set_input_files(str(path))
        page.get_by_text("25% of 'income' is missing: no row is dropped", exact=False).wait_for(timeout=BUSY_MS)
        page.get_by_text("Ready: 240 rows", exact=False).wait_for(timeout=BUSY_MS)

        page.get_by_role("link", name="Continue to Train").click()
        page.get_by_role("button", name="Start training").wait_for(timeout=BUSY_MS)
        page.get_by_text("manual", exact=True).click()
        epochs = page.get_by_label("Epochs per alpha stage")
        epochs.fill("100")
        epochs.press("Enter")
        page.wait_for_timeout(1000)
        page.get_by_role("button", name="Start training").click()
        page.get_by_text("FINISHED · dataset", exact=False).first.wait_for(timeout=240_000)
        store = RunStore(db)
        run = store.get_run(1)
        assert run.status is RunStatus.FINISHED and run.params["data"]["missing"] == "keep"
        results = load_results(store, 1)
        assert len(results.y_train) + len(results.y_test) == 240 and results.tree.inputs is not None

        tree = results.tree
        income = tree.feature_names.index("income")
        node = next(t for t in range(1, tree.n_branches + 1)  # a live split that weighs income
                    if tree.weights[t - 1, income] != 0 and tree.n_samples[t - 1] > 0)
        page.goto(f"{url}/tree?run=1&node={node}")
        page.get_by_text(f"Node {node} (branch", exact=False).first.wait_for(timeout=BUSY_MS)
        page.get_by_text("(if missing: ", exact=False).first.wait_for(timeout=BUSY_MS)
        assert page.get_by_text("Traceback", exact=False).count() == 0
        assert page.get_by_text("income=missing", exact=False).count() == 0
        store.close()
