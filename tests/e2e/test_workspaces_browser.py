"""In a real browser: a classroom server (shared password), two users in two browser contexts, and a review link.

Bob signs in to his workspace and probes Alice's run through every page and URL parameter: he never sees, scores,
downloads, cancels or deletes it (each page shows his own run instead). Alice makes a review link on the Runs page;
a third context opens it without signing in and sees her run's Tree, Compare and Predict pages only; once she
revokes it, the link says it does not work.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from get_core.runs.access import PASSWORD_ENV
from get_core.runs.store import RunStore
from tests.e2e.streamlit_app import BUSY_MS, CHROMIUM, CHROMIUM_ARGS, require_chromium, serve_app
from tests.explorer_runs import finished_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PASSWORD = "class password 7"
SECRET = "alice secret"  # Alice's run name; "salary" is one of its features


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    require_chromium()
    db = tmp_path_factory.mktemp("e2e-workspaces") / "runs.sqlite"
    store = RunStore(db)
    alice = finished_run(store, name=SECRET, owner="workspace:alice", names=["salary", "age"])
    bob = finished_run(store, name="bob own", owner="workspace:bob")
    store.close()
    with serve_app(db, {PASSWORD_ENV: PASSWORD}) as url:
        yield url, db, alice, bob


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def _context_page(browser):
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.set_default_timeout(BUSY_MS)
    return page


def _signed_in(page, url: str, workspace: str) -> None:
    """Open ``url`` (a new session: the classroom server asks again) and sign in to ``workspace``."""
    page.goto(url)
    page.get_by_label("Workspace name").fill(workspace)
    page.get_by_label("Class password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text(f"Signed in: {workspace}").wait_for()


def _main_text(page) -> str:
    """The page's words and its pickers' chosen values (a picker shows its value in an input)."""
    values = [box.input_value() for box in page.locator('[data-testid="stSelectbox"] input').all()]
    return page.locator('[data-testid="stMain"]').inner_text() + "\n" + "\n".join(values)


def _expect_run(page, run_id: int, name: str) -> None:
    """The page's run picker (its first) has the run chosen."""
    picker = page.locator('[data-testid="stSelectbox"] input').first
    expect(picker).to_have_value(f"#{run_id} {name} (finished)", timeout=BUSY_MS)


def test_two_users_never_reach_each_others_runs_and_a_review_link_works_until_revoked(app, browser):
    url, db, alice, bob = app
    bob_page = _context_page(browser)

    # Bob, through every page and hostile URL parameters naming Alice's run: his own run is shown instead.
    for path, shown in ((f"/tree?run={alice}&node=3", "Node "), (f"/tree?run={alice}%20OR%201=1", "Node "),
                        (f"/compare?run={alice}", "Parameters as the paper counts"),
                        (f"/predict?run={alice}", "Upload rows"), (f"/runs?run={alice}", "Parameters and artifacts")):
        _signed_in(bob_page, url + path, "bob")
        bob_page.get_by_text(shown).first.wait_for()
        _expect_run(bob_page, bob, "bob own")
        text = _main_text(bob_page)
        assert SECRET not in text and "salary" not in text, (path, text[:1500])
    # On his Runs page the run pickers (open, compare, rename / delete, cancel) hold his run only.
    bob_page.get_by_role("tab", name="Rename / delete").click()
    bob_page.locator('[data-testid="stSelectbox"]', has_text="Run to rename or delete").locator("input").click()
    options = bob_page.get_by_role("option").all_inner_texts()
    assert options == [f"#{bob} bob own (finished)"], options
    bob_page.keyboard.press("Escape")

    # Alice makes a review link on her Runs page.
    alice_page = _context_page(browser)
    _signed_in(alice_page, f"{url}/runs?run={alice}", "alice")
    alice_page.get_by_text("Share read-only (review link)").click()
    alice_page.get_by_role("button", name="Make a link").click()
    link = alice_page.locator("code", has_text="/?review=").first
    link.wait_for()
    review_url = link.inner_text().strip()
    assert review_url.startswith(url + "/?review=")

    # A reviewer, not signed in: the one run, read-only, on Tree, Compare and Predict only.
    reviewer = _context_page(browser)
    reviewer.goto(review_url)
    _expect_run(reviewer, alice, SECRET)
    reviewer.get_by_text("Node 1 (branch, level 0)").wait_for()
    links = reviewer.locator('[data-testid="stSidebarNav"] [data-testid="stSidebarNavLink"]')
    titles = [t.strip().splitlines()[-1].strip() for t in links.all_inner_texts()]
    assert titles == ["Tree", "Compare", "Predict"], titles
    assert "bob own" not in _main_text(reviewer)
    reviewer.get_by_role("link", name="Compare").click()
    reviewer.get_by_text("Compare", exact=True).first.wait_for()
    _expect_run(reviewer, alice, SECRET)
    reviewer.goto(f"{url}/runs")  # a page a review does not have, in a new session: the classroom's sign-in
    reviewer.get_by_label("Workspace name").wait_for()

    # Alice revokes it: the link no longer opens anything.
    alice_page.get_by_role("button", name="Revoke").click()
    alice_page.get_by_role("button", name="Revoke").wait_for(state="detached")  # no working link left
    reviewer.goto(review_url)
    reviewer.get_by_text("This review link does not work").wait_for()
    assert SECRET not in _main_text(reviewer)
    assert RunStore(db).get_run(alice).name == SECRET  # nothing of hers changed
