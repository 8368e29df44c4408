"""A user's turn built to make the offline extractor's regexes slow gets bounded work.

A turn may hold up to `MAX_EVENT_CHARS` (100,000) characters. The sentence splitter
(`remem.extract.offline.text.sentences`), the instructions on how to answer
(`style_facts`) and money being tight (`rule_money`) must spend CPU in proportion to
it: no regex that backtracks over what it already read. Each case is timed in CPU
seconds of this process, not wall time (the machine is shared); a linear pass over
100,000 characters takes about 0.1 s here, so a bound of 2 s leaves room for load
while the quadratic or exponential shapes take a minute or more."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from remem.extract import extract_offline
from remem.extract.offline.changes import rule_instead
from remem.extract.offline.chat import (
    laughed_off,
    momentary,
    uncleft,
    with_owner,
    without_chatter,
)
from remem.extract.offline.generic import goes_on_to_a_stance
from remem.extract.offline.money import rule_budget_limit, rule_money
from remem.extract.offline.named import introduced
from remem.extract.offline.prefs import rule_judged
from remem.extract.offline.style import style_facts
from remem.extract.offline.text import MAX_TURN, sentences
from remem.model import Event, Role
from remem.writes.checks import MAX_EVENT_CHARS
from tests.support.slow import BOUND_S, cpu, filled

T = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        filled("Dr. "),  # each part an abbreviation: the sentence never ends
        filled("a.b. "),  # initials, each followed by more of the sentence
        filled("a.", "x"),  # one part of initials that end in something else
        filled("Bullets please "),
        filled("give me the answer "),
        filled("no long "),
    ],
    ids=["abbreviations", "initials", "one-word-initials", "polite", "first", "length"],
)
def test_a_turn_built_to_be_slow_is_read_in_linear_time(text: str) -> None:
    assert len(text) <= MAX_EVENT_CHARS
    assert cpu(lambda: style_facts(text)) < BOUND_S
    assert cpu(lambda: sentences(text)) < BOUND_S


def test_sentences_still_keep_abbreviations_and_initials_inside_a_sentence() -> None:
    said = "I saw Dr. Lee in the U.S. in 2019. Then I moved. Ask Mr. Smith at 9 a.m. tomorrow."
    assert sentences(said) == [
        "I saw Dr. Lee in the U.S. in 2019.",
        "Then I moved.",
        "Ask Mr. Smith at 9 a.m. tomorrow.",
    ]


@pytest.mark.parametrize(
    "clause",
    [
        "I am " + "really  " * 13 + "x",  # adverbs with two spaces: each split two ways
        "money is " + "very  " * 13 + "x",
        "I am " + "really " * 12_000 + "x",
        "money is " + "truly " * 12_000 + "x",
        "we are " + "a" * 99_000 + "ly x",
    ],
    ids=["adverbs-spaced", "money-adverbs-spaced", "adverbs", "money-adverbs", "long-word"],
)
def test_money_being_tight_is_read_in_linear_time(clause: str) -> None:
    assert cpu(lambda: rule_money(clause)) < BOUND_S


def test_a_run_of_adverbs_is_read_in_linear_time() -> None:
    """Each of "really" was read two ways (named, and as any word in -ly): 18 of them
    before a word that ends no rule took 35 s, each two more four times that."""
    event = Event("ev-1", "acme", "u42", "s1", Role.USER, "I'm " + "really " * 18 + "x", T, {})
    assert cpu(lambda: extract_offline(event)) < BOUND_S


@pytest.mark.parametrize(
    "clause",
    [
        "I find " + "very " * 4_000 + "x",  # degree words before no judgement
        "I find " + "x " * 40_000 + "y",
        "I have a red bike" + " and a blue car" * 6_000,
        "I have a red bike" + ", so I really" * 6_000,
    ],
    ids=["judged-degrees", "judged-words", "goes-on-and", "goes-on-so"],
)
def test_a_stance_after_a_fact_and_a_judgement_are_read_in_linear_time(clause: str) -> None:
    assert cpu(lambda: rule_judged(clause)) < BOUND_S
    assert cpu(lambda: goes_on_to_a_stance(clause)) < BOUND_S


@pytest.mark.parametrize(
    "said",
    [
        "actually " * 30 + "it is x, not ;",  # each "actually" split its space two ways
        "wait " * 30 + "I meant x not ;",
        filled("sorry, ", "I meant x not ;"),
        filled("no - ", "make that a, not b c d e f"),
        "actually it is " + "x " * 20_000 + "not " + "y " * 20_000,
    ],
    ids=["oops", "oops-spaced", "sorry", "no", "long"],
)
def test_a_word_put_right_is_looked_for_in_linear_time(said: str) -> None:
    """A run of "actually" before a correction that fails to match took twice as long with
    each word (22 of them: 7 s) until each was read whole."""
    before = Event("ev-0", "acme", "u42", "s1", Role.USER, "My class is on x days", T, {})
    event = Event("ev-1", "acme", "u42", "s1", Role.USER, said, T, {})
    assert cpu(lambda: extract_offline(event, [before])) < BOUND_S


@pytest.mark.parametrize(
    "text",
    [
        filled("my sister Ana "),  # one introduction after another
        filled("my little sister, "),  # relations without a name
        filled("Ana, my "),
        filled("A" + "a" * 9_000 + ", my x "),  # a long capitalised word before a comma
        "".join(f"my sister {chr(65 + n % 26)}{chr(97 + n // 26 % 26) * 3}. " for n in range(5000)),
        filled("She is here. ", "My sister Ana came. She is here."),  # many a "she"
        "My sister Ana met " + filled("Laura and ") + "x. She is here.",
        filled("I have a sister named Ana "),  # "I have a <relation> named <Name>"
        filled("I have also have got a "),
        filled("my son's name is "),
    ],
    ids=[
        "intros",
        "relations",
        "appositions",
        "long-word",
        "many-names",
        "pronouns",
        "others",
        "named",
        "have",
        "name-is",
    ],
)
def test_people_introduced_by_name_are_read_in_linear_time(text: str) -> None:
    """`remem.extract.offline.named`: who the speaker introduced, and a clause about them."""
    assert cpu(lambda: introduced([text])) < BOUND_S
    before = Event("ev-0", "acme", "u42", "s1", Role.USER, text, T, {})
    said = "Ana is here. She is here."
    event = Event("ev-1", "acme", "u42", "s1", Role.USER, said, T, {})
    assert cpu(lambda: extract_offline(event, [before])) < BOUND_S


@pytest.mark.parametrize(
    "clause",
    [
        filled("lol "),  # filler all the way back
        filled("x so "),  # a "so" before every word
        filled("!" * 50 + " ", "x"),  # long words of punctuation, none at the end
        filled("\U0001f602"),  # emoji all the way back
        filled("and stuff ", "I"),
        "I am the one " + "of the " * 14_000 + "x",  # a cleft that never says "who"
        "my sister " + "rose " * 19_000 + "x",  # a name that never reaches a verb
        filled("gf bf sis bro "),  # chat words, spelt out
    ],
    ids=["fillers", "so", "punctuation", "emoji", "phrases", "cleft", "names", "chat-words"],
)
def test_chat_style_is_read_in_linear_time(clause: str) -> None:
    """`remem.extract.offline.chat`, and the chat words `sentences` spells out."""
    assert cpu(lambda: without_chatter(clause)) < BOUND_S
    assert cpu(lambda: with_owner(clause)) < BOUND_S
    assert cpu(lambda: uncleft(clause)) < BOUND_S
    assert cpu(lambda: (laughed_off(clause), momentary(clause))) < BOUND_S
    assert cpu(lambda: sentences(clause)) < BOUND_S


@pytest.mark.parametrize(
    "clause",
    [
        "keep it under " + "please " * 14_000 + "x",
        "nothing over £1" + " max" * 24_000 + " x",
        "£1 for the " + "x " * 49_000,
        "I am doing the " + "x " * 20_000 + "instead of " + "y " * 20_000 + "z",
        "I switched from " + "x " * 24_000 + "to " + "y " * 24_000,
    ],
    ids=["limit-words", "limit-tail", "limit-for", "instead", "switched-from"],
)
def test_a_budget_limit_and_a_choice_instead_are_read_in_linear_time(clause: str) -> None:
    assert cpu(lambda: rule_budget_limit(clause)) < BOUND_S
    assert cpu(lambda: rule_instead(clause)) < BOUND_S


@pytest.mark.parametrize(
    ("before", "reply", "said"),
    [
        ("My sister Ana lives in Bristol.", "Noted.", "My sister Ana " + filled("really ")),
        ("My friend Sam is here.", filled("Sam likes Leeds. "), "They live in Leeds."),
        ("My friend Sam is here.", filled("Oh, Sam "), "They live in Leeds."),
        ("My son Leo is 9.", "Noted.", filled("I think ", "Leo is 9.")),
        ("My son Leo is 9.", "Noted.", filled("turns out ", "Leo is 9.")),
        ("Ana, my sister, is here.", "Noted.", filled("Ana, my sister, ", "is here.")),
        ("My friend Sam is here. " + filled("Sam likes cats "), "Ok.", "They live in Leeds."),
    ],
    ids=["adverbs", "long-reply", "reply-names", "hedges", "lead-ins", "appositions", "plurals"],
)
def test_a_named_person_s_facts_are_read_in_linear_time(before: str, reply: str, said: str) -> None:
    """`remem.extract.offline.theirs` and the pronoun of the next turn (`People.across`)."""
    turns = [
        Event("ev-0", "acme", "u42", "s1", Role.USER, before, T, {}),
        Event("ev-1", "acme", "u42", "s1", Role.ASSISTANT, reply, T, {}),
    ]
    event = Event("ev-2", "acme", "u42", "s1", Role.USER, said, T, {})
    assert cpu(lambda: extract_offline(event, turns)) < BOUND_S


def _turn(head: str, unit: str, tail: str) -> str:
    """`head`, `unit` repeated, `tail`: a turn of `MAX_TURN` characters, the longest the
    offline extractor reads (a longer one is pasted text)."""
    return head + unit * ((MAX_TURN - len(head) - len(tail)) // len(unit)) + tail


@pytest.mark.parametrize(
    "turn",
    [
        _turn("My husband is ", "really ", "vegetarian"),
        _turn("My husband is ", "really ", "x"),
        _turn("Our kids are ", "x ", "coeliac"),
        _turn("My little sister's ", "favourite ", "x"),
    ],
    ids=["adverbs", "adverbs-nothing", "plural", "possessive"],
)
def test_an_unnamed_relation_s_fact_is_read_in_bounded_time(turn: str) -> None:
    """`remem.extract.offline.theirs.relation_fact` reads the rules again, on the clause as
    the relation's own: within a turn the extractor reads, well under the bound."""
    event = Event("ev-1", "acme", "u42", "s1", Role.USER, turn, T, {})
    assert cpu(lambda: extract_offline(event, [])) < BOUND_S
