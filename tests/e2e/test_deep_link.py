"""In a real browser: a bookmarked deep link is the FIRST request a freshly started server sees.

Because ``pages/`` sits beside ``app.py``, Streamlit starts every server process in its legacy "pages directory" mode
until a script run calls ``st.navigation``. A deep link as the first request used to run ``pages/tree.py`` without
the router: every module of ``pages/`` (common, results ui, diagram widget, ...) listed as a page, no wide layout,
and the process stayed like that until restarted. ``pages/common.py`` (``use_the_router``) now hands such a run over
to ``app.py``; this test checks the result on a server whose first request is the deep link.

The server, store and browser fixtures are those of ``test_tree_click`` (module-scoped: this module gets its own
server, and it holds a single test so that nothing reaches the server before the deep link).
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.test_tree_click import _expect_node_panel, app, page  # noqa: F401  (app, page: fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROUTER_PAGES = ["Data", "Train", "Runs", "Tree", "Compare", "Predict", "Teaching"]  # app.py's st.navigation, in order
HELPER_MODULES = ["common", "results ui", "diagram widget", "app"]  # what the legacy mode would list


def _nav_titles(page) -> list[str]:  # noqa: F811
    links = page.locator('[data-testid="stSidebarNav"] [data-testid="stSidebarNavLink"]')
    links.first.wait_for(timeout=120_000)
    return [text.strip().splitlines()[-1].strip() for text in links.all_inner_texts()]  # after the icon's name


def _assert_router(page) -> None:  # noqa: F811
    titles = _nav_titles(page)
    assert titles == ROUTER_PAGES, titles
    assert not any(title.lower() in HELPER_MODULES for title in titles), titles
    # app.py's st.set_page_config(layout="wide") ran: the main column uses the 1400 px window, not 736 px.
    width = page.locator('[data-testid="stMainBlockContainer"]').bounding_box()["width"]
    assert width > 1000, width


def test_a_deep_link_as_the_first_request_opens_its_page_in_the_router(app, page):  # noqa: F811
    url, run_id, tree = app
    page.goto(f"{url}/tree?run={run_id}&node=5")  # the very first request this server sees
    page.locator("#get-node-5.get-selected").wait_for(timeout=180_000)  # ?node=5 honoured
    _expect_node_panel(page, tree, 5)
    assert re.search(rf"/tree\?(.*&)?run={run_id}(&|$)", page.url), page.url
    assert "node=5" in page.url
    _assert_router(page)

    # The process left the legacy mode for good: a second deep link in a new session is routed too, with its
    # own query parameters ...
    page.goto(f"{url}/tree?run={run_id}&node=3")
    page.locator("#get-node-3.get-selected").wait_for(timeout=180_000)
    _expect_node_panel(page, tree, 3)
    _assert_router(page)

    # ... and a helper module is not a page: its path falls back to the router's default page.
    page.goto(f"{url}/common")
    page.get_by_role("heading", name="Data").first.wait_for(timeout=120_000)
    _assert_router(page)
