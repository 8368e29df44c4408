"""A named third party's facts are on fields of that person's own (`<relation>_<name>:<slot>`):
two sisters' cities are two fields, one sister's move lands on hers, and the user's own
facts and an unnamed relation's keep the fields they had
(`remem.extract.offline.theirs`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from remem.extract import extract_offline
from remem.model import Candidate, Event, Role

T = datetime(2026, 4, 2, 18, 0, tzinfo=UTC)


def said(*turns: str, speaker: str | None = None) -> list[Candidate]:
    """The candidates of the last turn, the turns before it its context."""
    meta = {"speaker": speaker} if speaker else {}
    events = [
        Event(f"ev-{n}", "t", "a", "s", Role.USER, text, T + timedelta(minutes=n), meta)
        for n, text in enumerate(turns)
    ]
    return extract_offline(events[-1], events[:-1])


def fields(*turns: str) -> dict[str, str | None]:
    return {c.text: c.field for c in said(*turns)}


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        (("My sister Ana lives in Bristol.",), {"Sister Ana lives in Bristol": "sister_ana:home"}),
        (("My other sister Bec lives in Leeds.",),
         {"Other sister Bec lives in Leeds": "sister_bec:home"}),
        (("My daughter Mia is allergic to peanuts and eggs.",),
         {"Daughter Mia is allergic to peanuts": "daughter_mia:allergy:peanut",
          "Daughter Mia is allergic to eggs": "daughter_mia:allergy:egg"}),
        (("My son Leo is vegetarian.",), {"Son Leo is vegetarian": "son_leo:diet"}),
        (("My son, Leo, turns 9 soon.", "Leo doesn't eat pork."),
         {"Son Leo does not eat pork": "son_leo:eats:pork"}),
        (("My brother Tom is a nurse.",), {"Brother Tom is a nurse": "brother_tom:occupation"}),
        (("My daughter Mia's favourite colour is green.",),
         {"Daughter Mia's favourite colour is green": "daughter_mia:favorite:color"}),
    ],
)  # fmt: skip
def test_a_named_person_s_fact_is_on_a_field_of_theirs(
    turns: tuple[str, ...], expected: dict[str, str]
) -> None:
    assert fields(*turns) == expected


def test_two_people_of_one_relation_have_two_fields_and_one_moves_on_her_own() -> None:
    ana = said("My sister Ana lives in Bristol.")
    bec = said("My sister Ana lives in Bristol.", "My other sister Bec lives in Leeds.")
    moved = said("My sister Ana lives in Bristol.", "Ana moved to Leeds.")
    assert [(c.field, c.value) for c in ana] == [("sister_ana:home", "Bristol")]
    assert [(c.field, c.value) for c in bec] == [("sister_bec:home", "Leeds")]
    # the same sister's move: her field, a change, so it supersedes her old city
    assert [(c.text, c.field, c.value, c.is_correction) for c in moved] == [
        ("Sister Ana moved to Leeds", "sister_ana:home", "Leeds", True)
    ]


def test_the_user_s_own_facts_and_an_unnamed_relation_keep_their_fields() -> None:
    assert fields("I live in Bristol.") == {"Lives in Bristol": "home"}
    assert fields("My sister lives in Bristol.") == {"Sister lives in Bristol": "home:sister"}
    assert fields("I'm allergic to peanuts.") == {"Is allergic to peanuts": "allergy:peanut"}
    # and beside them, a named sister's is hers: no field of the user's family
    assert fields("My sister lives in Bristol.", "My sister Ana lives in Leeds.") == {
        "Sister Ana lives in Leeds": "sister_ana:home"
    }


def test_a_named_speaker_s_person_is_theirs_item_by_item() -> None:
    """A list split into one record per item names whose person each is."""
    out = said("My daughter Mia turns 7.", "Mia is allergic to peanuts and eggs.", speaker="Priya")
    assert sorted((c.text, c.field) for c in out) == [
        ("Priya's daughter Mia is allergic to eggs", "daughter_mia:allergy:egg"),
        ("Priya's daughter Mia is allergic to peanuts", "daughter_mia:allergy:peanut"),
    ]


@pytest.mark.parametrize(
    "turn",
    [
        "My sister Ana and I live in Bristol.",  # the two of them: the rules' "we"
        "My kids Mia and Leo are vegetarian.",  # no one kid
        "My friend Will you know is vegan.",  # no predicate of his
    ],
)
def test_what_is_no_one_person_s_fact_gets_no_field_of_theirs(turn: str) -> None:
    heads = [(c.field or "").partition(":")[0] for c in said(turn)]
    assert not any("_" in head for head in heads), heads


def test_a_named_person_s_preference_is_a_fact_about_them_not_the_user_s() -> None:
    (kate,) = said("My wife Kate prefers window seats.")
    assert (kate.text, kate.field, kate.kind.value) == (
        "Wife Kate prefers window seats",
        "wife_kate:preference:seat",
        "semantic",
    )


def test_what_a_person_does_with_the_user_is_not_read_as_said_of_themselves() -> None:
    """ "lives with me" is no "I live with me"; the value ends where another subject starts."""
    assert fields("My sister Ana lives with me.") == {"Sister Ana lives with them": None}
    (ines,) = said("My sister Ines moved to Oslo and she loves the light there.")
    assert (ines.field, ines.value) == ("sister_ines:home", "Oslo")


@pytest.mark.parametrize(
    ("turn", "expected"),
    [
        ("My husband is vegetarian.", "Husband is vegetarian"),
        ("hubby is vegetarian", "Husband is vegetarian"),
        ("Our kids are coeliac.", "Kids are coeliac"),
        ("My son is diabetic.", "Son is diabetic"),
        ("My mum is 70.", "Mum is 70"),
    ],
)
def test_an_unnamed_relation_s_short_fact_is_kept_as_said(turn: str, expected: str) -> None:
    """Two words of content ("husband", "vegetarian") were too few for a plain fact, and
    no rule reads "my husband" as the speaker: a household member's diet was lost. A rule
    that reads it as the person's own keeps it, as said, on no field (which husband it is
    not said)."""
    found = said(turn)
    assert [(c.text, c.field) for c in found] == [(expected, None)]


def test_an_unnamed_relation_s_health_stays_sensitive() -> None:
    (diabetic,) = said("My son is diabetic.")
    assert diabetic.sensitivity.value == "sensitive"


@pytest.mark.parametrize(
    "turn", ["My husband is great.", "My sister is here.", "My dad is tired.", "My son is with me."]
)
def test_what_no_rule_reads_of_a_relation_stays_unsaid(turn: str) -> None:
    assert said(turn) == []
