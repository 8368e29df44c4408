"""An update goes before what it updates: the newer state first in a packet.

People tell an assistant that something changed in passing, in words of their own
("we've both gone fully vegan, no fish anymore", "she got laid off Monday"), while the
earlier state was said plainly ("I'm pescatarian", "she just got promoted") and often
matches a question better: it shares its words, and its replies repeat them. A packet
that holds both but shows the old state first tells the assistant the wrong one.

So, among the first `UPDATE_REACH` items of a packet, an item is moved just before
the first item ranked above it that it updates:

- it says a change (`change_words`: a sentence of it holds "now" (not "Now, ..."),
  "anymore", "no longer", "switched", "gave up", "laid off", "got married" ...), and
  is not a turn of the assistant (what changed in a person's life is theirs to say,
  though an assistant's turn may be what an update goes before);
- that sentence shares a content word with the query (it is about what was asked)
  and `SHARED_WORDS` with the earlier item (about the same thing; the words of
  change, a turn's role and its speaker's name aside: `remem.recall.fusion.content_stems`);
- it was said later, and by the same person when both turns name their speaker
  ("Maria: ...", a conversation between people): one person's news does not update
  what another said.

Only the order changes: what a packet holds, and its size, do not. The reach keeps
the rule to what a reader sees first: a deep packet (an evaluation's k of 100) is not
reshuffled from its tail. Runs and figures: docs/decisions/updates-first.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from remem.model import PacketItem
from remem.recall.fusion import content_stems

UPDATE_REACH = 10  # the first items of a packet among which an update moves

# Words by which a statement says a state changed, or holds no more.
_CHANGE = re.compile(
    r"\bnow\b(?!\s*[,:])|\b(?:anymore|any\s+more|any\s+longer|no\s+longer|these\s+days|from\s+now\s+on"
    r"|instead|switch(?:ed|ing)?|chang(?:ed|ing)|mov(?:ed|ing)\s+(?:to|out|in|back)"
    r"|quit|stopped|gave\s+up|given\s+up|gone|became|become|laid\s+off|let\s+go"
    r"|(?:got|was|been)\s+fired"
    r"|promoted|retired|resigned|dropped|cut\s+out|ditched|replaced|split\s+up|broke\s+up"
    r"|divorced|got\s+(?:married|engaged|a\s+new)|decided|not\s+(?:any|\w+ing)\s+more)\b",
    re.IGNORECASE,
)
_ROLES = ("user", "assistant")
SHARED_WORDS = 2  # the content words an update shares with what it updates, at least


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


# the name a turn of a conversation between people opens with ("Maria: ...")
_SPEAKER = re.compile(r"(?P<who>[A-Z][\w'.-]*(?:\s[A-Z][\w'.-]*)?):\s")


def _said(item: PacketItem) -> str:
    """An item's words without the role and speaker a raw turn opens with ("user: Maria:
    ..."): a speaker's name says who spoke, not what about."""
    text = item.text
    if item.kind == "event":
        role, sep, rest = text.partition(": ")
        if sep and role in _ROLES:
            text = rest
        if m := _SPEAKER.match(text):
            text = text[m.end() :]
    return text


def _speaker(item: PacketItem) -> str | None:
    """Who said a raw turn, when it opens with their name; None otherwise."""
    if item.kind != "event":
        return None
    _, sep, rest = item.text.partition(": ")
    m = _SPEAKER.match(rest) if sep else None
    return m["who"] if m else None


def change_words(item: PacketItem) -> frozenset[str]:
    """The content stems of the sentences of an item that say a change (the words of
    change aside); none for a turn of the assistant, or an item that says no change."""
    if item.kind == "event" and item.text.startswith("assistant: "):
        return frozenset()
    said = [s for s in _SENTENCE_END.split(_said(item)) if _CHANGE.search(s)]
    return content_stems(_CHANGE.sub(" ", " ".join(said))) if said else frozenset()


def updates_first(
    items: Sequence[PacketItem], query: str, reach: int = UPDATE_REACH
) -> list[PacketItem]:
    """The items in order, each update among the first `reach` moved just before the
    first earlier-said item about the same thing ranked before it (see the module)."""
    head, tail = list(items[:reach]), list(items[reach:])
    asked = content_stems(query)
    stems = [content_stems(_said(it)) for it in head]
    for j in range(1, len(head)):
        later = head[j]
        change = change_words(later)
        if not change & asked:
            continue
        for i in range(j):
            earlier = head[i]
            if _speaker(earlier) not in (None, _speaker(later)):
                continue  # one person's change does not update what another said
            if earlier.source_date < later.source_date and len(stems[i] & change) >= SHARED_WORDS:
                head.insert(i, head.pop(j))
                stems.insert(i, stems.pop(j))
                break
    return head + tail
