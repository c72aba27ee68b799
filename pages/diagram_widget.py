"""The clickable tree diagram: a Streamlit components-v2 component over Graphviz's SVG.

Declared once per process (this module is imported, not run as a page). The browser side lives in
``get_core/views/diagram_component/`` and sets the trigger value ``clicked`` to the heap id of the node clicked (or
chosen with Enter or Space); it pans and zooms the picture itself.
"""

from __future__ import annotations

from typing import Callable

import streamlit as st

from get_core.views import diagram

_ASSETS = diagram.component_assets()
_COMPONENT = st.components.v2.component("get_explorer.tree_diagram", js=_ASSETS["js"], css=_ASSETS["css"])


def tree_diagram(svg: str, selected: int | None, *, key: str, on_click: Callable[[int], None],
                 box_width: int | None = None, on_box_width: Callable[[int], None] | None = None) -> None:
    """Show ``svg`` with ``selected`` highlighted; a click on a node calls ``on_click(node)`` before the rerun. With
    ``box_width`` (the box's width in px the picture was made for) the browser reports its box's real width when it
    differs, through ``on_box_width(px)`` before the rerun (a 1,000 px window's box is about 540 px)."""

    def clicked() -> None:
        node = _state(key, "clicked")
        if isinstance(node, int) and not isinstance(node, bool):
            on_click(node)

    def measured() -> None:
        width = _state(key, "box_width")
        if on_box_width is not None and isinstance(width, (int, float)) and not isinstance(width, bool) and width > 0:
            on_box_width(int(width))

    _COMPONENT(key=key, data={"svg": svg, "selected": selected, "box_width": box_width}, on_clicked_change=clicked,
               on_box_width_change=measured)


def _state(key: str, name: str):
    state = st.session_state.get(key) or {}
    return state.get(name) if hasattr(state, "get") else None
