"""A record says what was said, whole: who did it when two did, contractions read as
meant, no glued punctuation, no list fragments passed off as statements."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from remem.extract import extract_offline
from remem.model import Event, Role

T = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def texts(said: str, speaker: str | None = "Maria") -> list[str]:
    meta = {"speaker": speaker} if speaker else {}
    return [c.text for c in extract_offline(Event("ev-1", "t", "a", "s", Role.USER, said, T, meta))]


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("My mom and I made some dinner together last night!",
         "Maria and their mom made some dinner together last night"),
        ("My sister and I went hiking in the Alps last summer.",
         "Maria and their sister went hiking in the Alps last summer"),
        ("Me and my husband adopted a cat named Luna.",
         "Maria and their husband adopted a cat named Luna"),
        ("I and my wife live in Porto.", "Maria and their wife live in Porto"),
        ("Jon and I are going to Paris next week.", "Maria and Jon are going to Paris next week"),
    ],
)  # fmt: skip
def test_a_subject_of_two_keeps_both(said: str, text: str) -> None:
    assert texts(said) == [text]


def test_a_subject_of_two_without_a_speaker_names_the_user() -> None:
    assert texts("My brother and I started a bakery last year.", speaker=None) == [
        "The user and their brother started a bakery last year"
    ]


def test_a_fact_of_two_still_sets_its_field() -> None:
    event = Event("ev-1", "t", "a", "s", Role.USER, "My husband and I live in Porto.", T,
                  {"speaker": "Maria"})  # fmt: skip
    (c,) = extract_offline(event)
    assert (c.text, c.field, c.value) == ("Maria and their husband live in Porto", "home", "Porto")


def test_its_been_is_it_has_been() -> None:
    assert texts("I have been involved in some charity work and it's been really rewarding.") == [
        "Maria has been involved in some charity work and it has been really rewarding"
    ]


def test_a_dash_glued_to_a_word_is_spaced() -> None:
    (text,) = texts("I like to watch the sunset- it reminds me to slow down.")
    assert "sunset - it" in text


@pytest.mark.parametrize("said", ["My family, exercise, and spending time with friends, for sure."])
def test_a_list_answering_a_question_is_no_statement(said: str) -> None:
    assert texts(said) == []


@pytest.mark.parametrize(
    "said",
    [
        "My sister, who lives in Berlin, is a nurse.",
        "My kids, Tom and Mia, play soccer every Saturday.",
    ],
)
def test_a_subject_with_an_aside_is_still_a_statement(said: str) -> None:
    assert len(texts(said)) == 1


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("Mental health is important to me, and it's made such an improvement.",
         "Mental health is important to Maria, and it has made such an improvement"),
        ("My fam's been awesome lately.", "Maria's fam has been awesome lately"),
        ("I am carving out some me-time each day.", "Maria is carving out some me-time each day"),
    ],
)  # fmt: skip
def test_contractions_and_compounds_read_as_meant(said: str, text: str) -> None:
    assert texts(said) == [text]


def test_a_likes_key_holds_no_possessive() -> None:
    said = "I love talking about my sneaker collection."
    (c,) = extract_offline(Event("ev-1", "t", "a", "s", Role.USER, said, T, {}))
    assert c.field == "likes:talking_about_sneaker_collection"


def test_an_allergy_list_ends_where_a_verb_goes_on() -> None:
    said = "I'm allergic to wool and avoid any woolen clothing."
    found = extract_offline(Event("ev-1", "t", "a", "s", Role.USER, said, T, {"speaker": "Ana"}))
    assert [(c.text, c.field) for c in found] == [
        ("Ana is allergic to wool and avoids any woolen clothing", "allergy:wool")
    ]


def test_a_verb_after_and_agrees_with_its_subject() -> None:
    assert texts("I am against breeding pets and only adopt from shelters.") == [
        "Maria is against breeding pets and only adopts from shelters"
    ]


def test_the_listeners_name_said_to_them_is_not_part_of_the_record() -> None:
    asked = Event(
        "ev-0", "t", "a", "s", Role.USER, "How is the store going?", T, {"speaker": "Jon"}
    )
    said = "I have had some tough times with my business, Jon."
    event = Event("ev-1", "t", "a", "s", Role.USER, said, T, {"speaker": "Gina"})
    assert [c.text for c in extract_offline(event, [asked])] == [
        "Gina has had some tough times with their business"
    ]


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("I color-code my goals so I can track my progress and stay motivated.",
         "Maria color-codes their goals so they can track their progress and stay motivated"),
        ("I double-check everything and prefer paper notes.",
         "Maria double-checks everything and prefers paper notes"),
    ],
)  # fmt: skip
def test_verbs_agree_when_hyphenated_and_not_after_a_modal(said: str, text: str) -> None:
    assert texts(said) == [text]


@pytest.mark.parametrize(
    "said",
    [
        "I will keep pushing and make my dreams come true.",
        "I am going to keep going, whatever comes my way.",
        "I won't quit, even when it's hard.",
        "I am staying positive and looking ahead.",
    ],
)
def test_resolve_said_as_a_mood_is_no_fact(said: str) -> None:
    assert texts(said) == []


def test_a_plan_said_with_keep_is_still_a_fact() -> None:
    assert texts("I'll keep working on my studio until it opens in May.") == [
        "Maria will keep working on their studio until it opens in May"
    ]


def fields(said: str) -> list[tuple[str | None, str | None]]:
    event = Event("ev-1", "t", "a", "s", Role.USER, said, T, {})
    return [(c.field, c.value) for c in extract_offline(event)]


@pytest.mark.parametrize(
    ("said", "value"),
    [
        ("I prefer dogs that do not shed hair.", "dogs that do not shed hair"),
        ("I prefer cafes that are not too noisy.", "cafes that are not too noisy"),
        ("I'd prefer flats that don't face the street.", "flats that do not face the street"),
        ("I prefer green tea, not black tea.", "green tea"),
        ("I prefer trains not planes.", "trains"),
    ],
)  # fmt: skip
def test_a_preferred_thing_keeps_the_not_of_its_own_clause(said: str, value: str) -> None:
    """ "not" after an auxiliary negates the thing's clause; it is not the alternative."""
    ((_field, got),) = fields(said)
    assert got == value


