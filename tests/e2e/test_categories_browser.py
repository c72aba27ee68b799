"""In a real browser, issue 47's category road through the app: a generated table with a text column (and holes in
it and in a number column) goes to the estimator as categories by default; the Data page says what the tree does
with them, the run trains, the Tree page's diagram writes the split as "colour in {...}", and the Predict page scores
an uploaded CSV holding a level never seen in training and a blank."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from get_core.runs.results import load_results
from get_core.runs.store import RunStatus, RunStore
from tests.e2e.streamlit_app import BUSY_MS, browser_page, require_diagram_browser, serve_training_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def colour_table(n: int = 200, seed: int = 0) -> pd.DataFrame:
    """price = a colour's bonus + income / 10; a few colours blank, a tenth of income missing."""
    rng = np.random.default_rng(seed)
    income = rng.uniform(20, 80, n)
    colour = rng.choice(["red", "blue", "green"], n).astype(object)
    price = np.where(colour == "red", 30.0, 0.0) + income / 10 + rng.normal(0, 0.5, n)
    colour[rng.choice(n, 8, replace=False)] = None
    income[rng.choice(n, n // 10, replace=False)] = np.nan
    return pd.DataFrame({"colour": colour, "income": income, "price": price})


def test_a_text_column_trains_as_categories_and_reads_in_the_users_terms(tmp_path):
    require_diagram_browser()
    path, rows = tmp_path / "prices.csv", tmp_path / "new.csv"
    colour_table().to_csv(path, index=False)
    pd.DataFrame({"colour": ["red", "purple", None, "blue"], "income": [50, 40, 30, None]}).to_csv(rows, index=False)
    with serve_training_app(tmp_path) as (url, db), browser_page(1400, 1000) as page:
        page.goto(url + "/")
        page.locator("input[type=file]").first.set_input_files(str(path))
        page.get_by_text("Categories ('colour'): a category column is one term of a split",
                         exact=False).wait_for(timeout=BUSY_MS)
        page.get_by_text("Ready: 200 rows", exact=False).wait_for(timeout=BUSY_MS)

        page.get_by_role("link", name="Continue to Train").click()
        page.get_by_role("button", name="Start training").wait_for(timeout=BUSY_MS)
        page.get_by_text("manual", exact=True).click()
        for label, value in (("Starts", "2"), ("Epochs per alpha stage", "60")):
            box = page.get_by_label(label, exact=True)
            box.fill(value)
            box.press("Enter")
            page.wait_for_timeout(700)
        k = page.locator('[data-testid="stRadio"]').filter(has=page.get_by_text("Features per split", exact=True))
        k.get_by_text("1", exact=True).click()  # one column per split: read as "colour in {...}" where it is colour
        page.wait_for_timeout(1000)
        page.get_by_role("button", name="Start training").click()
        page.get_by_text("FINISHED · dataset", exact=False).first.wait_for(timeout=240_000)
        store = RunStore(db)
        assert store.get_run(1).status is RunStatus.FINISHED and store.get_run(1).params["config"][
            "max_split_features"] == 1
        results = load_results(store, 1)
        colour = results.tree.inputs.columns[0]
        assert (colour.kind, colour.categories, colour.missing) == ("category", ("blue", "green", "red"), True)
        assert len(results.y_train) + len(results.y_test) == 200  # no row lost to a hole

        page.goto(f"{url}/tree?run=1")
        page.locator("#get-node-1").wait_for(timeout=BUSY_MS)
        view = page.locator(".get-tree-view")
        view.wait_for(timeout=BUSY_MS)
        text = view.inner_text()
        assert re.search(r"colour (not )?in \{", text), text  # the diagram: a split in the table's own categories

        page.goto(f"{url}/predict?run=1")
        page.locator("input[type=file]").first.set_input_files(str(rows))
        page.get_by_text("Scored 4 rows.", exact=True).wait_for(timeout=BUSY_MS)
        page.get_by_text("'purple', never seen in training; a category never seen in training adds nothing",
                         exact=False).wait_for(timeout=BUSY_MS)
        assert page.get_by_text("Traceback", exact=False).count() == 0
        store.close()
