"""Who says a turn, who else speaks, and whom the speaker has named, for the offline
extractor: `metadata.speaker` read as a name (`speaker_of`), the session's other
speakers (`listeners_of`), the people the speaker introduced by name
(`people_of`, `remem.extract.offline.named`) and the sentence a pronoun opening the
turn may be read against (`last_turn`). Pure functions of the events.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from remem.extract.offline.earlier import said_before
from remem.extract.offline.named import People, introduced, self_names
from remem.extract.offline.text import sentences
from remem.model import Event, Role

__all__ = ["last_turn", "listeners_of", "people_of", "speaker_of"]

_NOT_SPEAKERS = frozenset("user assistant system unknown me i you".split())


def speaker_of(event: Event) -> str | None:
    """The name of who said the turn, when the application gives one (`metadata.speaker`)."""
    name = event.metadata.get("speaker")
    if not isinstance(name, str):
        return None
    name = " ".join(name.split())
    if not re.fullmatch(r"[^\W\d_][\w'.-]*(?: [^\W\d_][\w'.-]*){0,3}", name):
        return None
    return None if name.casefold() in _NOT_SPEAKERS else name


def listeners_of(context: Sequence[Event], speaker: str | None) -> set[str]:
    """The names of the others who speak in the session (`metadata.speaker`)."""
    names = {speaker_of(e) for e in context}
    return {n for n in names if n and n != speaker}


def people_of(
    event: Event, context: Sequence[Event], speaker: str | None, text: str, listeners: set[str]
) -> People:
    """Who the speaker introduced by name in the session so far (`remem.extract.offline.named`)."""
    earlier = said_before(event, context)
    theirs = [e.text for e in earlier if e.role == Role.USER and speaker_of(e) == speaker]
    people = introduced([*theirs, text])
    if not people.by_name:
        return people  # most turns: no one introduced, and no names to rule out
    assistant = [e.text for e in earlier if e.role == Role.ASSISTANT]
    not_names = {*listeners, *([speaker] if speaker else []), *self_names([*theirs, text])}
    not_names |= self_names(assistant) | self_names([*theirs, text], to_listener=True)
    return people.without(not_names)


def last_turn(
    event: Event, context: Sequence[Event], speaker: str | None, people: People
) -> tuple[str, bool] | None:
    """The last sentence of the speaker's turn before this one, which a "he" / "she"
    opening this turn may mean someone of (`remem.extract.offline.named.People.across`):
    only when the turns since are the assistant's reply alone, or none."""
    if not people.by_name:
        return None
    earlier = sorted(said_before(event, context), key=lambda e: e.time)
    between: list[str] = []
    for prior in reversed(earlier):
        if prior.role == Role.USER and speaker_of(prior) == speaker:
            said = sentences(prior.text)
            return people.across(said[-1], between) if said else None
        if prior.role != Role.ASSISTANT:
            return None  # another speaker, a tool: whom "he" means is theirs to say
        between.append(prior.text)
    return None
