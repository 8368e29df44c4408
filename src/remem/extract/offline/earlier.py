"""A turn read against the earlier turns of its session, for the offline extractor.

Two things a turn says only with what came before it: a bare "yes" / "no" /
"not anymore" is the answer to the assistant's yes/no question right before it
("Are you still vegetarian?" - "not anymore"), and a word put right ("actually
it's Tuesday, not Monday") corrects the latest statement of the speaker's that
holds the word. Pure functions of the events; the statement put right is read
again with the extractor the caller passes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from remem.extract.offline.fact import Fact
from remem.extract.offline.rules import rule_facts
from remem.extract.offline.said import strip_end
from remem.extract.offline.text import normalise, sentences
from remem.model import Candidate, Event, Role

__all__ = ["answer_facts", "put_right", "said_before"]

_I = re.IGNORECASE

Extract = Callable[[Event, Sequence[Event]], list[Candidate]]


def said_before(event: Event, context: Sequence[Event]) -> list[Event]:
    """The turns of `context` said before `event` (at its time or earlier, itself left out)."""
    return [e for e in context if e.time <= event.time and e.id != event.id]


# -- a word of an earlier statement put right --------------------------------------------

# "actually it's Tuesday, not Monday", "sorry, I meant the 5th, not the 1st": the new word,
# then the one it replaces; what follows a comma is the reason ("they changed it"). Each
# "sorry," is taken whole (an atomic group, separators possessive): with the separators
# free to split a run of spaces, "actually actually ... it is x, not" took seconds per word
# more to fail (2026-12-07)
_OOPS = r"(?>(?:actually|sorry|oops|whoops|wait|nope|no|correction|my\s+bad)\b[\s,:;.!-]*+)"
_PUT_RIGHT = (
    rf"(?:{_OOPS}+(?:it|that)\s+(?:is|was|should\s+be|will\s+be)"
    rf"|{_OOPS}*(?:I\s+meant|I\s+mean|make\s+(?:that|it)))\s+"
    r"(?P<new>[^,;]{1,40}?)\s*,?\s+not\s+(?P<old>[^,;]{1,40}?)(?:\s*[,;-]\s+.*)?"
)
EARLIER_TURNS = 8  # the speaker's latest turns a word put right is looked for in


def put_right(
    event: Event, context: Sequence[Event], extract: Extract
) -> tuple[str, tuple[Fact, bool, bool]] | None:
    """A correction of one word of the speaker's latest statement that holds it: that
    statement again, with the word put right ("My yoga class is on Monday evenings" and
    "actually it's Tuesday not Monday" -> "Yoga class is on Tuesday evenings"), on the
    same field so it replaces the one put right; with the id of the turn put right, which
    the record also comes from (the correction alone says too little to stand for it)."""
    if not re.search(r"\bnot\s", event.text, _I):  # most turns: no word is put right
        return None
    earlier = [e for e in said_before(event, context) if e.role == Role.USER]
    for sentence in sentences(event.text):
        m = re.fullmatch(_PUT_RIGHT, " ".join(strip_end(sentence)[0].split()), _I)
        if not m or m["old"].casefold() == m["new"].casefold():
            continue
        old = rf"(?<!\w){re.escape(m['old'])}(?!\w)"
        for prior in sorted(earlier, key=lambda e: e.time, reverse=True)[:EARLIER_TURNS]:
            before = [e for e in context if e.time < prior.time]
            for c in extract(prior, before):
                if not re.search(old, c.text, _I):
                    continue
                text = re.sub(old, m["new"], c.text, flags=_I)
                value = None if c.value is None else re.sub(old, m["new"], c.value, flags=_I)
                return prior.id, (Fact(text, c.kind, c.field, value, c.sensitivity), False, True)
    return None


# -- bare answers to the assistant's yes/no question -------------------------------------

_YES = (
    r"(?:yes|yeah|yep|yup|ya|yea|sure|correct|right|that\s+is\s+(?:right|correct)|exactly|indeed"
    r"|of\s+course|absolutely|definitely|I\s+(?:still\s+)?(?:am|do|have)|still)"
    r"(?:[\s,]+(?:I\s+(?:still\s+)?(?:am|do|have)|still|it\s+is|that\s+is\s+right))*"
)
_NO = (
    r"(?:no|nope|nah|not\s+really|not\s+any\s*more|no\s+longer|not\s+at\s+all|I\s+am\s+not"
    r"|I\s+do\s+not|I\s+have\s+not|not\s+now)(?:[\s,]+(?:I\s+am\s+not|I\s+do\s+not|I\s+have\s+not"
    r"|not\s+any\s*more|any\s*more|no\s+longer|not\s+really))*"
)


def answer_facts(
    event: Event, context: Sequence[Event]
) -> tuple[str, list[tuple[Fact, bool, bool]]] | None:
    """Read a bare yes / no as a statement, from the assistant's question right before it;
    with the id of the question, which the record also comes from (the answer alone holds
    none of what it says: erasing the record must empty the question too)."""
    answer, _ = strip_end(" ".join(normalise(event.text).split()))
    positive = re.fullmatch(_YES, answer, _I) is not None
    negative = re.fullmatch(_NO, answer, _I) is not None
    earlier = said_before(event, context)
    if not (positive or negative) or not earlier:
        return None
    last = max(enumerate(earlier), key=lambda p: (p[1].time, p[0]))[1]
    questions = [q for q in sentences(last.text) if q.rstrip().endswith("?")]
    if last.role != Role.ASSISTANT or not questions:
        return None
    q, _ = strip_end(questions[-1])
    q = re.sub(
        r"^(?:(?:so|and|ok(?:ay)?|great|got\s+it|also|just\s+to\s+confirm|quick\s+question)[\s,:-]+)+",
        "",
        q,
        flags=_I,
    )
    still = re.search(r"\bstill\b", q, _I) is not None
    gone = re.search(r"\b(?:any\s*more|no\s+longer)\b", answer, _I) is not None
    tail = " anymore" if negative and (still or gone) else ""
    statements: list[str] = []
    if m := re.fullmatch(r"(?:are|were)\s+you\s+(?:still\s+)?(?P<x>.+)", q, _I):
        statements = [f"I am {m['x']}" if positive else f"I am not {m['x']}{tail}"]
    elif m := re.fullmatch(r"do\s+you\s+(?:still\s+)?(?P<x>.+)", q, _I):
        statements = [f"I {m['x']}" if positive else f"I do not {m['x']}{tail}"]
    elif m := re.fullmatch(r"have\s+you\s+(?:got\s+)?(?P<x>.+)", q, _I):
        statements = [f"I have {m['x']}" if positive else f"I do not have {m['x']}"]
    elif positive and (m := re.fullmatch(r"is\s+your\s+(?P<x>.+)", q, _I)):
        words = m["x"].split()
        statements = [
            f"my {' '.join(words[:k])} is {' '.join(words[k:])}"
            for k in range(1, min(4, len(words)))
        ]
    for statement in statements:
        if re.search(r"\b(?:you|your|anything|something|what|which)\b", statement, _I):
            continue
        facts = [f for f in rule_facts(statement) if f.field is not None]
        if facts:
            correction = bool(tail) or any(f.change for f in facts)
            return last.id, [(f, False, correction) for f in facts]
    return None
