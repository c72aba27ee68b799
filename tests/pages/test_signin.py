"""Sign-in, workspaces and review links through the pages (AppTest): a session reaches its own runs only, whatever
its URL says; a review link opens one run read-only and stops when revoked; a shared server without sign-in shows
only what to set."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from get_core.runs.access import PASSWORD_ENV, Scope
from get_core.runs.store import RunStore
from pages.signin import SCOPE
from tests.explorer_runs import finished_run

ROOT = Path(__file__).resolve().parents[2]
ALICE, BOB = Scope(owner="workspace:alice"), Scope(owner="workspace:bob")
HOSTILE = ["{alice}", "-1", "0", "999999", "1 OR 1=1", "{alice}'--", "%00", "1e3", " {alice} "]


@pytest.fixture
def store(tmp_path, monkeypatch):
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("GET_EXPLORER_DB", str(path))
    (tmp_path / "calibration.measuring").write_text("held by the test")
    store = RunStore(path)
    yield store
    store.close()


@pytest.fixture
def runs(store):
    """Alice's secret run and Bob's own run."""
    return (finished_run(store, name="alice secret", owner=ALICE.owner, names=["salary", "age"]),
            finished_run(store, name="bob own", owner=BOB.owner))


def _page(name: str, scope: Scope | None, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / ("app.py" if name == "app" else f"pages/{name}.py")), default_timeout=60)
    if scope is not None:
        at.session_state[SCOPE] = scope
    for key, value in params.items():
        at.query_params[key] = str(value)
    return at.run()


def _shown(at: AppTest) -> str:
    """Every text the page shows, options of its pickers included."""
    parts = [str(getattr(e, "value", "")) for kind in ("markdown", "caption", "info", "warning", "error", "title",
                                                         "subheader", "code", "text") for e in getattr(at, kind)]
    parts += [str(option) for box in at.selectbox for option in box.options]
    parts += [str(option) for box in at.multiselect for option in box.options]
    parts += [e.value.to_csv() for e in at.dataframe]
    return "\n".join(parts)


@pytest.mark.parametrize("page", ["tree", "compare", "predict", "runs", "teaching"])
def test_no_page_shows_another_workspaces_run_whatever_the_run_parameter(runs, page):
    alice, bob = runs
    for value in HOSTILE:
        at = _page(page, BOB, run=value.format(alice=alice))
        assert not at.exception, (value, at.exception)
        shown = _shown(at)
        assert "alice secret" not in shown and "salary" not in shown, (value, shown[:2000])
        assert "bob own" in shown, (value, shown[:2000])


def test_a_session_cannot_cancel_rename_or_delete_another_workspaces_run(runs, store):
    alice, bob = runs
    at = _page("runs", BOB, run=alice)
    box = at.selectbox(key=next(b.key for b in at.selectbox if b.key and b.key.startswith("manage_run")))
    assert box.options == [f"#{bob} bob own (finished)"]  # the only run Bob can pick to rename or delete
    assert store.get_run(alice).name == "alice secret"


def test_the_data_parameter_never_restores_another_workspaces_table(runs, store):
    alice, _ = runs
    fingerprint = store.get_run(alice).dataset_fingerprint
    for page in ("train", "runs", "tree"):  # the pages that restore the URL's table
        at = _page(page, BOB, data=fingerprint[:16])
        assert not at.exception
        assert "salary" not in _shown(at)
        assert any("cannot be restored" in w.value for w in at.warning), page
    at = _page("train", ALICE, data=fingerprint[:16])  # the owner gets it back
    assert not any("cannot be restored" in w.value for w in at.warning)


def _sign_in_and_out() -> None:
    """The sign-in form, then the sidebar's sign-out (as app.py calls them)."""
    import streamlit as st

    from pages import signin

    scope = st.session_state.get(signin.SCOPE)
    if scope is None:
        signin.sign_in()
    signin.sidebar(scope)


