"""How the person wants to be answered: standing instructions said inside other requests.

"Bullet points please, I read these on my phone", "give me the answer first,
then explain", "keep it short", "no jargon", "reply in Spanish": said once,
usually inside a request about something else, each bears on every later
answer. A sentence of a user's turn that tells the assistant how to answer
becomes a standing preference (`Kind.PREFERENCE`, confirmed: the person said it
outright) with the field `answer_style:<aspect>`, one per aspect:

    format      "bullet points please", "as a numbered list", "in a table"
                -> "Wants answers as bullet points" / "as numbered steps" / "as a table"
    order       "answer first", "your pick first, then the reasons", "lead with
                the verdict", "bottom line up front" -> "Wants the answer first,
                then the explanation"
    length      "keep it short", "long paragraphs kill me", "no walls of text"
                -> "Wants short answers"
    wording     "no jargon", "in plain English", "in simple terms" -> "Wants plain
                words, without jargon"
    tone        "no fluff", "skip the small talk", "be blunt with me" -> "Wants
                direct answers, without small talk"
    language    "answer in Spanish", "reply to me in French" -> "Wants answers in Spanish"

A later instruction on the same aspect supersedes the earlier one. Recall pins
these records into every packet of the person (`remem.recall.instructions`).

Only a turn with no named speaker is read: in a conversation between named
people (`metadata.speaker`) an instruction is said to another person, not to
the assistant. The forms are English phrasings of instructions, not words of a
topic; a sentence that only mentions a list or an answer ("I made a list",
"I answered first") is none.
"""

from __future__ import annotations

import re

from remem.extract.offline.fact import Fact
from remem.extract.offline.text import sentences
from remem.model import Kind
from remem.policy.applies import ANSWER_STYLE

__all__ = ["style_facts"]

_I = re.IGNORECASE
_POLITE = r"(?:\s+(?:please|pls|plz|only|thanks|thx|if\s+you\s+can|if\s+possible))*"
_LEAD_IN = r"^(?:(?:and|also|oh|ok|okay|oh\s+and|btw|ps)[,\s]+)?"

_SHAPES = (
    ("bullet points", r"bullet(?:ed)?(?:\s*(?:points?|list|form))?|bullets|bullet-points"),
    ("numbered steps", r"numbered\s+(?:steps|list|points)|(?:a\s+)?step[- ]by[- ]step\s+list"),
    ("a table", r"(?:a\s+)?table"),
)


# An instruction is the clause's own request of the assistant. Its clause (from the last
# ",;:" or conjunction before it, at most `_HEAD` characters back) makes it none when it
# is negated before the instruction ("do not use bullet points", "never reply in
# Spanish", "no need to keep it short") or when a person other than the assistant does
# it or wants it ("I answer in Spanish at work", "my kids speak in French", "I keep it
# short when I write", "my manager wants everything in bullet points"); the speaker who
# wants, needs or likes it asks for it ("I would like answers in a table", "I hate walls
# of text", "I do not like long paragraphs").
_HEAD = 200
_CLAUSE_START = re.compile(r".*(?:[,;:]|\b(?:and|but|so|then|because|while)\b)\s*", re.I | re.S)
_NEGATED = re.compile(r"\b(?:not|never|no\s+need\s+to|stop)\b", re.I)
_ADVERBS = r"(?:(?:always|usually|often|mostly|really|just|also|only|still|generally)\s+)*"
_DOES_IT = re.compile(
    r"(?:please\s+)?(?:I|we|he|she|they|(?:my|our|his|her|their)\s+\w+)\s+" + _ADVERBS, re.I
)
_WANTS_IT = re.compile(  # the speaker's own want: only "I" or "we"
    r"(?:I|we)\s+" + _ADVERBS + r"(?:would|want|need|prefer|like|love|hate|do\s+not\s+"
    r"(?:like|want)|cannot\s+stand)\b",
    re.I,
)


def _said(pattern: str, s: str, flags: int = _I) -> re.Match[str] | None:
    """The first match of `pattern` in `s` that its clause asks of the assistant (see
    above), or None."""
    for m in re.finditer(pattern, s, flags):
        window = s[max(0, m.start() - _HEAD) : m.start()]
        cut = _CLAUSE_START.match(window)
        head = window[cut.end() :] if cut else window
        clause = head + s[m.start() : m.start() + _HEAD]
        if _NEGATED.search(head):
            continue
        if _DOES_IT.match(clause) and not _WANTS_IT.match(clause):
            continue
        return m
    return None


def _format(s: str) -> str | None:
    for shape, words in _SHAPES:
        alone = rf"{_LEAD_IN}(?:{words}){_POLITE}\s*(?:[,;:.!\-]|$)"  # "Bullets please, ..."
        verb = r"in|as|use|using|with|give\s+me|put\s+it\s+in|format\s+it\s+as"
        asked = rf"\b(?:{verb})\s+(?:{words})\b"
        if shape == "a table":  # "in a table", never "at the table" or "a table for two"
            alone = rf"{_LEAD_IN}(?:as|in)\s+a\s+table{_POLITE}\s*(?:[,;:.!\-]|$)"
            asked = r"\b(?:as|in|into)\s+a\s+table(?=\s*(?:please|pls|[,;:.!?]|$))"
        if _said(alone, s) or _said(asked, s):
            return f"Wants answers as {shape}"
    return None


