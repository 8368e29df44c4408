"""Query understanding: the dates and speaker names a recall query carries.

Pure functions of text (`remem.recall.query`); the engine's use of them is
tested in `test_recall_ranking.py`.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from remem.recall.query import Span, has_content, time_spans, understand, with_speakers


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("What did Gina find on 1 February, 2023?", day(2023, 2, 1), day(2023, 2, 2)),
        ("What did he show on October 13, 2023?", day(2023, 10, 13), day(2023, 10, 14)),
        ("plans made on the 3rd of March 2024", day(2024, 3, 3), day(2024, 3, 4)),
        ("what happened on Sept. 9th, 2022", day(2022, 9, 9), day(2022, 9, 10)),
        ("what happened on 2023-10-13?", day(2023, 10, 13), day(2023, 10, 14)),
        ("What did Maria start in December 2023?", day(2023, 12, 1), day(2024, 1, 1)),
        ("trips in June 2022", day(2022, 6, 1), day(2022, 7, 1)),
        ("How often did she swim in 2023?", day(2023, 1, 1), day(2024, 1, 1)),
    ],
)
def test_a_named_date_becomes_a_span_and_leaves_the_word_query(
    text: str, start: datetime, end: datetime
) -> None:
    q = understand(text)
    assert q.spans == (Span(start, end),)
    assert q.in_span(start) and not q.in_span(end)
    for word in ("2022", "2023", "2024", "October", "December", "June"):
        assert word not in q.words
    assert q.text == text  # the query vector still embeds what was asked


def test_a_month_without_a_year_is_that_month_of_any_year() -> None:
    q = understand("When did Melanie go camping in June?")
    assert q.spans == (Span(month=6),)
    assert q.in_span(day(2021, 6, 30)) and q.in_span(day(2023, 6, 1))
    assert not q.in_span(day(2023, 7, 1))
    assert "June" not in q.words and "camping" in q.words


@pytest.mark.parametrize(
    "text",
    [
        "May I ask what you painted?",  # "may" is also a verb
        "Did we march 20 miles?",
        "what did we eat in Jan's house",  # a month alone must be spelt out
        "the 2023 budget",  # a bare year is a word, not a time
        "notes from 31 February 2023",  # no such day
    ],
)
def test_what_is_not_a_date_stays_a_word(text: str) -> None:
    q = understand(text)
    assert q.spans == ()
    assert q.words == text


def test_a_query_that_is_only_a_date_keeps_its_words() -> None:
    q = understand("On 13 October 2023?")
    assert q.spans and q.words == "On 13 October 2023?"
    spans, rest = time_spans("On 13 October 2023?")
    assert spans == list(q.spans) and not has_content(rest)


def test_naive_times_are_read_as_utc() -> None:
    assert Span(day(2023, 1, 1), day(2023, 1, 2)).holds(datetime(2023, 1, 1, 12))


def test_a_speaker_the_query_names_leaves_the_word_query() -> None:
    q = with_speakers(understand("What has Melanie painted?"), {"Melanie", "Caroline"})
    assert q.speakers == {"melanie"}
    assert q.words == "What has painted"
    assert q.said_by_named("Melanie") and q.said_by_named("MELANIE")
    assert not q.said_by_named("Caroline") and not q.said_by_named(None)


def test_a_speaker_is_named_by_any_word_of_their_name() -> None:
    q = with_speakers(understand("what did jon say about the bakery"), {"Jon Smith", "Gina"})
    assert q.speakers == {"jon smith"}
    assert "jon" not in q.words.split()


def test_names_stay_words_when_nothing_else_is_left() -> None:
    q = with_speakers(understand("Melanie?"), {"Melanie"})
    assert q.speakers == {"melanie"} and q.words == "Melanie?"
    q = with_speakers(understand("What did Melanie do?"), {"Melanie"})
    assert q.words == "What did Melanie do?"  # only function words would be left


def test_nobody_named_changes_nothing() -> None:
    q = understand("What has Melanie painted?")
    assert with_speakers(q, {"Caroline"}) is q
    assert with_speakers(q, set()) is q


def test_dates_and_names_together() -> None:
    q = with_speakers(
        understand("What painting did Melanie show Caroline on October 13, 2023?"),
        {"Melanie", "Caroline"},
    )
    assert q.speakers == {"melanie", "caroline"}
    assert q.words.split() == ["What", "painting", "did", "show", "on"]
    assert q.explain() == {
        "words": q.words,
        "time_spans": ["2023-10-13 to 2023-10-14 (exclusive)"],
        "speakers": ["caroline", "melanie"],
    }


@pytest.mark.parametrize(
    ("text", "speakers", "embedded"),
    [
        ("What did Melanie paint?", ["Melanie", "Caroline"], "What did someone paint?"),
        ("What is Melanie's dog called?", ["Melanie"], "What is someone's dog called?"),
        ("Did Gina and Jon meet?", ["Gina Park", "Jon"], "Did someone and someone meet?"),
        ("When did MELANIE move?", ["Melanie"], "When did someone move?"),
        # not a speaker of the scope: the name is the question's meaning
        ("What did Melanie paint?", ["Caroline"], "What did Melanie paint?"),
        ("What did Melanie paint?", [], "What did Melanie paint?"),
        # nothing but a name: it stays, as it stays in the word query
        ("Melanie?", ["Melanie"], "Melanie?"),
    ],
)
def test_the_query_vector_embeds_the_question_without_its_speakers_names(
    text: str, speakers: list[str], embedded: str
) -> None:
    q = with_speakers(understand(text), speakers)
    assert q.embedded == embedded
    assert q.text == text
