"""Who this session is: sign-in on a shared server, the session's workspace, a review link's read-only run.

UI only (imported by ``app.py`` and ``common``; not a page, calls nothing at import): the rules, and the sentences
that refuse, are ``get_core.runs.access``'s. The session's ``Scope`` is kept in its state once signed in, and every
page reaches the run store through it (``common.get_store``).
"""

from __future__ import annotations

import os
from typing import NoReturn

import streamlit as st

from get_core import serve
from get_core.errors import GETExplorerError
from get_core.runs import access
from get_core.runs.access import LOCAL_OWNER, AccessDenied, Scope
from get_core.runs.store import RunStore

SCOPE = "_scope"  # session key: this session's Scope once signed in (or opened by a review link)
REVIEW = "review"  # query parameter: a review link's token


def mode() -> str:
    """This server's sign-in: "local", "password", "oidc" or "refused" (``access.sign_in_mode``)."""
    oidc = access.oidc_problem(serve.secrets_auth(), True) is None  # Authlib is checked by serve before start
    return access.sign_in_mode(st.get_option("server.address"), os.environ.get(access.PASSWORD_ENV), oidc)


def current_scope() -> Scope:
    """The session's scope; AccessDenied (a sentence) when a shared server's session has not signed in."""
    scope = st.session_state.get(SCOPE)
    if scope is not None:
        return scope
    if mode() == "local":
        return Scope(owner=LOCAL_OWNER)
    raise AccessDenied("Sign in first: open the app's home page and sign in.")


def gate(store: RunStore) -> Scope | None:
    """The session's scope, or None while a shared server's session has not signed in (``sign_in`` draws the
    form). A review link in the URL (checked with ``store``) opens its run; a bad link, or a non-local address
    without sign-in configured, stops the run with the sentence that says so."""
    token = st.query_params.get(REVIEW)
    if token:
        try:
            run_id = store.review_run_id(token)
        except GETExplorerError as exc:  # a revoked, expired or unknown link; a store that cannot be opened
            _refuse(str(exc))
        st.session_state[SCOPE] = Scope(review_token=token)
        st.session_state["run_id"] = run_id
    if SCOPE in st.session_state:
        return st.session_state[SCOPE]
    found = mode()
    if found == "refused":
        _refuse(serve.check(st.get_option("server.address")) or "Sign-in is not configured on this server.")
    if found == "local":
        return Scope(owner=LOCAL_OWNER)
    if found == "oidc" and st.user.is_logged_in:
        try:
            st.session_state[SCOPE] = Scope(owner=access.user_owner(st.user.to_dict()))
        except AccessDenied as exc:
            _refuse(str(exc))
        return st.session_state[SCOPE]
    return None


def sign_in() -> NoReturn:
    """Draw the sign-in (OpenID Connect's button, or the classroom's form) and stop the run. Called after the
    router is set up (hidden), so the page and parameters of the address asked for open once signed in."""
    st.title("GET Explorer")
    if mode() == "oidc":
        st.write("This server is shared: sign in to see your own runs.")
        st.button("Sign in", on_click=st.login, type="primary")
        st.stop()
    _password_form()


def _password_form() -> NoReturn:
    """The classroom sign-in: a workspace name of the user's choosing and the class's shared password."""
    st.write("This server is shared by a class. Your runs and tables live in a workspace of your own: type its "
             "name (the same name brings them back next time) and the class password.")
    with st.form("sign_in"):
        workspace = st.text_input("Workspace name", max_chars=40)
        password = st.text_input("Class password", type="password")
        if st.form_submit_button("Sign in", type="primary"):
            try:
                owner = access.workspace_owner(workspace)
                if not access.password_matches(password, os.environ.get(access.PASSWORD_ENV, "")):
                    raise AccessDenied("That is not the class password: ask your teacher for it.")
            except AccessDenied as exc:
                st.error(str(exc))
            else:
                st.session_state[SCOPE] = Scope(owner=owner)
                st.rerun()
    st.stop()


def _refuse(sentence: str) -> NoReturn:
    st.title("GET Explorer")
    st.error(sentence)
    st.stop()


def sidebar(scope: Scope) -> None:
    """Who the session is, and the way out."""
    with st.sidebar:
        if scope.read_only:
            st.caption("Review link: one run, read-only.")
            return
        if scope.owner == LOCAL_OWNER:
            return
        st.caption("Signed in: " + scope.owner.split(":", 1)[1].replace("_", r"\_"))
        if st.button("Sign out", key="sign_out"):
            del st.session_state[SCOPE]
            if mode() == "oidc":
                st.logout()  # drops the provider's cookie too
            st.rerun()
