"""Which words of an erasure's reason count as repeating what is erased
(`remem.lifecycle.reasons`): content words, case-folded; procedural and function
words, and words under three characters, never do."""

from __future__ import annotations

from remem.lifecycle.reasons import content_words, repeated


def test_content_words_leave_out_the_words_of_a_request() -> None:
    assert content_words("DSR-1042: the user asked to ERASE her data") == ["1042"]
    assert content_words("Dr. Weber, cardiology") == ["weber", "cardiology"]


def test_a_repeated_word_is_found_in_any_case_and_named_by_position() -> None:
    texts = ["Sees Dr. Weber on Fridays", "PIN is 4821"]
    assert repeated("ticket 77: forget WEBER", texts) == [4]
    assert repeated("DSR-4821", texts) == [2]
    assert repeated("user asked to be forgotten, see ticket 77", texts) == []
    assert repeated("dr asked", texts) == []  # "dr": too short to count
