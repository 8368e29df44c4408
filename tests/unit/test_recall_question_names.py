"""The names a question asks about, and which of them a memory never heard of
(`remem.recall.floor.names_in`, `unknown_names`): pure cases, apart from
tests/flows/test_recall_strangers.py."""

from __future__ import annotations

import pytest

from remem.recall.floor import names_in, unknown_names


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("When did Caroline go to the support group?", ("Caroline",)),
        ("What is Melanie's dog called?", ("Melanie",)),
        ("Did Jon and Gina meet at the gym?", ("Jon", "Gina")),
        ("Caroline went where?", ()),  # the first word is no name
        ("What did I do in May?", ()),
        ("When did Ana move to Lisbon?", ("Ana",)),  # "to Lisbon" is a place
        ("What did the LGBTQ group do on Monday?", ()),
    ],
)  # fmt: skip
def test_the_names_of_a_question(query: str, names: tuple[str, ...]) -> None:
    assert names_in(query) == names


@pytest.mark.parametrize(
    ("query", "speakers", "texts", "unknown"),
    [
        ("When did Caroline go hiking?", ["Jon", "Gina"], ["Gina went hiking"], ("Caroline",)),
        ("When did Gina go hiking?", ["Jon", "Gina"], [], ()),  # a speaker
        ("What did John say about the gym?", ["Jon", "Gina"], [], ()),  # one letter from Jon
        ("What did Johns's team win?", ["John"], [], ()),  # a slip of the possessive
        ("What did Dario cook?", ["Jon"], ["I met dario at the market"], ()),  # said in a text
        ("What did Dario cook?", ["Jon"], ["I met Mario at the market"], ("Dario",)),
        ("When did Caroline go hiking?", [], ["Went hiking"], ()),  # no speakers: not judged
        ("What did we eat?", ["Jon"], [], ()),
    ],
)  # fmt: skip
def test_which_names_are_strangers(
    query: str, speakers: list[str], texts: list[str], unknown: tuple[str, ...]
) -> None:
    assert unknown_names(query, speakers, texts) == unknown
