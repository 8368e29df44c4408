"""Policy is pure: precedence, validity and scope, case by case."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from remem.errors import ConflictError, InvalidInput
from remem.model import Authority, Event, Kind, Record, Role, Sensitivity, Source, Status
from remem.policy.events import classify, identity, import_digest
from remem.policy.precedence import RANK, may_supersede, outranks_or_equals
from remem.policy.scope import actor_prefix, check_name, namespace_for
from remem.policy.validity import (
    event_not_held,
    held,
    is_recallable,
    is_valid_at,
    not_held,
    not_recallable,
)
from remem.store.text import like_prefix

T = datetime(2026, 1, 1, tzinfo=UTC)
ORDER = [
    Authority.SYSTEM_OF_RECORD,
    Authority.CONFIRMED,
    Authority.APPROVED,
    Authority.VERIFIED_OUTCOME,
    Authority.INFERRED,
    Authority.SUMMARY,
]


def test_precedence_order_is_the_design_order() -> None:
    ranks = [RANK[a] for a in ORDER]
    assert ranks == sorted(ranks, reverse=True)
    assert set(RANK) == set(Authority)


@pytest.mark.parametrize(
    ("higher", "lower"), [(ORDER[i], ORDER[j]) for i in range(6) for j in range(i + 1, 6)]
)
def test_lower_authority_never_supersedes_higher(higher: Authority, lower: Authority) -> None:
    assert outranks_or_equals(higher, lower)
    assert not outranks_or_equals(lower, higher)
    later = T + timedelta(days=30)
    assert not may_supersede(lower, later, higher, T)
    assert may_supersede(higher, later, lower, T)


@pytest.mark.parametrize("authority", list(Authority))
def test_equal_authority_newer_wins_older_loses(authority: Authority) -> None:
    assert may_supersede(authority, T + timedelta(seconds=1), authority, T)
    assert not may_supersede(authority, T - timedelta(seconds=1), authority, T)
    assert may_supersede(authority, T, authority, T)


def _rec(
    status: Status = Status.ACTIVE, days_from: int = 0, days_until: int | None = None
) -> Record:
    return Record(
        id="r", tenant="t", actor="a", namespace="/n", kind=Kind.SEMANTIC, text="x",
        source=Source("explicit"), authority=Authority.CONFIRMED,
        sensitivity=Sensitivity.NORMAL, valid_from=T + timedelta(days=days_from),
        created_at=T, updated_at=T, status=status,
        valid_until=None if days_until is None else T + timedelta(days=days_until),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("days_from", "days_until", "probe", "expected"),
    [
        (0, None, 0, True),
        (0, None, 1000, True),
        (0, None, -1, False),
        (0, 10, 9, True),
        (0, 10, 10, False),
        (0, 10, 11, False),
        (5, 10, 4, False),
        (5, 10, 5, True),
    ],
)
def test_validity_window(
    days_from: int, days_until: int | None, probe: int, expected: bool
) -> None:
    assert (
        is_valid_at(_rec(days_from=days_from, days_until=days_until), T + timedelta(days=probe))
        is expected
    )


@pytest.mark.parametrize(
    ("status", "as_of", "expected"),
    [
        (Status.ACTIVE, False, True),
        (Status.INVALID, False, False),
        (Status.PROPOSED, False, False),
        (Status.DELETED, False, False),
        (Status.ACTIVE, True, True),
        (Status.INVALID, True, True),
        (Status.PROPOSED, True, False),
        (Status.DELETED, True, False),
    ],
)
def test_only_active_records_are_recalled_now(status: Status, as_of: bool, expected: bool) -> None:
    now = T + timedelta(days=100)
    rec = _rec(status=status, days_until=50 if status is Status.INVALID else None)
    when = T + timedelta(days=10) if as_of else None
    assert is_recallable(rec, now, when, when) is expected


def test_expired_record_is_not_recalled_now_but_is_as_of_before() -> None:
    rec = _rec(days_until=5)
    assert not_recallable(rec, T + timedelta(days=6)) == "expired (valid_until has passed)"
    assert is_recallable(rec, T + timedelta(days=6), T + timedelta(days=2), T + timedelta(days=2))


def _at(days: float) -> datetime:
    return T + timedelta(days=days)


def _written(days_written: float, **kw: object) -> Record:
    """A record written on day `days_written` (valid from day 0 unless told)."""
    base = _rec(**kw)  # type: ignore[arg-type]
    return replace(base, created_at=_at(days_written), updated_at=_at(days_written))


def test_a_record_written_after_known_at_is_not_held_whatever_its_validity() -> None:
    late = _written(20)  # valid from day 0, written on day 20 (a backdated statement)
    assert not_held(late, _at(10), _at(10)) == "written after known_at"
    assert held(late, _at(20), _at(10))  # known from day 20 on, about day 10 too
    assert not_recallable(late, _at(30), valid_at=_at(10)) is None  # known now about day 10


def test_a_record_superseded_after_known_at_is_still_current_then() -> None:
    # valid from day 0; its successor (valid from day 5) was written on day 20
    old = replace(_written(0, status=Status.INVALID, days_until=5), superseded_by="new")
    closed = {"r": _at(20)}
    assert held(old, _at(10), _at(10), closed)  # on day 10 nobody knew of day 5's change
    assert held(old, _at(10), _at(100), closed)  # nor that it would end
    assert not_held(old, _at(10), _at(-1), closed) == "not valid at valid_at"
    # once the closing is known, it holds for the time it was valid only
    assert held(old, _at(30), _at(3), closed)
    assert not_held(old, _at(30), _at(10), closed) == "superseded before known_at by new"
    assert not_held(old, _at(30), _at(10)) == "superseded before known_at by new"


def test_an_invalidated_record_is_held_only_until_its_withdrawal_is_known() -> None:
    gone = _written(0, status=Status.INVALID)  # closed with no validity left
    assert held(gone, _at(5), _at(5), {"r": _at(8)})
    assert not_held(gone, _at(9), _at(5), {"r": _at(8)}) == "invalidated before known_at"


@pytest.mark.parametrize("status", [Status.DELETED, Status.PROPOSED])
def test_deleted_and_proposed_records_are_never_held(status: Status) -> None:
    assert not_held(_written(0, status=status), _at(10), _at(10)) == status.value


def test_an_event_is_known_from_its_arrival_and_valid_from_its_own_time() -> None:
    said = Event("e", "t", "a", "s", Role.USER, "hi", _at(1), received_at=_at(50))
    assert event_not_held(said, _at(40), _at(60)) == "received after known_at"
    assert event_not_held(said, None, _at(0)) == "said after valid_at"
    assert event_not_held(said, _at(50), _at(1)) is None
    assert event_not_held(replace(said, received_at=None), _at(0), _at(1)) is None


@pytest.mark.parametrize("name", ["alice", "u42", "a.b-c_d@x:y+z", "A" * 200])
def test_good_names_pass(name: str) -> None:
    assert check_name("actor", name) == name


@pytest.mark.parametrize("name", ["", " ", "a b", "/etc", "-x", "A" * 201, None, 42, "a\nb", "%"])
def test_bad_names_are_refused(name: object) -> None:
    with pytest.raises(InvalidInput):
        check_name("actor", name)


def test_namespaces_nest_under_the_actor() -> None:
    ns = namespace_for("acme", "u42", Kind.PREFERENCE)
    assert ns == "/tenants/acme/actors/u42/preferences"
    assert ns.startswith(actor_prefix("acme", "u42"))
    assert not namespace_for("acme", "u420", Kind.SEMANTIC).startswith(actor_prefix("acme", "u42"))


@pytest.mark.parametrize(
    ("prefix", "pattern"),
    [("/actors/al_ce", "/actors/al\\_ce%"), ("/a%b", "/a\\%b%"), ("/a\\b", "/a\\\\b%")],
)
def test_like_prefix_escapes_wildcards(prefix: str, pattern: str) -> None:
    assert like_prefix(prefix) == pattern


def _ev(eid: str, actor: str = "a", text: str = "hi", **kw: object) -> Event:
    fields: dict[str, object] = dict(
        id=eid, tenant="t", actor=actor, session="s", role=Role.USER, text=text, time=T
    )
    fields.update(kw)
    return Event(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("stored", "batch", "expected"),
    [
        ({}, [_ev("e1"), _ev("e2")], [True, True]),
        ({"e1": identity(_ev("e1"))}, [_ev("e1", time=T + timedelta(days=1))], [False]),
        ({"e1": identity(_ev("e1"))}, [_ev("e1", metadata={"x": 1}), _ev("e2")], [False, True]),
        ({}, [_ev("e1"), _ev("e1")], [True, False]),
        ({}, [_ev("e1"), _ev("e1", actor="b")], 1),
        ({"e1": identity(_ev("e1"))}, [_ev("e2"), _ev("e1", text="other")], 1),
        ({"e1": identity(_ev("e1"))}, [_ev("e1", session="s2")], 0),
        ({"e1": identity(_ev("e1"))}, [_ev("e1", role=Role.TOOL)], 0),
    ],
)
def test_an_event_id_repeat_is_the_same_event_or_a_conflict(
    stored: dict[str, object], batch: list[Event], expected: list[bool] | int
) -> None:
    if isinstance(expected, int):
        with pytest.raises(ConflictError) as caught:
            classify(batch, stored)  # type: ignore[arg-type]
        assert caught.value.index == expected  # type: ignore[attr-defined]
    else:
        assert classify(batch, stored) == expected  # type: ignore[arg-type]


def test_an_import_digest_is_stable_and_covers_the_content() -> None:
    base = _ev("x")
    assert import_digest(base, True) == import_digest(_ev("y"), True)  # the id is not content
    assert import_digest(base, True) != import_digest(base, False)
    for change in ({"text": "ho"}, {"actor": "b"}, {"metadata": {"k": 1}},
                   {"time": T + timedelta(seconds=1)}):  # fmt: skip
        assert import_digest(_ev("x", **change), True) != import_digest(base, True)
