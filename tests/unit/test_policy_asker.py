"""Which questions ask for a fact about the asker (`remem.policy.asker`)."""

from __future__ import annotations

import pytest

from remem.policy.asker import about_asker


@pytest.mark.parametrize(
    "text",
    [
        "What do I do for a living?",
        "Who am I living with these days?",
        "What's my other half called again?",
        "Which team do I follow",
        "Do I have any pets?",
        "where\u2019s home for us now?",
        "Remind me what my sister's kids are called",
        "My birthday's next month, any ideas for a night out?",
    ],
)
def test_a_question_for_a_fact_about_the_asker_is_one(text: str) -> None:
    assert about_asker(text)


@pytest.mark.parametrize(
    "text",
    [
        "What is the capital of Australia?",  # names no asker
        "When should I blow out the sprinkler lines?",  # advice: a modal
        "Got charged for a subscription I never ordered. Can I get the money back?",
        "How do I turn a PDF into a Word document?",  # a method
        "explain heat pumps to me",  # not a question
        "Remind me when the library closes?",  # "remind me" asks nothing about me
        "I'm vegan now.",  # a statement
        "Any good way to teach myself touch typing?",  # "myself" asks for no fact
    ],
)
def test_advice_knowledge_and_statements_are_not(text: str) -> None:
    assert not about_asker(text)
