"""Client event ids are idempotency keys: when a repeat is the same event, and when it conflicts.

An event id is unique per tenant. A second event with an id already used is
the same event (a retry: not stored again, its differing time and metadata
ignored, the first kept) when its actor, session, role and text (after
secret redaction, as stored) are the same; any other reuse is refused with
`EventIdTaken`, whose message never reveals the other event. Both stores call
`classify` inside their write transaction, so a batch with a conflict writes
nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from remem.errors import ConflictError
from remem.model import Event


@dataclass(frozen=True, slots=True)
class Identity:
    """What makes two events with one id the same event."""

    actor: str
    session: str
    role: str
    text: str


def identity(event: Event) -> Identity:
    """The identity of an event (as it is stored: text already redacted)."""
    return Identity(event.actor, event.session, event.role.value, event.text)


class EventIdTaken(ConflictError):
    """An event id is already used in the tenant by a different event.

    `index` is the position of the refused event in the batch that was written.
    """

    def __init__(self, event_id: str, index: int) -> None:
        super().__init__(
            f"event id {event_id!r} is already used in this tenant by a different event; "
            "event ids are unique per tenant: send this event with another id (or none)"
        )
        self.event_id = event_id
        self.index = index


def classify(events: Sequence[Event], stored: Mapping[str, Identity]) -> list[bool]:
    """Per event, whether it is new (to be stored) or a repeat of a stored or earlier one.

    `stored` maps the ids of the batch that already exist to their identities.
    Raises `EventIdTaken` at the first event that reuses an id for a different event.
    """
    seen = dict(stored)
    out: list[bool] = []
    for i, event in enumerate(events):
        mine = identity(event)
        prior = seen.get(event.id)
        if prior is None:
            seen[event.id] = mine
            out.append(True)
        elif prior == mine:
            out.append(False)
        else:
            raise EventIdTaken(event.id, i)
    return out


def import_digest(event: Event, time_given: bool) -> str:
    """A stable digest of an imported row's content, for the id of a row that has none.

    It covers actor, session, role, text (as stored), the time when the row
    gives one (normalised to UTC, so two spellings of one instant agree) and
    the metadata; an import adds how many identical rows came before.
    """
    content = {
        "actor": event.actor,
        "session": event.session,
        "role": event.role.value,
        "text": event.text,
        "time": event.time.isoformat() if time_given else None,
        "metadata": event.metadata,
    }
    try:
        canonical = json.dumps(content, sort_keys=True, default=str)
    except TypeError:  # keys of mixed types cannot be sorted: their given order it is
        canonical = json.dumps(content, default=str)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:32]
