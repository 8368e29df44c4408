"""Consolidation decisions, case by case, without a database."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from remem.consolidate import (
    decide,
    normalise,
    plan,
    same_value,
    text_similarity,
    with_verdict,
)
from remem.model import Action, Authority, Candidate, Kind, Record, Sensitivity, Source, Status

T = datetime(2026, 3, 1, tzinfo=UTC)
NOW = datetime(2026, 6, 1, tzinfo=UTC)


def cand(
    text: str,
    field: str | None = None,
    value: str | None = None,
    days: float = 1,
    authority: Authority = Authority.INFERRED,
    event: str = "e-new",
    kind: Kind = Kind.SEMANTIC,
) -> Candidate:
    return Candidate(
        text=text, kind=kind, source=Source("event", (event,), "offline", "test/1"),
        observed_at=T + timedelta(days=days), field=field, value=value, authority=authority,
    )  # fmt: skip


def rec(
    rid: str,
    text: str,
    field: str | None = None,
    value: str | None = None,
    days: float = 0,
    authority: Authority = Authority.INFERRED,
    status: Status = Status.ACTIVE,
    event: str = "e-old",
    kind: Kind = Kind.SEMANTIC,
) -> Record:
    return Record(
        id=rid, tenant="t", actor="a", namespace="/tenants/t/actors/a/facts", kind=kind,
        text=text, source=Source("event", (event,), "offline", "test/1"), authority=authority,
        sensitivity=Sensitivity.NORMAL, valid_from=T + timedelta(days=days), created_at=T,
        updated_at=T, status=status, field=field, value=value,
    )  # fmt: skip


def test_new_information_is_added() -> None:
    d = decide(cand("Works as a nurse", "job", "nurse"), [], [])
    assert d.action is Action.ADD and not d.supersedes


def test_same_field_same_value_is_noop() -> None:
    old = rec("r1", "Is vegetarian", "diet", "vegetarian")
    d = decide(cand("Is vegetarian", "diet", "Vegetarian"), [old], [])
    assert d.action is Action.NOOP and d.target == "r1"


def test_without_values_the_texts_of_a_field_are_compared() -> None:
    old = rec("r1", "Drinks coffee in the morning", "beverage")
    same = decide(cand("drinks Coffee in the morning", "beverage"), [old], [])
    assert same.action is Action.NOOP and same.target == "r1"
    new = decide(cand("Drinks tea in the morning", "beverage", days=2), [old], [])
    assert new.action is Action.UPDATE and new.supersedes == ("r1",)
    # a value on one side only is a new value too
    valued = decide(cand("Drinks tea", "beverage", "tea", days=2), [old], [])
    assert valued.action is Action.UPDATE and valued.supersedes == ("r1",)


def test_newer_value_supersedes_older() -> None:
    old = rec("r1", "Budget is $500", "budget", "$500", days=0)
    d = decide(cand("Budget is $750", "budget", "$750", days=5), [old], [])
    assert d.action is Action.UPDATE and d.supersedes == ("r1",)


def test_late_arriving_older_statement_does_not_overwrite_newer() -> None:
    newer = rec("r2", "Lives in Porto", "home", "Porto", days=10)
    d = decide(cand("Lives in Lisbon", "home", "Lisbon", days=2), [newer], [])
    assert d.action is Action.ADD and d.late_behind == "r2" and not d.supersedes


def test_late_arrival_is_planned_as_closed_history() -> None:
    newer = rec("r2", "Lives in Porto", "home", "Porto", days=10)
    c = cand("Lives in Lisbon", "home", "Lisbon", days=2)
    p = plan(decide(c, [newer], []), c, tenant="t", actor="a", new_id="r3", now=NOW,
             late_valid_until=newer.valid_from)  # fmt: skip
    (r,) = p.inserts
    assert r.status is Status.INVALID and r.superseded_by == "r2"
    assert r.valid_until == newer.valid_from and r.valid_from == c.observed_at
    assert p.changes == ()


def test_lower_authority_newer_statement_keeps_both_as_conflict() -> None:
    approved = rec("r1", "Billing contact is Ana", "billing contact", "Ana",
                   authority=Authority.CONFIRMED)  # fmt: skip
    d = decide(cand("Billing contact is Bo", "billing contact", "Bo", days=3), [approved], [])
    assert d.action is Action.ADD and d.conflicts_with == ("r1",) and not d.supersedes


def test_higher_authority_same_value_upgrades_record() -> None:
    inferred = rec("r1", "Is vegetarian", "diet", "vegetarian")
    d = decide(cand("Is vegetarian", "diet", "vegetarian", authority=Authority.CONFIRMED),
               [inferred], [])  # fmt: skip
    assert d.action is Action.UPDATE and d.supersedes == ("r1",)


def test_rerun_of_same_event_is_noop_even_when_superseded() -> None:
    old = rec("r1", "Budget is $500", "budget", "$500", status=Status.INVALID, event="e-new")
    d = decide(cand("Budget is $500", "budget", "$500", event="e-new"), [old], [])
    assert d.action is Action.NOOP


def test_invalid_records_are_not_superseded_again() -> None:
    gone = rec("r1", "Budget is $500", "budget", "$500", status=Status.INVALID)
    d = decide(cand("Budget is $750", "budget", "$750", days=5), [gone], [])
    assert d.action is Action.ADD and d.supersedes == ()


def test_supersedes_every_active_record_of_the_field() -> None:
    a = rec("r1", "Budget is $500", "budget", "$500", days=0)
    b = rec("r2", "Budget is $600", "budget", "$600", days=1)
    d = decide(cand("Budget is $750", "budget", "$750", days=5), [a, b], [])
    assert set(d.supersedes) == {"r1", "r2"}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Loves pizza", "Likes pizza"),
        ("Likes pizza", "likes pizza!"),
        ("Enjoys hiking", "loves hiking"),
        ("Favourite colour is green", "favorite color is green"),
    ],
)
def test_near_duplicates_without_field_are_noop(old: str, new: str) -> None:
    d = decide(cand(new), [], [(rec("r1", old), 0.0)])
    assert d.action is Action.NOOP and d.target == "r1"


def test_high_cosine_is_a_duplicate_even_with_other_words() -> None:
    d = decide(cand("Is fond of Italian food"), [], [(rec("r1", "Loves pasta and pizza"), 0.95)])
    assert d.action is Action.NOOP


@pytest.mark.parametrize(
    ("old", "new"),
    [("Loves pizza", "Hates pizza"), ("Sister lives in Berlin", "Brother lives in Oslo")],
)
def test_different_statements_are_added(old: str, new: str) -> None:
    d = decide(cand(new), [], [(rec("r1", old), 0.3)])
    assert d.action is Action.ADD


def test_a_look_alike_about_another_field_is_added() -> None:
    """Two sisters in one city read alike, but each is on a field of her own."""
    old = rec("r1", "Sister Ana lives in Bristol", "sister_ana:home", "Bristol")
    d = decide(cand("Sister Bec lives in Bristol", "sister_bec:home", "Bristol"), [], [(old, 0.97)])
    assert d.action is Action.ADD and not d.supersedes
    moved = cand("Sister Bec moved to Bristol", "sister_bec:home", "Bristol")
    d = decide(replace(moved, is_correction=True), [], [(old, 0.97)])  # a change, not Ana's
    assert d.action is Action.ADD and not d.supersedes
    # with no field on one side still a duplicate, and a correction of the same family
    # still puts its look-alike right, as before
    same = decide(cand("Sister Ana lives in Bristol"), [], [(old, 0.97)])
    assert same.action is Action.NOOP
    peanut = rec("r2", "Is allergic to peanuts", "allergy:peanut", "allergic")
    pecan = cand("Is allergic to pecans", "allergy:pecan", "allergic")
    assert decide(pecan, [], [(peanut, 0.95)]).action is Action.ADD
    righted = decide(replace(pecan, is_correction=True), [], [(peanut, 0.95)])
    assert (righted.action, righted.supersedes) == (Action.UPDATE, ("r2",))


def test_duplicate_of_an_invalid_record_is_added() -> None:
    d = decide(cand("Likes pizza"), [], [(rec("r1", "Likes pizza", status=Status.INVALID), 1.0)])
    assert d.action is Action.ADD


def test_duplicate_of_another_kind_is_added() -> None:
    d = decide(cand("Likes pizza", kind=Kind.PREFERENCE), [], [(rec("r1", "Likes pizza"), 1.0)])
    assert d.action is Action.ADD


def test_explicit_restatement_of_inferred_record_upgrades_it() -> None:
    d = decide(cand("Likes pizza", authority=Authority.CONFIRMED), [],
               [(rec("r1", "Likes pizza"), 1.0)])  # fmt: skip
    assert d.action is Action.UPDATE and d.supersedes == ("r1",)


def test_plan_links_both_ways_and_writes_history() -> None:
    old = rec("r1", "Budget is $500", "budget", "$500")
    c = cand("Budget is $750", "budget", "$750", days=5)
    p = plan(decide(c, [old], []), c, tenant="t", actor="a", new_id="r2", now=NOW)
    (new,) = p.inserts
    assert new.supersedes == "r1" and new.status is Status.ACTIVE
    (change,) = p.changes
    assert change.record_id == "r1" and change.superseded_by == "r2"
    assert change.status is Status.INVALID and change.valid_until == c.observed_at
    assert [(h.record_id, h.action) for h in p.history] == [("r2", "UPDATE"), ("r1", "SUPERSEDED")]


def test_plan_of_a_noop_from_the_same_event_writes_nothing() -> None:
    old = rec("r1", "Is vegetarian", "diet", "vegetarian", event="e-new")
    c = cand("Is vegetarian", "diet", "vegetarian")
    p = plan(decide(c, [old], []), c, tenant="t", actor="a", new_id="r2", now=NOW)
    assert p.inserts == () and p.changes == () and p.history == () and p.sources == ()


def test_plan_of_a_noop_said_again_grows_the_records_source_only() -> None:
    old = rec("r1", "Is vegetarian", "diet", "vegetarian")
    c = cand("Is vegetarian", "diet", "vegetarian")
    d = decide(c, [old], [])
    assert d.action is Action.NOOP and d.adds_sources == ("e-new",)
    p = plan(d, c, tenant="t", actor="a", new_id="r2", now=NOW)
    assert p.inserts == () and p.changes == ()
    assert [(g.record_id, g.actor, g.event_ids) for g in p.sources] == [("r1", "a", ("e-new",))]
    assert [(h.record_id, h.action, h.at, h.text) for h in p.history] == [
        ("r1", "SOURCE", NOW, None)
    ]


def test_a_near_duplicate_said_again_joins_its_source_but_not_an_invalid_one() -> None:
    old = rec("r1", "Loves hiking in the mountains")
    c = cand("Loves hiking in the mountains")
    assert decide(c, [], [(old, 0.0)]).adds_sources == ("e-new",)
    gone = rec("r1", "Is vegetarian", "diet", "vegetarian", status=Status.INVALID, event="e-new")
    again = cand("Is vegetarian", "diet", "vegetarian")
    assert decide(replace(again, source=replace(again.source, event_ids=("e-new", "e-2"))),
                  [gone], []).adds_sources == ()  # fmt: skip


def test_plan_puts_preferences_in_their_namespace() -> None:
    c = cand("Prefers aisle seats", "preference:seat", "aisle", kind=Kind.PREFERENCE)
    p = plan(decide(c, [], []), c, tenant="acme", actor="u1", new_id="r", now=NOW)
    assert p.inserts[0].namespace == "/tenants/acme/actors/u1/preferences"


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [("$500", "$500", True), ("Porto", "porto", True), ("Porto", "Lisbon", False),
     (None, None, True), (None, "x", False), ("not vegetarian", "vegetarian", False)],
)  # fmt: skip
def test_same_value(a: str | None, b: str | None, expected: bool) -> None:
    assert same_value(a, b) is expected


def test_normalise_folds_synonyms_and_plurals() -> None:
    assert normalise("I love dogs") == normalise("likes dog")
    assert text_similarity("", "") == 1.0
    assert text_similarity("pizza", "") == 0.0


def test_a_models_noop_onto_a_neighbour_joins_the_candidates_event_to_it() -> None:
    old = rec("r1", "Enjoys long walks by the sea")
    c = cand("Likes walking along the coast")
    rule = decide(c, [], [(old, 0.5)])
    assert rule.action is Action.ADD  # the rules alone see no duplicate
    d = with_verdict(rule, c, [old], "NOOP", "r1", "the same preference")
    assert (d.action, d.target, d.adds_sources) == (Action.NOOP, "r1", ("e-new",))


def test_a_correction_near_a_record_replaces_it() -> None:
    c = replace(cand("Rent is due on the 5th of each month"), is_correction=True)
    d = decide(c, [], [(rec("r1", "Rent is due on the 1st of each month"), 0.95)])
    assert d.action is Action.UPDATE and d.supersedes == ("r1",)
    same = replace(cand("Rent is due on the 1st of each month"), is_correction=True)
    d = decide(same, [], [(rec("r1", "Rent is due on the 1st of each month"), 0.99)])
    assert d.action is Action.NOOP  # said again as a correction, it changes nothing
