"""In a real browser, issue 22's findings a new user met: a constant target refused in words (1), and a run that
ended before its baselines offering to fit them on Compare (6). Emoji-free run titles (7) are checked here too, in
a window whose fonts are what the machine has."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from get_core.runs.store import RunStatus, RunStore
from tests.e2e.streamlit_app import BUSY_MS, browser_page, require_chromium, serve_app
from tests.explorer_runs import finished_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]
EMOJI = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF\u23E9-\u23FF\uFE0F]")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    require_chromium()
    db = tmp_path_factory.mktemp("e2e") / "runs.sqlite"
    store = RunStore(db)
    run_id = finished_run(store, depth=2, baselines=False, status=RunStatus.CANCELLED, name="stopped early")
    store.close()
    with serve_app(db) as url:
        yield url, db, run_id


@pytest.fixture
def page(app):
    with browser_page() as page:
        yield page


def test_a_constant_target_is_refused_in_words_and_stays_chosen(app, page, tmp_path):
    url, _, _ = app
    rng = np.random.default_rng(0)
    path = tmp_path / "flat.csv"
    pd.DataFrame({"a": rng.random(40), "b": rng.random(40), "target": 3.0, "c": rng.random(40)}).to_csv(path,
                                                                                                        index=False)
    page.goto(url + "/")
    page.locator("input[type=file]").first.set_input_files(str(path))
    page.get_by_text("has the same value (3) in every usable row", exact=False).wait_for(timeout=180_000)
    assert page.get_by_text("choose another target", exact=False).count() >= 1
    assert page.get_by_text("Ready:", exact=False).count() == 0


def test_a_cancelled_runs_baselines_can_be_fitted_from_compare(app, page):
    url, db, run_id = app
    page.goto(url + "/")
    page.get_by_text("Data", exact=True).first.wait_for(timeout=120_000)
    page.goto(f"{url}/compare?run={run_id}")
    page.get_by_text("ended before its baselines (CART, random forest, HistGradientBoosting) were fitted", exact=False).wait_for(
        timeout=180_000)
    page.get_by_role("button", name="Fit the baselines now").click()
    page.get_by_text("predictions against the actual target", exact=False).first.wait_for(timeout=120_000)
    assert "baselines" in RunStore(db).list_artifacts(run_id)


def test_run_titles_and_pickers_hold_no_emoji(app, page):
    url, _, run_id = app
    page.goto(url + "/")
    page.get_by_text("Data", exact=True).first.wait_for(timeout=120_000)
    page.goto(f"{url}/runs?run={run_id}")
    title = page.get_by_text(f"Run #{run_id}: stopped early", exact=False).first
    title.wait_for(timeout=180_000)
    picker = page.get_by_text(f"#{run_id} stopped early (cancelled)", exact=False).first  # a run picker's choice
    picker.wait_for(state="attached", timeout=120_000)
    shown = title.inner_text() + picker.text_content()
    assert "stopped early" in shown and not EMOJI.search(shown), shown


def test_hostile_settings_in_the_train_pages_address_are_said_on_the_page(app, page):
    """Issue 34, finding 8: the page showed nothing (the browser logged "Bad delta path index 5") for these."""
    from get_core.data import columns

    url, db, _ = app
    rng = np.random.default_rng(1)
    table = pd.DataFrame({"target": rng.random(40), "a": rng.random(40), "b": rng.random(40)})
    store = RunStore(db)
    fingerprint = store.put_dataset(columns.to_parquet_bytes(table), "hostile-url.csv")
    store.close()
    page.goto(url + "/")
    page.goto(f"{url}/train?data={fingerprint[:16]}&train=depth:64,n_starts:1000000000,time_budget:-1")
    page.get_by_text("were left at their defaults", exact=False).wait_for(timeout=180_000)
    for said in ("depth cannot be '64'", "'n_starts' is not a Train setting", "'time_budget' is not a Train setting"):
        assert page.get_by_text(said, exact=False).count() >= 1, said
    page.get_by_text("hostile-url.csv", exact=False).first.wait_for(timeout=BUSY_MS)  # the form is there too
    page.goto(f"{url}/train?data={fingerprint[:16]}&onehot=" + "%5B" * 5000 + "%5D" * 5000)
    page.get_by_text("'onehot' must list some of the table's feature columns", exact=False).wait_for(timeout=180_000)
    assert page.get_by_text("Something went wrong", exact=False).count() == 0
