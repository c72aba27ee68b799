"""Who may see a run, in the store: workspaces, review links and the fair queue (both backends, as test_store)."""

from __future__ import annotations

import sqlite3
import time

import pytest

from get_core.runs import access, launch
from get_core.runs.access import (LOCAL_OWNER, USER_MAX_QUEUED_ENV, AccessDenied, ReviewLinkInvalid, Scope)
from get_core.runs.store import RunNotFound, RunStatus, RunStore, StoreError
from tests.runs.test_store import DATASET, PARAMS, store  # noqa: F401  (store: the fixture, both backends)

ALICE, BOB = Scope(owner="workspace:alice"), Scope(owner="workspace:bob")


def new_run(store: RunStore, **kwargs) -> int:  # noqa: F811
    return store.create_run(PARAMS, DATASET, "toy.csv", n_rows=2, n_features=1, **kwargs)


def finished(store: RunStore, owner: str) -> int:  # noqa: F811
    """A FINISHED run of ``owner`` with a model artifact, made as the worker would (through the unscoped store)."""
    run_id = new_run(store, owner=owner)
    store.start_run(run_id)
    store.put_json(run_id, "model", {"tree": owner})
    store.set_status(run_id, RunStatus.FINISHED, test_r2=0.5)
    return run_id


#: Every call a page can make on one run, as (name, call): each must treat another owner's run as missing.
RUN_CALLS = [
    ("get_run", lambda s, r: s.get_run(r)),
    ("list_metrics", lambda s, r: s.list_metrics(r)),
    ("get_artifact", lambda s, r: s.get_artifact(r, "model")),
    ("get_json", lambda s, r: s.get_json(r, "model")),
    ("list_artifacts", lambda s, r: s.list_artifacts(r)),
    ("get_dataset", lambda s, r: s.get_dataset(r)),
    ("rename_run", lambda s, r: s.rename_run(r, "mine now")),
    ("add_baselines", lambda s, r: s.add_baselines(r, {"cart": {}})),
    ("request_cancel", lambda s, r: s.request_cancel(r)),
    ("delete_run", lambda s, r: s.delete_run(r)),
    ("create_review_link", lambda s, r: s.create_review_link(r)),
    ("list_review_links", lambda s, r: s.list_review_links(r)),
    ("revoke_review_link", lambda s, r: s.revoke_review_link(r, "0" * 12)),
]


@pytest.mark.parametrize("name, call", RUN_CALLS, ids=[name for name, _ in RUN_CALLS])
def test_another_owners_run_reads_and_writes_as_a_run_that_does_not_exist(store, name, call):  # noqa: F811
    theirs = finished(store, BOB.owner)
    before = store.get_run(theirs)
    with pytest.raises(RunNotFound) as caught:
        call(store.scoped(ALICE), theirs)
    assert str(caught.value) == f"Run {theirs} does not exist (it may have been deleted)."  # as a missing one
    assert store.get_run(theirs) == before and store.get_json(theirs, "model") == {"tree": BOB.owner}
    call(store.scoped(BOB), theirs)  # the owner may


def test_each_owner_lists_and_counts_only_their_own_runs(store):  # noqa: F811
    mine = [finished(store, ALICE.owner) for _ in range(2)]
    theirs = finished(store, BOB.owner)
    assert [r.run_id for r in store.scoped(ALICE).list_runs()] == mine[::-1]
    assert [r.run_id for r in store.scoped(BOB).list_runs([RunStatus.FINISHED])] == [theirs]
    assert store.scoped(Scope(owner="workspace:carol")).list_runs() == []
    assert len(store.list_runs()) == 3  # the unscoped store (workers, the queue) sees every run


def test_a_new_run_belongs_to_its_sessions_owner_and_names_are_unique_per_owner(store):  # noqa: F811
    a = new_run(store.scoped(ALICE), name="depth 4")
    b = new_run(store.scoped(BOB), name="depth 4")
    assert (store.get_run(a).owner, store.get_run(b).owner) == (ALICE.owner, BOB.owner)
    assert store.get_run(b).name == "depth 4"  # another owner's run of that name is none of Bob's business
    assert store.get_run(new_run(store)).owner == LOCAL_OWNER
    with pytest.raises(AccessDenied):
        new_run(store.scoped(ALICE), owner=BOB.owner)