def test_a_preferred_thing_ends_before_a_second_stance() -> None:
    ((_field, value),) = fields("I prefer hands-on workshops and dislike long lectures.")
    assert value == "hands-on workshops"


@pytest.mark.parametrize(
    ("said", "field"),
    [
        ("I really dislike museums that charge a lot of money for entry.",
         "likes:museums_that_charge_a_lot_of_money_for_entry"),
        ("I hate podcasts that go on for more than an hour.",
         "likes:podcasts_that_go_on_for_more_than_an_hour"),
        ("I can't stand hiking trails that are crowded with tourists on weekends.",
         "likes:hiking_trails_that_are_crowded_with_tourists_on_weekend"),
    ],
)  # fmt: skip
def test_a_like_key_ends_on_a_word_of_the_thing(said: str, field: str) -> None:
    ((got, _value),) = fields(said)
    assert got == field


def test_a_long_key_is_cut_between_words_and_ends_on_one_of_the_thing() -> None:
    ((field, _value),) = fields(
        "I strongly dislike documentaries that spend a lot of time on interviews or old footage."
    )
    assert field == "likes:documentaries_that_spend_a_lot_of_time_on_interview"


@pytest.mark.parametrize(
    "said", ["I like this one too.", "I love that one as well!", "I enjoy those too."]
)
def test_a_liked_pronoun_with_a_trailing_too_stores_nothing(said: str) -> None:
    assert texts(said) == []


@pytest.mark.parametrize(
    "said", ["I'll keep ya posted!", "Love u, talk soon.", "I'm so proud of ur progress.",
             "I wish y'all the best."],
)  # fmt: skip
def test_a_remark_to_the_listener_in_chat_spelling_stores_nothing(said: str) -> None:
    assert texts(said) == []


def test_the_initials_of_a_country_are_not_the_listener() -> None:
    assert texts("I moved to the U.S. in 2019.") == ["Maria moved to the U.S. in 2019"]


def test_an_aside_to_the_listener_is_not_part_of_the_record() -> None:
    assert texts("I finally built a treehouse for the kids, take a look!") == [
        "Maria finally built a treehouse for the kids"
    ]


def test_a_leading_ya_is_a_yes() -> None:
    assert texts("Ya I ran my first half marathon last week.") == [
        "Maria ran their first half marathon last week"
    ]


@pytest.mark.parametrize(
    "said", ["I'm a huge fan of it, that's why I go.", "I love the smell of it.",
             "I'm really proud of them."],
)  # fmt: skip
def test_a_thing_named_only_as_of_it_stores_nothing(said: str) -> None:
    assert texts(said) == []


def test_a_thing_of_a_named_thing_is_kept() -> None:
    assert texts("I love the smell of fresh bread.") == ["Maria loves the smell of fresh bread"]


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("I live in the U.S.", "Maria lives in the U.S."),
        ("My flight lands at 9 a.m.", "Maria's flight lands at 9 a.m."),
        ("I work in Washington D.C.", "Maria works in Washington D.C."),
        ("I live in the US.", "Maria lives in the US"),
    ],
)  # fmt: skip
def test_initials_at_the_end_keep_their_last_dot(said: str, text: str) -> None:
    assert texts(said) == [text]


def test_a_place_in_initials_is_stored_whole() -> None:
    event = Event("ev-1", "t", "a", "s", Role.USER, "I moved to L.A. last year.", T,
                  {"speaker": "Maria"})  # fmt: skip
    (c,) = extract_offline(event)
    assert (c.field, c.value) == ("home", "L.A.")
    (c,) = extract_offline(replace(event, text="I live in the U.S."))
    assert c.value == "U.S."


@pytest.mark.parametrize(
    "said",
    [
        "I love the thought Nate!",
        "I love that idea Caroline.",
        "I love that idea Caroline, let's do it.",
        "I really like that plan.",
        "I love the idea.",
    ],
)
def test_liking_what_the_listener_just_said_stores_nothing(said: str) -> None:
    assert texts(said, speaker="Joanna") == []


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("I love the idea of moving to Porto.", "Joanna loves the idea of moving to Porto"),
        ("I love the sound of rain.", "Joanna loves the sound of rain"),
        ("I prefer the plan with the earlier flight.",
         "Joanna prefers the plan with the earlier flight"),
    ],
)  # fmt: skip
def test_an_idea_or_plan_that_says_what_it_is_is_kept(said: str, text: str) -> None:
    assert texts(said, speaker="Joanna") == [text]


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("We have a dog named Rex.", "The user says they have a dog named Rex"),
        ("We live in Porto.", "The user says they live in Porto"),
    ],
)  # fmt: skip
def test_we_without_a_speaker_stays_the_users_statement(said: str, text: str) -> None:
    assert texts(said, speaker=None) == [text]  # not "They have a dog": who are they?


def test_a_decomposed_accent_is_kept() -> None:
    said = "I live in Malmo\u0308."  # "o" and a combining diaeresis, as some keyboards send it
    (c,) = extract_offline(Event("ev-1", "t", "a", "s", Role.USER, said, T, {"speaker": "Maria"}))
    assert (c.text, c.value) == ("Maria lives in Malm\u00f6", "Malm\u00f6")
