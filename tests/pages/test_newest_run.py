"""The Train page shows the newest run, and a page left right after Start opens that run, not the one looked at
before (issue 35: the Train page showed the last *selected* run; leaving it 1 s after Start showed the previous one)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from get_core.runs.store import RunStatus, RunStore
from pages import common
from tests.pages.test_app import assert_no_traceback, small_csv, upload
from tests.pages.test_session_url import db  # noqa: F401  (the fixture: a store's path, no measurement)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(db) -> RunStore:
    """A store with two finished runs, #1 and #2 (the newest)."""
    runs = RunStore(db)
    for name in ("older", "newer"):
        params = {"config": {"depth": 2, "leaf": "constant", "n_starts": 2, "n_epochs": 20, "n_alphas": 2},
                  "seed": 0, "data": {"target": "y", "features": ["x"]}}
        run_id = runs.create_run(params, b"x,y\n", "toy.csv", n_rows=1, n_features=1, name=name)
        runs.start_run(run_id)
        runs.set_status(run_id, RunStatus.FINISHED, test_r2=0.5, test_rmse=1.0)
    return runs


def _session_on(page: str, **state) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for key, value in state.items():
        at.session_state[key] = value
    at.switch_page(page).run()
    assert_no_traceback(at)
    return at


def test_the_train_page_shows_the_newest_run_not_the_last_opened(store):
    at = _session_on("pages/train.py", run_id=1)  # run 1 was opened on Runs; run 2 is newer
    headings = [h.value for h in at.subheader]
    assert any("Run #2: newer" in h for h in headings), headings
    assert not any("Run #1" in h for h in headings), headings


def test_a_page_left_before_start_selected_its_run_opens_the_new_run(store):
    at = _session_on("pages/runs.py", run_id=1, **{common.STARTING: True})  # Start stored run 2, then the user left
    assert any("Run #2: newer" in h.value for h in at.subheader), [h.value for h in at.subheader]
    assert at.query_params["run"] in ("2", ["2"])


def test_the_train_page_shows_no_run_of_another_table(store):
    """Issue 48: with another table chosen on the Data page, Train showed the newest run, of toy.csv."""
    for name, shown in (("other.csv", False), ("toy.csv", True)):
        at = upload(AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run(), name, small_csv())
        at.switch_page("pages/train.py").run()
        assert_no_traceback(at)
        assert any("Run #2: newer" in h.value for h in at.subheader) is shown, [h.value for h in at.subheader]