def test_a_cancel_or_delete_by_another_owner_changes_nothing(store):  # noqa: F811
    queued = new_run(store, owner=BOB.owner)
    done = finished(store, BOB.owner)
    for call in (lambda: store.scoped(ALICE).request_cancel(queued), lambda: store.scoped(ALICE).delete_run(done)):
        with pytest.raises(RunNotFound):
            call()
    assert store.get_run(queued).status is RunStatus.QUEUED and store.get_run(done).status is RunStatus.FINISHED
    assert store.scoped(BOB).request_cancel(queued) is RunStatus.CANCELLED
    store.scoped(BOB).delete_run(done)
    assert [r.run_id for r in store.list_runs()] == [queued]


def test_a_kept_table_is_found_by_its_owner_only(store):  # noqa: F811
    digest = store.scoped(ALICE).put_dataset(DATASET, "secret.csv")
    assert store.scoped(ALICE).find_dataset(digest[:16]).data == DATASET
    with pytest.raises(StoreError, match="No single stored dataset"):
        store.scoped(BOB).find_dataset(digest[:16])
    new_run(store.scoped(BOB))  # the same bytes in Bob's own run: now they are his too
    assert store.scoped(BOB).find_dataset(digest[:16]).data == DATASET


def test_a_review_link_opens_one_run_read_only_until_revoked(store):  # noqa: F811
    shared, other = finished(store, ALICE.owner), finished(store, ALICE.owner)
    token = store.scoped(ALICE).create_review_link(shared)
    assert len(token) >= 32 and token not in repr(store.scoped(ALICE).list_review_links(shared))
    review = store.scoped(Scope(review_token=token))
    assert store.review_run_id(token) == shared
    assert [r.run_id for r in review.list_runs()] == [shared]
    assert review.get_json(shared, "model") == {"tree": ALICE.owner} and review.get_dataset(shared).data == DATASET
    with pytest.raises(RunNotFound):
        review.get_run(other)
    for write in (lambda: review.rename_run(shared, "x"), lambda: review.delete_run(shared),
                  lambda: review.request_cancel(shared), lambda: review.create_review_link(shared),
                  lambda: review.add_baselines(shared, {}), lambda: new_run(review),
                  lambda: review.put_dataset(DATASET, "x.csv")):
        with pytest.raises(AccessDenied):
            write()
    with pytest.raises(AccessDenied):
        review.find_dataset(store.get_run(shared).dataset_fingerprint)
    [link] = store.scoped(ALICE).list_review_links(shared)
    assert link.works(time.time())
    with pytest.raises(RunNotFound):
        store.scoped(BOB).revoke_review_link(shared, link.link_id)
    store.scoped(ALICE).revoke_review_link(shared, link.link_id)
    for call in (lambda: review.get_run(shared), review.list_runs, lambda: store.review_run_id(token)):
        with pytest.raises(ReviewLinkInvalid):
            call()
    assert store.scoped(ALICE).list_review_links(shared)[0].revoked_at is not None


def test_a_review_link_stops_at_its_expiry_and_unknown_tokens_say_the_same(store, monkeypatch):  # noqa: F811
    run_id = finished(store, ALICE.owner)
    token = store.scoped(ALICE).create_review_link(run_id, expires_in=60)
    assert store.review_run_id(token) == run_id
    later = time.time() + 61
    monkeypatch.setattr(time, "time", lambda: later)
    with pytest.raises(ReviewLinkInvalid) as expired:
        store.review_run_id(token)
    with pytest.raises(ReviewLinkInvalid) as unknown:
        store.review_run_id(token[:-1] + ("A" if token[-1] != "A" else "B"))
    assert str(expired.value) == str(unknown.value)
    for hostile in ("", "' OR 1=1 --", "x" * 100_000, "\u202e\x00", access.token_digest(token)):
        with pytest.raises(ReviewLinkInvalid):
            store.review_run_id(hostile)  # the stored digest itself is no token
    with pytest.raises(StoreError):
        store.scoped(ALICE).create_review_link(run_id, expires_in=0)


def test_a_deleted_run_takes_its_review_links_with_it(store):  # noqa: F811
    run_id = finished(store, ALICE.owner)
    token = store.scoped(ALICE).create_review_link(run_id)
    store.scoped(ALICE).delete_run(run_id)
    with pytest.raises(ReviewLinkInvalid):
        store.review_run_id(token)


