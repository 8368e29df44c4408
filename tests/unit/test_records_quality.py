"""The cut-end check of write quality: a record that ends unfinished is counted and shown."""

from __future__ import annotations

import pytest

from remem.eval.quality import Made, Said, check_records, cut_end


@pytest.mark.parametrize(
    ("text", "end"),
    [
        ("Ana has been swamped with exams -", "-"),
        ("Ana has been swamped with exams \u2014", "\u2014"),
        ("Ana should buy a bike should not they", "should not they"),
        ("Ana should buy a bike, shouldn't she?", "shouldn't she?"),
        ("Ana bought a kayak and", "and"),
        ("Ana is saving for the", "the"),
    ],
)
def test_unfinished_endings_are_found(text: str, end: str) -> None:
    assert cut_end(text) == end


@pytest.mark.parametrize(
    "text",
    [
        "Ana has been swamped with exams - long days",
        "Ana has friends to play with",
        "Ana thinks so",
        "Ana is a well-known pre-war fan",
        "Ana should not",
    ],
)
def test_whole_statements_pass(text: str) -> None:
    assert cut_end(text) is None


def test_check_records_counts_cut_ends() -> None:
    turns = {"e1": Said("I have been busy - but happy.", "Ana"), "e2": Said("I own a kayak.")}
    made = [Made("r1", "Ana has been busy -", ("e1",)), Made("r2", "Owns a kayak", ("e2",))]
    fig = check_records(made, turns)
    assert fig["cut_ends"] == 1
    assert fig["cut_examples"] == [{"id": "r1", "text": "Ana has been busy -", "end": "-"}]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Girlfriend Rose is vegan", "Gf rose is vegan"),
        ("Little brother works at the depot", "my lil bro works at the depot"),
        ("Favourite colour is teal", "my fave colour is teal"),
        ("Budget is under £150", "keep it under £150"),
    ],
)
def test_chat_words_spelt_out_are_no_unknown_words(text: str, said: str) -> None:
    found = check_records([Made("r1", text, ("e1",))], {"e1": Said(said)})
    assert found["flagged_words"] == 0
