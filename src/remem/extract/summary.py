"""The offline session summary: an extractive, running summary of one session.

A summary is a lossy index over its events, never their replacement (DESIGN
§1): it records the event range it covers, the summariser and its version,
unresolved items and the ids of key events (approvals, tool results,
commitments), and is regenerated when an event it covers is deleted. This
one needs no model: it keeps the sentences of the session that carry facts
(what the offline extractor would extract), tool results and commitments, in
order, within a size bound. With a language model configured, the `summary`
strategy writes an abstractive one instead (`remem.extract.llm`).
"""

from __future__ import annotations

import json
import re

from remem.extract.offline.extractor import extract_offline
from remem.extract.offline.text import sentences
from remem.extract.strategies import ALL_ROLES, Batch
from remem.model import Authority, Candidate, Event, Kind, LLMCall, Role, Source

NAME = "offline-summary"
VERSION = "offline-summary/1"
MAX_CHARS = 1200
SESSION_EVENTS = 500  # how much of a session one summary reads

_KEY = re.compile(
    r"\b(?:approved?|confirmed|booked|paid|agreed|signed|completed|cancel+ed|refunded|"
    r"I will|we will|I'll|we'll|promise|go ahead|deadline)\b",
    re.IGNORECASE,
)


class OfflineSummaryStrategy:
    """One running summary per session, made by rules; see the module docstring."""

    name = NAME
    roles = ALL_ROLES
    batch_events = 500
    version = VERSION
    summarises = True
    reads_whole_session = True
    context_turns: int | None = None

    def extract(self, batch: Batch, calls: list[LLMCall]) -> list[Candidate]:
        """The session's summary as of its newest new event (one candidate)."""
        events = [e for e in (*batch.context, *batch.events) if e.text.strip()]
        if not events:
            return []
        kept: list[str] = []
        key: list[str] = []
        unresolved: list[str] = []
        for i, e in enumerate(events):
            is_key = e.role is Role.TOOL or bool(_KEY.search(e.text))
            if is_key:
                key.append(e.id)
            if e.role is Role.USER and e.text.rstrip().endswith("?"):
                answered = any(later.role is Role.ASSISTANT for later in events[i + 1 :])
                if not answered:
                    unresolved.append(_short(e.text, 200))
            if is_key or (e.role is Role.USER and extract_offline(e)):
                kept.append(_line(e))
        session = events[-1].session
        body = " ".join(kept) or _line(events[-1])
        text = f"Summary of session {session} ({len(events)} events): " + _short(body, MAX_CHARS)
        value = {
            "first_event": events[0].id,
            "last_event": events[-1].id,
            "unresolved": unresolved[-10:],
            "key_events": key[-50:],
            "summariser": VERSION,
        }
        return [
            Candidate(
                text=text,
                kind=Kind.SUMMARY,
                source=Source("event", tuple(e.id for e in events), NAME, VERSION),
                observed_at=events[-1].time,
                field=f"summary:{session}:session",
                value=json.dumps(value, sort_keys=True),
                authority=Authority.SUMMARY,
            )
        ]


def _line(event: Event) -> str:
    who = event.metadata.get("speaker") or event.role.value
    first = sentences(event.text)[:2]
    return f"{who}: {_short(' '.join(first) or event.text, 240)}"


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"
