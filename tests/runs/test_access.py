"""The rules of who may see a run: sign-in modes, workspace names, passwords, review tokens, the fair order."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core.runs import access
from get_core.runs.access import AccessDenied, Scope


@pytest.mark.parametrize("host, local", [("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True),
                                         ("::1", True), ("[::1]", True), ("0.0.0.0", False), ("::", False),
                                         ("", False), (None, False), ("192.168.1.5", False), ("example.org", False)])
def test_only_loopback_addresses_are_local(host, local):
    assert access.is_local_address(host) is local


@pytest.mark.parametrize("host, password, oidc, mode", [
    ("127.0.0.1", None, False, "local"), ("0.0.0.0", None, False, "refused"), ("0.0.0.0", "classroom1", False,
                                                                                "password"),
    ("0.0.0.0", None, True, "oidc"), ("0.0.0.0", "classroom1", True, "password"), ("127.0.0.1", "classroom1", False,
                                                                                   "password")])
def test_the_sign_in_mode(host, password, oidc, mode):
    assert access.sign_in_mode(host, password, oidc) == mode


def test_a_non_local_address_without_sign_in_is_refused_with_what_to_set():
    problem = access.serving_problem("0.0.0.0", None, "")
    assert problem.startswith("Refusing to serve on 0.0.0.0 without sign-in")
    assert access.PASSWORD_ENV in problem and "secrets.toml" in problem and "127.0.0.1" in problem
    assert "every network interface" in access.serving_problem(None, None, "")
    assert access.serving_problem("127.0.0.1", None, "") is None
    assert access.serving_problem("0.0.0.0", "a long password", "") is None
    assert access.serving_problem("0.0.0.0", None, None) is None  # OpenID Connect configured
    assert "shorter than 8" in access.serving_problem("127.0.0.1", "short", "")
    half = access.oidc_problem({"redirect_uri": "http://x/oauth2callback"}, True)
    assert "cookie_secret" in half and half in access.serving_problem("0.0.0.0", None, half)


def test_openid_connect_needs_its_settings_and_authlib():
    full = {"redirect_uri": "https://x/oauth2callback", "cookie_secret": "s" * 32, "client_id": "c",
            "client_secret": "d", "server_metadata_url": "https://idp/.well-known/openid-configuration"}
    assert access.oidc_problem(full, True) is None
    assert access.oidc_problem(None, True) == "" and access.oidc_problem({}, True) == ""
    named = {"redirect_uri": full["redirect_uri"], "cookie_secret": "s" * 32,
             "google": {"client_id": "c", "client_secret": "d", "server_metadata_url": "https://g"}}
    assert access.oidc_problem(named, True) is None  # a provider's own table
    assert "Authlib" in access.oidc_problem(full, False)
    assert "client_id" in access.oidc_problem({**full, "client_id": ""}, True)


@pytest.mark.parametrize("name", ["", " ", "-x", "a" * 41, "ali/ce", "ali:ce", "x\u202e"])
def test_a_workspace_name_outside_the_rule_is_refused_with_the_rule(name):
    with pytest.raises(AccessDenied, match="1 to 40 letters"):
        access.workspace_owner(name)


def test_workspace_and_user_owners():
    assert access.workspace_owner("  Alice ") == access.workspace_owner("alice") == "workspace:alice"
    assert access.user_owner({"email": "A@X.org", "sub": "123"}) == "user:a@x.org"
    assert access.user_owner({"sub": "123"}) == "user:123"
    with pytest.raises(AccessDenied):
        access.user_owner({"name": "no id"})


def test_the_password_check_and_tokens():
    assert access.password_matches("classroom1", "classroom1") and not access.password_matches("classroom", "x")
    tokens = {access.new_token() for _ in range(100)}
    assert len(tokens) == 100 and all(len(t) == 32 for t in tokens)
    assert access.token_digest("t") != "t" and len(access.token_digest("t")) == 64


def test_a_scope_is_an_owners_or_a_review_links():
    assert not Scope(owner="local").read_only and Scope(review_token="t").read_only
    for bad in ({}, {"owner": "local", "review_token": "t"}):
        with pytest.raises(ValueError):
            Scope(**bad)


def test_user_limits_come_from_the_environment():
    assert access.user_limit(access.USER_MAX_RUNNING_ENV, {}) is None
    assert access.user_limit(access.USER_MAX_RUNNING_ENV, {access.USER_MAX_RUNNING_ENV: "2"}) == 2
    assert access.user_limit(access.USER_MAX_QUEUED_ENV, {access.USER_MAX_QUEUED_ENV: "0"}) == 1
    assert access.user_limit(access.USER_MAX_QUEUED_ENV, {access.USER_MAX_QUEUED_ENV: "many"}) is None


@settings(max_examples=200, derandomize=True)
@given(owners=st.lists(st.integers(0, 5), min_size=1, max_size=40), slots=st.integers(1, 4))
def test_fair_order_never_starts_a_kth_run_while_an_earlier_turn_waits(owners, slots):
    """Simulated queue: runs queued in any owner order, ``slots`` at a time, the oldest running ends first; a run
    of turn k (its owner's k-th) never starts while a run of an earlier turn waits."""
    queued = list(enumerate(owners))
    turn = {}
    for run_id, owner in queued:
        turn[run_id] = sum(1 for r, o in queued[:run_id] if o == owner)
    served: dict[int, int] = {}
    running: list[int] = []
    while queued:
        while len(running) < slots and queued:
            run_id = access.fair_next(queued, served, {})
            assert turn[run_id] == min(turn[r] for r, _ in queued)
            owner = owners[run_id]
            served[owner] = served.get(owner, 0) + 1
            queued.remove((run_id, owner))
            running.append(run_id)
        running.pop(0)


def test_fair_order_skips_owners_at_their_running_limit():
    queued = [(1, "a"), (2, "a"), (3, "b")]
    assert access.fair_next(queued, {"a": 1}, {"a": 1}, 1) == 3
    assert access.fair_next([(2, "a")], {"a": 1}, {"a": 1}, 1) is None
    assert access.fair_next([(2, "a")], {"a": 1}, {"a": 1}, None) == 2
