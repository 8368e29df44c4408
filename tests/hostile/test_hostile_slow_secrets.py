"""A text built to make the secret detectors slow gets bounded work, and loses no redaction.

Every stored string is screened (`remem.policy.dataclasses.find_secrets`) and an event
may hold `MAX_EVENT_CHARS` (100,000) characters. Two shapes took time in the square of
the length: a run of digit groups that ends in a letter (" 1 1 1 ... 1x": the card
detector read the run again from each of its groups), and a label repeated in its own
value ("pass=pass=pass=...", "password:password:...": each label read the value to the
end). Each case is timed in CPU seconds of this process, not wall time (the machine is
shared); a linear scan of 100,000 characters takes well under a second here, so a
bound of 2 s leaves room for load while the quadratic shapes took a minute or more.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.policy.dataclasses import find_secrets, redact
from remem.writes.checks import MAX_EVENT_CHARS
from tests.support.slow import BOUND_S, cpu, filled

KEY = "sk9Zq2Lm8Rt4Vx7Bn3Kp6Wd1Hj5Fg0Ys"  # 32 characters of a made-up key


@pytest.mark.parametrize(
    "text",
    [
        filled(" 1", "x"),  # digit groups that end in a letter: no card, read once
        filled("-1", "x"),
        filled("12 ", "x"),
        filled("pass="),  # a label whose value is the next label, to the end
        filled("password:"),
        filled("pw=\u201c"),  # a quote opened after each label, never closed
        filled("passphrase: "),
        filled("api_key="),
        filled("token="),
    ],
    ids=[
        "spaced-digits",
        "dashed-digits",
        "digit-triples",
        "pass",
        "password",
        "quote",
        "passphrase",
        "api-key",
        "token",
    ],
)
def test_a_text_built_to_be_slow_is_screened_in_linear_time(text: str) -> None:
    assert len(text) <= MAX_EVENT_CHARS
    assert cpu(lambda: find_secrets(text)) < BOUND_S


def test_a_long_stated_value_is_redacted_to_its_end() -> None:
    # a value longer than the detectors read after its label is still a secret, and
    # its redaction still covers all of it
    long_key = KEY * 40  # 1,280 characters
    text = f"my api key: {long_key} and nothing else"
    assert redact(text) == "my api key: [REDACTED:api_key] and nothing else"
    repeated = f"token={long_key}token={long_key} ok"
    assert redact(repeated) == "token=[REDACTED:access_token] ok"


def test_a_card_after_a_run_that_ends_in_a_letter_is_still_found() -> None:
    text = "ref 1 2 3 4x and card 4111 1111 1111 1111 here"
    (found,) = find_secrets(text)
    assert text[found.start : found.end] == "4111 1111 1111 1111"
    assert find_secrets("1 2 3 4111 1111 1111 1111x") == []  # one run, into a word


def test_an_event_built_to_be_slow_is_kept_at_once(tmp_path: Path) -> None:
    text = filled("pass=", "pass=" + KEY)
    with Memory.open(str(tmp_path / "m.db"), embedder=HashEmbedder()) as mem:
        spent = cpu(lambda: mem.add_event(actor="ana", session="s1", role="user", text=text))
        (event,) = mem.events(actor="ana", session="s1")
    assert spent < 4 * BOUND_S
    assert KEY not in event.text and "[REDACTED:password]" in event.text