def test_a_store_from_before_owners_keeps_its_runs_and_tables_as_the_local_users(tmp_path):
    path = tmp_path / "old.sqlite"
    store = RunStore(path)
    run_id = finished(store, LOCAL_OWNER)
    kept = store.put_dataset(b"a,b\n1,2\n", "kept.csv")
    store.close()
    with sqlite3.connect(path) as conn:  # the schema as stores wrote it before owners
        conn.executescript("DROP INDEX runs_by_owner; ALTER TABLE runs DROP COLUMN owner; "
                           "DROP TABLE dataset_owners; DROP TABLE review_links;")
    reopened = RunStore(path)
    local = reopened.scoped(Scope(owner=LOCAL_OWNER))
    assert [r.run_id for r in local.list_runs()] == [run_id] and local.get_run(run_id).owner == LOCAL_OWNER
    assert local.get_json(run_id, "model") == {"tree": LOCAL_OWNER}
    assert local.find_dataset(kept[:16]).name == "kept.csv"
    assert reopened.scoped(ALICE).list_runs() == []
    with pytest.raises(StoreError):
        reopened.scoped(ALICE).find_dataset(kept[:16])
    reopened.close()
    assert RunStore(path).get_run(run_id).owner == LOCAL_OWNER  # opening again migrates nothing twice


def test_the_queue_works_on_every_owners_runs_whichever_session_calls_it(store):  # noqa: F811
    alice = store.scoped(ALICE)
    assert alice.unscoped is store and store.unscoped is store
    bobs = new_run(store, owner=BOB.owner)
    assert alice.claim_next_run(1).run_id == bobs  # a page render of Alice's starts Bob's queued run
    assert alice.count_running() == 1 and alice.has_active_runs()


# ------------------------------------------------------------------------------------------ the fair queue
def drain(store: RunStore, slots: int, per_owner: int | None = None) -> list[int]:  # noqa: F811
    """Run the queue to its end with ``slots`` slots, ending the oldest running run after each round of claims
    (as workers would, one at a time); returns the run ids in the order they started."""
    started: list[int] = []
    while True:
        while (run := store.claim_next_run(slots, per_owner)) is not None:
            started.append(run.run_id)
        running = store.list_runs([RunStatus.RUNNING])
        if not running:
            return started
        store.set_status(running[-1].run_id, RunStatus.FINISHED)


@pytest.mark.parametrize("slots", [1, 2, 5])
def test_ten_users_three_runs_each_every_first_run_starts_before_any_second(store, slots):  # noqa: F811
    owners = [f"workspace:user{i}" for i in range(10)]
    turn = {}
    for owner in owners:  # the worst order: each user queues all three at once, one user after another
        for k in range(3):
            turn[new_run(store, owner=owner)] = k
    order = drain(store, slots)
    assert sorted(order) == sorted(turn)
    turns = [turn[run_id] for run_id in order]
    assert turns == sorted(turns), turns  # all firsts, then all seconds, then all thirds
    firsts = [store.get_run(r).owner for r in order[:10]]
    assert firsts == owners  # within a turn, the older run first


def test_a_user_who_queued_early_does_not_hold_up_one_who_queued_later(store):  # noqa: F811
    early = [new_run(store, owner=ALICE.owner) for _ in range(3)]
    first = store.claim_next_run(1)
    assert first.run_id == early[0]
    late = new_run(store, owner=BOB.owner)
    store.set_status(first.run_id, RunStatus.FINISHED)
    assert store.claim_next_run(1).run_id == late  # Bob's first before Alice's second
    assert store.claim_next_run(2).run_id == early[1]


def test_the_per_owner_running_limit_leaves_slots_to_others(store):  # noqa: F811
    alice = [new_run(store, owner=ALICE.owner) for _ in range(3)]
    assert store.claim_next_run(4, 1).run_id == alice[0]
    assert store.claim_next_run(4, 1) is None  # Alice is at her limit; nobody else waits
    bob = new_run(store, owner=BOB.owner)
    assert store.claim_next_run(4, 1).run_id == bob
    assert [r.run_id for r in store.list_runs([RunStatus.QUEUED])] == alice[:0:-1]


def test_the_per_owner_queued_limit_refuses_with_a_sentence(monkeypatch):
    monkeypatch.setenv(USER_MAX_QUEUED_ENV, "2")
    store = RunStore(":memory:")  # noqa: F811  (in memory: submit_run starts no worker for it)
    alice = store.scoped(ALICE)
    for _ in range(2):
        launch.submit_run(alice, PARAMS, DATASET, "toy.csv", n_rows=2, n_features=1)
    with pytest.raises(StoreError, match="You already have 2 runs waiting .at most 2 per user"):
        launch.submit_run(alice, PARAMS, DATASET, "toy.csv", n_rows=2, n_features=1)
    launch.submit_run(store.scoped(BOB), PARAMS, DATASET, "toy.csv", n_rows=2, n_features=1)  # Bob is not Alice
