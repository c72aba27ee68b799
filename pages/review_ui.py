"""Review links on the Runs page: share one run read-only, see its links, revoke them.

UI only (imported by the Runs page; not a page itself). The links' rules are ``get_core.runs.access``'s and the
store's: an unguessable token shown once, stored as its digest, working until revoked or expired.
"""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from get_core.runs.store import Run
from pages import common

#: How long a new link works.
LIFETIMES = {"until revoked": None, "1 day": 86_400.0, "7 days": 7 * 86_400.0, "30 days": 30 * 86_400.0}
NEW_LINK = "_new_review_link"  # session key: (run id, token) of the link just made, shown once


def share_panel(run: Run) -> None:
    """Make a read-only link to ``run`` (its Tree, Compare and Predict pages), list its links, revoke one."""
    store = common.get_store()
    with st.expander("Share read-only (review link)"):
        if not (run.status.is_finished() and "model" in store.list_artifacts(run.run_id)):
            st.caption("A run can be shared once it has a trained tree.")
            return
        st.caption("Whoever opens the link sees this run's Tree, Compare and Predict pages, and nothing else: no "
                   "training, no other runs, no deleting. Revoke it here when the review is over.")
        left, right = st.columns([3, 1], vertical_alignment="bottom")
        lifetime = left.selectbox("The link works", list(LIFETIMES), key=f"review-lifetime-{run.run_id}")
        if right.button("Make a link", key=f"review-make-{run.run_id}"):
            st.session_state[NEW_LINK] = (run.run_id, store.create_review_link(run.run_id, LIFETIMES[lifetime]))
        made = st.session_state.get(NEW_LINK)
        if made and made[0] == run.run_id:
            st.code(_url(made[1]), language=None)
            st.caption("Copy the link now: it is shown only this once (the server keeps only a digest of it).")
        _links(run)


def _links(run: Run) -> None:
    store = common.get_store()
    links = store.list_review_links(run.run_id)
    if not links:
        return
    now = time.time()
    st.dataframe(pd.DataFrame([{
        "link": link.link_id,
        "made": _stamp(link.created_at),
        "works until": "revoked" if link.expires_at is None else _stamp(link.expires_at),
        "state": "works" if link.works(now) else ("revoked" if link.revoked_at is not None else "expired")}
        for link in links]), hide_index=True)
    working = [link.link_id for link in links if link.works(now)]
    if working:
        left, right = st.columns([3, 1], vertical_alignment="bottom")
        chosen = left.selectbox("Link to revoke", working, key=f"review-pick-{run.run_id}")
        if right.button("Revoke", key=f"review-revoke-{run.run_id}"):
            store.revoke_review_link(run.run_id, chosen)
            st.session_state.pop(NEW_LINK, None)
            st.rerun()


def _url(token: str) -> str:
    """The link as this browser reached the server: the app's root (a review's first page, the Tree, is its default
    page, whose address is the root) with the token."""
    here = (st.context.url or "").removesuffix("/").removesuffix("/runs")
    return f"{here}/?review={token}"


def _stamp(seconds: float) -> str:
    return pd.Timestamp(seconds, unit="s", tz="UTC").strftime("%Y-%m-%d %H:%M UTC")