def test_a_classroom_server_asks_for_a_workspace_and_the_password(store, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, "class password 7")
    at = _page("app", None, run=1)
    assert [t.label for t in at.text_input] == ["Workspace name", "Class password"]
    assert not at.dataframe and not at.selectbox  # nothing but the form
    # The form's behaviour: AppTest keeps app.py in Streamlit's legacy pages-folder mode (the real server leaves it
    # at the first st.navigation, tests/e2e/test_workspaces_browser.py), where a form's click is lost: test it alone.
    at = AppTest.from_function(_sign_in_and_out, default_timeout=60).run()
    at.text_input[0].input("alice")
    at.text_input[1].input("wrong password")
    at.button[0].click().run()
    assert [e.value for e in at.error] == ["That is not the class password: ask your teacher for it."]
    at.text_input[0].input("alice/")
    at.text_input[1].input("class password 7")
    at.button[0].click().run()
    assert "1 to 40 letters" in at.error[0].value and SCOPE not in at.session_state
    at.text_input[0].input("Alice")
    at.button[0].click().run()
    assert not at.exception and not at.error
    assert at.session_state[SCOPE] == ALICE
    assert [c.value for c in at.sidebar.caption] == ["Signed in: alice"]
    at.sidebar.button(key="sign_out").click().run()
    assert SCOPE not in at.session_state and [t.label for t in at.text_input] == ["Workspace name", "Class password"]


def test_a_page_opened_without_signing_in_on_a_classroom_server_says_sign_in(runs, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, "class password 7")
    at = _page("tree", None, run=runs[0])
    assert [e.value for e in at.error] == ["Sign in first: open the app's home page and sign in."]
    assert "alice secret" not in _shown(at)


def test_a_non_local_address_without_sign_in_shows_only_what_to_set(store, monkeypatch):
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    before = st_config.get_option("server.address")
    st_config.set_option("server.address", "0.0.0.0")
    try:
        at = _page("app", None)
    finally:
        st_config.set_option("server.address", before)
    assert len(at.error) == 1 and at.error[0].value.startswith("Refusing to serve on 0.0.0.0 without sign-in")
    assert not at.text_input and not at.button


def test_a_review_link_opens_its_run_read_only_and_stops_when_revoked(runs, store, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, "class password 7")  # a shared server: the link needs no sign-in
    alice, bob = runs
    owner = store.scoped(ALICE)
    token = owner.create_review_link(alice)
    at = _page("app", None, review=token)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state[SCOPE] == Scope(review_token=token)
    assert at.title[0].value == "Tree" and "alice secret" in _shown(at)
    for page in ("tree", "compare", "predict"):
        at = _page(page, Scope(review_token=token), run=bob)  # another run's id: still only the shared one
        assert not at.exception, at.exception
        assert "bob own" not in _shown(at) and "alice secret" in _shown(at)
    at = _page("runs", Scope(review_token=token), run=alice)  # not in a review's navigation; and read-only anyway
    assert "bob own" not in _shown(at)
    owner.revoke_review_link(alice, owner.list_review_links(alice)[0].link_id)
    at = _page("app", None, review=token)
    assert [e.value for e in at.error] == [
        "This review link does not work: it was revoked, it has expired, or it is mistyped. Ask the run's owner "
        "for a new one."]
    assert "alice secret" not in _shown(at)
    at = _page("tree", Scope(review_token=token))  # a session opened before the revocation
    assert "alice secret" not in _shown(at) and at.error


def test_the_owner_makes_and_revokes_a_review_link_on_the_runs_page(runs, store):
    alice, _ = runs
    at = _page("runs", ALICE, run=alice)
    make = next(b for b in at.button if b.key == f"review-make-{alice}")
    at = make.click().run()
    [link] = store.scoped(ALICE).list_review_links(alice)
    shown = [c.value for c in at.code if "/?review=" in c.value]
    assert len(shown) == 1
    token = shown[0].split("review=", 1)[1]
    assert store.review_run_id(token) == alice and link.works(time.time())
    at = next(b for b in at.button if b.key == f"review-revoke-{alice}").click().run()
    assert not at.exception
    assert store.scoped(ALICE).list_review_links(alice)[0].revoked_at is not None
