"""In a real browser (1400 x 900), issue 22's items 4, 5 and 11 and issue 35's defect 8: a reload on Train keeps the
dataset and choices; the diagram opens in a box as wide as the page, fitted to its width with readable text (deeper
levels collapsed, not shrunk), above the node panel; it pans and zooms with node clicks kept (a drag selects nothing);
a node is reached with Tab and chosen with Enter."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from get_core.views import diagram, diagram_content
from tests.e2e.streamlit_app import browser_page
from tests.e2e.test_tree_click import app  # noqa: F401  (the fixture: the app on a store with a depth-4 run)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def page(app):
    with browser_page(1400, 900) as page:
        yield page


def _open_tree(page, url: str, run_id: int) -> None:
    page.goto(url + "/")  # the app's entry page first: st.navigation takes over from the pages/ folder
    page.get_by_text("Data", exact=True).first.wait_for(timeout=120_000)
    page.goto(f"{url}/tree?run={run_id}")
    page.locator("#get-node-1").wait_for(timeout=180_000)
    page.get_by_text("Node 1 (branch, level 0)").wait_for(timeout=120_000)


def _nodes_in_view(page) -> dict[int, bool]:
    """Each drawn node: is its whole box inside the diagram's viewport?"""
    return page.locator(".get-tree-view").evaluate("""(view) => {
        const frame = view.getBoundingClientRect(), out = {};
        for (const g of view.querySelectorAll('g.get-node')) {
            const b = g.getBoundingClientRect();
            out[g.id.slice(9)] = b.left >= frame.left - 1 && b.right <= frame.right + 1 && b.top >= frame.top - 1
                && b.bottom <= frame.bottom + 1;
        }
        return out; }""")


def _wait_for_url(page, part: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while part not in page.url and time.monotonic() < deadline:
        page.wait_for_timeout(200)  # lets Playwright see the address change
    assert part in page.url, page.url


def test_a_reload_on_train_keeps_the_dataset_and_choices(app, page, tmp_path):
    url, _, _ = app
    rng = np.random.default_rng(1)
    path = tmp_path / "weather.csv"
    pd.DataFrame({"a": rng.random(60), "b": rng.random(60), "c": rng.random(60), "y": rng.random(60)}).to_csv(
        path, index=False)
    page.goto(url + "/")
    page.locator("input[type=file]").first.set_input_files(str(path))
    page.get_by_text("Ready: 60 rows, 3 model inputs", exact=False).wait_for(timeout=180_000)
    page.get_by_text("Continue to Train").click()
    _wait_for_url(page, "data=")  # the Train page has put the stored table into its address
    page.get_by_text("robust to outliers").click()
    _wait_for_url(page, "train=scaling%3Arobust")

    page.reload()
    page.get_by_text("weather.csv: 60 rows, 3 model inputs, target 'y'", exact=False).wait_for(timeout=180_000)
    assert page.get_by_text("on the Data page first", exact=False).count() == 0
    assert page.get_by_role("radio", name="robust to outliers").is_checked()


def test_the_diagram_opens_page_wide_fitted_and_readable_and_zoom_and_pan_keep_node_clicks(app, page):
    url, run_id, tree = app
    _open_tree(page, url, run_id)
    view = page.locator(".get-tree-view")
    frame = view.bounding_box()
    assert frame["width"] > 900  # as wide as the page (a column beside the node panel was ~540 px)
    scale = float(page.locator(".get-tree-host").get_attribute("data-scale"))
    assert scale >= diagram.READABLE  # readable, not shrunk to 4 px text
    inside = page.locator(".get-tree-view").evaluate("""(view) => {
        const frame = view.getBoundingClientRect();
        return [...view.querySelectorAll('g.get-node')].every((g) => { const b = g.getBoundingClientRect();
            return b.left >= frame.left - 1 && b.right <= frame.right + 1; }); }""")
    assert inside  # fitted to the width: no node cut off left or right (the left half was missing)
    assert "nodes below" in view.inner_text() or page.locator("g.get-leaf").count() == tree.n_leaves
    panel = page.get_by_text("Node 1 (branch, level 0)").bounding_box()
    assert panel["y"] > frame["y"] + frame["height"]  # the node panel below it

    page.get_by_role("button", name="Fit the whole tree in view").click()
    assert all(_nodes_in_view(page).values())  # not clipped: the whole tree in its box

    fitted = float(page.locator(".get-tree-host").get_attribute("data-scale"))
    page.get_by_role("button", name="Zoom the tree in").click()
    page.get_by_role("button", name="Zoom the tree in").click()
    zoomed = float(page.locator(".get-tree-host").get_attribute("data-scale"))
    assert zoomed == pytest.approx(fitted * 1.25 ** 2, rel=0.01)
    start = page.locator("#get-node-2").bounding_box()  # a drag that starts on node 2 pans and selects nothing
    page.mouse.move(start["x"] + start["width"] / 2, start["y"] + start["height"] / 2)
    page.mouse.down()
    page.mouse.move(start["x"] + 40, start["y"] + 60, steps=5)
    page.mouse.up()
    page.wait_for_timeout(1000)
    assert "node=2" not in page.url and page.get_by_text("Node 1 (branch, level 0)").count() == 1

    shown = [int(n) for n, inside in _nodes_in_view(page).items() if inside and int(n) != 1]
    assert shown, "the zoomed, panned picture shows no node"
    chosen = shown[0]
    page.locator(f"#get-node-{chosen}").click()
    page.get_by_text(f"Node {chosen} (", exact=False).first.wait_for(timeout=120_000)
    assert f"node={chosen}" in page.url and page.locator(f"#get-node-{chosen}.get-selected").count() == 1
    assert float(page.locator(".get-tree-host").get_attribute("data-scale")) == zoomed  # the rerun kept the zoom
    box = view.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -100)  # one notch up: zoom in
    page.wait_for_timeout(300)
    assert float(page.locator(".get-tree-host").get_attribute("data-scale")) == pytest.approx(zoomed * 1.25, rel=0.01)



def test_tab_reaches_a_named_node_enter_selects_it_and_arrows_walk_the_tree(app, page):
    url, run_id, tree = app
    _open_tree(page, url, run_id)
    page.get_by_role("button", name="Show the tree at its natural size").focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    focused = page.locator(".get-tree-view").evaluate("""(view) => {
        const g = view.getRootNode().activeElement;
        return {id: g.id, label: g.getAttribute('aria-label'), role: g.getAttribute('role'),
                outline: getComputedStyle(g).outlineStyle}; }""")
    assert focused == {"id": "get-node-2", "label": diagram_content.node_name(tree, 2), "role": "button",
                       "outline": "solid"}
    assert focused["label"].startswith("split 2: left if ")
    page.keyboard.press("Enter")
    page.get_by_text("Node 2 (branch, level 1)").wait_for(timeout=120_000)
    assert "node=2" in page.url
    for key in ("ArrowDown", "ArrowRight", "ArrowUp", "ArrowRight"):  # arrows walk the tree: 2 -> 4 -> 5 -> 2 -> 3
        page.keyboard.press(key)
    page.keyboard.press(" ")
    page.get_by_text("Node 3 (branch, level 1)").wait_for(timeout=120_000)
    assert "node=3" in page.url
