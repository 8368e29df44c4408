"""Strategies: each turns a batch of new events of one session into candidates.

A strategy is independent of the others: it has its own jobs, its own model
and prompt, and one failing never blocks another. The offline strategy wraps
the deterministic rules; the LLM strategies (`remem.extract.llm`) ask a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from remem.extract.offline.extractor import EXTRACTOR_VERSION, extract_offline
from remem.model import Candidate, Event, LLMCall, Record, Role

ALL_ROLES = frozenset(Role)
CONVERSATION = frozenset({Role.USER, Role.ASSISTANT})


@dataclass(frozen=True, slots=True)
class Batch:
    """New events of one (tenant, actor, session), oldest first, and what came before."""

    events: tuple[Event, ...]
    context: tuple[Event, ...] = ()  # earlier events of the session, oldest first
    previous: tuple[Record, ...] = ()  # the session's current summaries (summary strategy)


class Strategy(Protocol):
    """What the pipeline needs of a strategy."""

    name: str
    roles: frozenset[Role]  # the events it reads; jobs of other events finish at once
    batch_events: int  # how many new events one extraction may take
    version: str  # extractor and prompt version, kept on every record it makes
    summarises: bool  # writes running session summaries (regenerated after a deletion)
    reads_whole_session: bool  # reads every earlier turn of the session, not the last few
    # how many earlier turns of the session it reads (None: the worker's `context_events`)
    context_turns: int | None

    def extract(self, batch: Batch, calls: list[LLMCall]) -> list[Candidate]:
        """Candidates from the batch's new events; model calls are appended to `calls`."""
        ...


# the earlier turns of its session the offline rules read: people the user named ("my
# daughter Mia ...") are known for the turns after, a model's six (`context_events`, a
# prompt's size) would forget them three exchanges later, and the rules cost no tokens
OFFLINE_CONTEXT = 40


class OfflineStrategy:
    """The deterministic rules of `remem.extract.offline.extractor`, one event at a time,
    each with the `OFFLINE_CONTEXT` turns of its session before it."""

    name = "offline"
    roles = ALL_ROLES
    batch_events = 1
    version = EXTRACTOR_VERSION
    summarises = False
    reads_whole_session = False
    context_turns: int | None = OFFLINE_CONTEXT

    def extract(self, batch: Batch, calls: list[LLMCall]) -> list[Candidate]:
        """Run the rules on each new event with the session context before it."""
        out: list[Candidate] = []
        context = list(batch.context)
        for event in batch.events:
            out.extend(extract_offline(event, context))
            context.append(event)
        return out
