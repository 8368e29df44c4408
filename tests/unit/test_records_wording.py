"""Records keep what was said in good English: which word after "and" is a verb, and tense.

Each case is an invented sentence; the old rule conjugated a noun after "and"
("love and supports"), left a verb bare after a "to" that names a thing ("an
aversion to crowds and prefer"), turned a past "read" into the present,
conjugated a misspelt adverb ("absolutleys love"), kept a question tag
("should not they") or a dangling dash.
"""

from __future__ import annotations

import pytest

from remem.extract.offline.person import third_person
from tests.support.extract import extract


@pytest.mark.parametrize(
    ("said", "record"),
    [
        # a "to" that names a thing, not an action: the verb after "and" is the speaker's
        (
            "I have an aversion to loud, crowded rooms and prefer quiet ones",
            "Ana has an aversion to loud, crowded rooms and prefers quiet ones",
        ),
        (
            "I have an allergy to peanuts and strongly avoid satay",
            "Ana has an allergy to peanuts and strongly avoids satay",
        ),
        ("I go to the gym and play squash", "Ana goes to the gym and plays squash"),
        # a noun after "and" stays a noun
        (
            "I have been blessed with lots of love and support from friends",
            "Ana has been blessed with lots of love and support from friends",
        ),
        ("I like the look and feel of old cars", "Ana likes the look and feel of old cars"),
        (
            "I struggled at work, and support I got was great",
            "Ana struggled at work, and support they got was great",
        ),
        # a verb that hangs on a modal, or on another clause's subject, stays bare
        ("I will keep trying and stay calm", "Ana will keep trying and stay calm"),
        (
            "I love board games, they are a fun pastime and get me thinking",
            "Ana loves board games, they are a fun pastime and get them thinking",
        ),
        # "read" in the past stays in the past
        ("I recently read a novel about whales", "Ana recently read a novel about whales"),
        ("I read that novel and loved it", "Ana read that novel and loved it"),
        # a misspelt or informal adverb is still an adverb: the verb after it is conjugated
        ("I absolutley love jigsaw puzzles", "Ana absolutley loves jigsaw puzzles"),
        ("I kinda prefer tea", "Ana kinda prefers tea"),
        # a question tag is not part of the statement; a clause cut before "- but" ends whole
        ("I really should buy a bike shouldn't I", "Ana really should buy a bike"),
        (
            "I have been swamped with exams - long days -",
            "Ana has been swamped with exams - long days",
        ),
    ],
)
def test_words_after_and_keep_their_part_of_speech(said: str, record: str) -> None:
    assert third_person(said, "Ana") == record


@pytest.mark.parametrize(
    ("said", "record"),
    [
        ("I dislike tea and prefer coffee", "Ana dislikes tea and prefers coffee"),
        ("I love swimming and hate running", "Ana loves swimming and hates running"),
        ("I read a book every night", "Ana reads a book every night"),
        ("I want to cook and bake", "Ana wants to cook and bake"),
        ("I am allergic to wool and avoid it", "Ana is allergic to wool and avoids it"),
        ("I mean love is all you need", "Ana means love is all you need"),
        ("I rely on buses", "Ana relies on buses"),
        # a negated modal: the verb after "and" says what the speaker does
        ("I cannot stand jazz and avoid clubs", "Ana cannot stand jazz and avoids clubs"),
        ("I will not eat meat and prefer beans", "Ana will not eat meat and prefers beans"),
    ],
)
def test_verbs_joined_to_the_speakers_verb_are_still_conjugated(said: str, record: str) -> None:
    assert third_person(said, "Ana") == record


def _texts(said: str) -> list[str]:
    return [c.text for c in extract(said)]


@pytest.mark.parametrize(
    "said",
    [
        "I use it to plan my week",  # "it" before a purpose: which thing, the turn does not say
        "I love holding them",
        "I really love seeing her smile",
    ],
)
def test_a_thing_or_person_named_only_by_a_pronoun_stores_nothing(said: str) -> None:
    assert _texts(said) == []


@pytest.mark.parametrize(
    ("said", "record"),
    [
        ("I made it to the final last year", "Made it to the final last year"),
        ("I bought a kayak and use it to fish", "Bought a kayak and uses it to fish"),
        ("I love hiking with my dogs", "Loves hiking with their dogs"),
    ],
)
def test_a_pronoun_that_stands_for_something_named_keeps_the_record(said: str, record: str) -> None:
    assert record in _texts(said)
