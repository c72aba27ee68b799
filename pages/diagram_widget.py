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


def tree_diagram(svg: str, selected: int | None, *, key: str, on_click: Callable[[int], None]) -> None:
    """Show ``svg`` with ``selected`` highlighted; a click on a node calls ``on_click(node)`` before the rerun."""

    def clicked() -> None:
        state = st.session_state.get(key) or {}
        node = state.get("clicked") if hasattr(state, "get") else None
        if isinstance(node, int) and not isinstance(node, bool):
            on_click(node)

    _COMPONENT(key=key, data={"svg": svg, "selected": selected}, on_clicked_change=clicked)