_FIRST = (
    r"(?:the\s+|your\s+|a\s+)?(?:short\s+|actual\s+|final\s+)?(?:answer|verdict|recommendation"
    r"|bottom\s+line|conclusion|pick|tl;?dr|summary)"
)


def _order(s: str) -> str | None:
    up_front = r"(?:first|up\s+front|at\s+the\s+top)\b"
    if (
        _said(
            rf"{_LEAD_IN}(?:please\s+)?{_FIRST}\s+{up_front}(?=\s*(?:[,;:.!\-]|then|and|please|$))",
            s,
        )
        or _said(rf"\b(?:give|tell|show|send|put)\s+(?:me\s+|us\s+)?{_FIRST}\s+{up_front}", s)
        or _said(rf"\b{_FIRST}\s+first,?\s+(?:and\s+)?then\b", s)
        or _said(rf"\b(?:lead|start|open)\s+with\s+{_FIRST}\b", s)
        or _said(r"\bbottom\s+line\s+up\s+front\b|\bBLUF\b", s, flags=0)
    ) and not re.search(r"\b(?:I|we)\s+(?:always\s+)?(?:answer|gave|give)\b", s, _I):
        return "Wants the answer first, then the explanation"
    return None


def _length(s: str) -> str | None:
    if (
        _said(
            r"\bkeep\s+(?:it|them|answers?|replies|things|this)\s+(?:short|brief|concise|tight)\b",
            s,
        )
        or _said(
            r"\b(?:no|not|hate|without|avoid|do\s+not\s+(?:like|want|send))\s+(?:\w+\s+)?"
            r"(?:long|wordy)\s+(?:paragraphs|answers|replies|responses|explanations|essays)\b",
            s,
        )
        or _said(r"\blong\s+paragraphs\s+(?:kill|lose|bore|annoy)\s+me\b", s)
        or _said(r"\bwalls?\s+of\s+text\b", s)
        or _said(rf"{_LEAD_IN}(?:short|brief|concise)\s+(?:answers|replies){_POLITE}\b", s)
    ):
        return "Wants short answers"
    return None


def _wording(s: str) -> str | None:
    if (
        _said(r"\b(?:no|without(?:\s+the)?|skip\s+the|avoid(?:\s+the)?|less)\s+jargon\b", s)
        or _said(r"\bin\s+plain\s+(?:english|language|words|terms)\b", s)
        or _said(r"\bin\s+(?:simple|layman'?s?|lay|everyday)\s+terms\b", s)
    ):
        return "Wants plain words, without jargon"
    return None


def _tone(s: str) -> str | None:
    if _said(
        r"\b(?:no|skip\s+the|without\s+the|cut\s+the)\s+(?:fluff|waffle|small\s+talk|preamble"
        r"|pleasantries)\b|\bbe\s+(?:blunt|direct|straight)\s+with\s+me\b",
        s,
    ):
        return "Wants direct answers, without small talk"
    return None


_LANGUAGES = (
    "English|Spanish|French|German|Italian|Portuguese|Dutch|Swedish|Norwegian|Danish|Finnish"
    "|Polish|Czech|Greek|Turkish|Russian|Ukrainian|Arabic|Hebrew|Hindi|Urdu|Bengali|Tamil"
    "|Chinese|Mandarin|Cantonese|Japanese|Korean|Vietnamese|Thai|Indonesian|Malay|Swahili"
    "|Tagalog|Romanian|Hungarian|Catalan|Welsh|Irish|Persian|Farsi"
)


def _language(s: str) -> str | None:
    m = _said(
        r"\b(?:answer|reply|respond|write|talk|speak)\s+(?:to\s+me\s+|back\s+)?(?:only\s+)?"
        rf"in\s+(?P<lang>{_LANGUAGES})\b",
        s,
    )
    return f"Wants answers in {m['lang'].capitalize()}" if m else None


_ASPECTS = (
    ("format", _format),
    ("order", _order),
    ("length", _length),
    ("wording", _wording),
    ("tone", _tone),
    ("language", _language),
)


def style_facts(text: str) -> list[Fact]:
    """The standing instructions on how to answer that `text` (a user's turn) gives, one
    per aspect (the first sentence that gives it), in the order of `_ASPECTS`."""
    found: dict[str, Fact] = {}
    for sentence in sentences(text):
        for aspect, read in _ASPECTS:
            if aspect not in found and (said := read(sentence)) is not None:
                value = said.removeprefix("Wants ").removeprefix("answers ")
                found[aspect] = Fact(said, Kind.PREFERENCE, f"{ANSWER_STYLE}{aspect}", value)
    return [found[a] for a, _ in _ASPECTS if a in found]
