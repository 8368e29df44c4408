"""The LLM strategies (semantic, preference, summary, episodic) and model consolidation.

Each strategy sends one request per batch of new events: its prompt (a
versioned file in `prompts/`, which the configuration may append to or
replace), the earlier events of the session as context, and the new events
numbered. The answer is validated against the strategy's response model in
`remem.extract.schemas`; every candidate keeps the model and prompt version
that made it (`Source.extractor`, e.g. "llm:gpt-4o-mini;prompt:semantic/1").

Only user and assistant turns feed semantic and preference extraction; tool
events feed episodic; summaries read the whole session.

The model's event numbers are checked, never trusted: an item (a fact, a
preference, a summary topic, an episode) that names a number outside the
numbered new events is dropped, not attributed to another event, and the call's
log row counts it (`LLMCall.dropped`, with a note in its `error`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from importlib import resources

from pydantic import BaseModel

from remem.config.config import StrategyConfig
from remem.extract.schemas import (
    PROMPT_VERSIONS,
    Episodes,
    Facts,
    Preferences,
    SessionSummary,
    Verdict,
    Verdicts,
)
from remem.extract.strategies import ALL_ROLES, CONVERSATION, Batch
from remem.llm.client import ChatModel, Message
from remem.model import Authority, Candidate, Event, Kind, LLMCall, Record, Role, Source

MAX_EVENT_CHARS_IN_PROMPT = 4000
_SLUG = re.compile(r"[^a-z0-9]+")
# the family keys a model may name, as the prompt asks ("allergy:shellfish"); any other
# colon is slugged away, so a model never writes remem's own keys ("summary:...")
_FAMILY_KEY = re.compile(
    r"(?P<head>allergy|intolerance|relation|home|count|device|diet|eats|likes|favorite"
    r"|preference|uses|needs|condition|cannot|date)\s*:\s*(?P<kind>[^:]+)"
)


def default_prompt(name: str) -> str:
    """The shipped prompt of a strategy (or "consolidation")."""
    version = PROMPT_VERSIONS[name].split("/")[1]
    return (resources.files("remem.extract") / "prompts" / f"{name}.v{version}.md").read_text(
        encoding="utf-8"
    )


def prompt_for(name: str, config: StrategyConfig | None) -> tuple[str, str]:
    """The prompt a strategy runs with, and its version (overrides are marked and hashed)."""
    text, version = default_prompt(name), PROMPT_VERSIONS[name]
    if config is not None and config.prompt_replace:
        text = config.prompt_replace
        version = f"{name}/custom-{_digest(text)}"
    if config is not None and config.prompt_append:
        text = f"{text.rstrip()}\n\n{config.prompt_append.strip()}\n"
        version = f"{version}+{_digest(config.prompt_append)}"
    return text, version


class LLMStrategy:
    """One built-in strategy run by a language model."""

    def __init__(self, name: str, chat: ChatModel, config: StrategyConfig | None = None) -> None:
        if name not in _KINDS:
            raise ValueError(f"no LLM strategy named {name!r}")
        self.name = name
        self.roles = _ROLES[name]
        self.batch_events = 16
        self.summarises = name == "summary"
        self.reads_whole_session = False
        self.context_turns: int | None = None  # the worker's `context_events`: a prompt's size
        self._chat = chat
        self._model = (config.model if config else None) or chat.settings.model
        self._prompt, self.prompt_version = prompt_for(name, config)
        self.version = f"llm:{self._model};prompt:{self.prompt_version}"

    def extract(self, batch: Batch, calls: list[LLMCall]) -> list[Candidate]:
        """One model call for the whole batch; see the module docstring."""
        messages = _messages(self._prompt, batch, self.name)
        answer = self._chat.complete(
            messages,
            _SCHEMAS[self.name],
            strategy=self.name,
            prompt_version=self.prompt_version,
            calls=calls,
            model=self._model,
        )
        candidates, bad = _candidates(self.name, answer, batch, self.version)
        if bad and calls:  # the answering call is the last one logged
            listed = len(batch.events)
            note = (
                f"dropped {len(bad)} item(s) naming events not listed "
                f"({', '.join(map(str, sorted(set(bad))))}; the prompt listed 1-{listed})"
            )
            calls[-1] = replace(calls[-1], dropped=len(bad), error=note)
        return candidates


class ModelConsolidator:
    """Asks a model ADD / UPDATE / NO-OP / INVALIDATE for candidates that have neighbours.

    The verdicts are advice: `remem.consolidate.with_verdict` applies each
    through the same policy as the offline path.
    """

    def __init__(self, chat: ChatModel, model: str | None = None) -> None:
        self._chat = chat
        self._model = model or chat.settings.model
        self._prompt, self.prompt_version = prompt_for("consolidation", None)

    def verdicts(
        self,
        items: Sequence[tuple[Candidate, Sequence[Record]]],
        calls: list[LLMCall],
        strategy: str,
    ) -> dict[int, Verdict]:
        """Verdicts by candidate position (0-based) for candidates with neighbours."""
        lines = []
        for i, (cand, near) in enumerate(items, start=1):
            lines.append(f"Candidate {i} ({_day(cand.observed_at)}): {_quote(cand.text)}")
            for rec in near:
                lines.append(f"  - id {rec.id} ({_day(rec.valid_from)}): {_quote(rec.text)}")
        answer = self._chat.complete(
            [
                {"role": "system", "content": self._prompt},
                {"role": "user", "content": "\n".join(lines)},
            ],
            Verdicts,
            strategy=f"{strategy}:consolidation",
            prompt_version=self.prompt_version,
            calls=calls,
            model=self._model,
        )
        return {v.candidate - 1: v for v in answer.decisions if 1 <= v.candidate <= len(items)}


_KINDS = {
    "semantic": Kind.SEMANTIC,
    "preference": Kind.PREFERENCE,
    "summary": Kind.SUMMARY,
    "episodic": Kind.EPISODIC,
}
_ROLES = {
    "semantic": CONVERSATION,
    "preference": CONVERSATION,
    "summary": ALL_ROLES,
    "episodic": frozenset({Role.TOOL}),
}
_SCHEMAS: dict[str, type[BaseModel]] = {
    "semantic": Facts,
    "preference": Preferences,
    "summary": SessionSummary,
    "episodic": Episodes,
}


def _messages(prompt: str, batch: Batch, name: str) -> list[Message]:
    parts = []
    if batch.previous:
        parts.append("Previous summary of this session:")
        parts.extend(f"- {r.text}" for r in batch.previous)
    if batch.context:
        parts.append("Earlier in this session (context only):")
        parts.extend(_line(e) for e in batch.context)
    parts.append("NEW events:")
    parts.extend(_line(e, i) for i, e in enumerate(batch.events, start=1))
    return [{"role": "system", "content": prompt}, {"role": "user", "content": "\n".join(parts)}]


def _line(event: Event, number: int | None = None) -> str:
    who = event.metadata.get("speaker") or event.role.value
    text = event.text[:MAX_EVENT_CHARS_IN_PROMPT]
    tag = f"[{number}] " if number is not None else ""
    return f"{tag}{event.time.isoformat(timespec='minutes')} {who} ({event.role.value}): {text}"


def _candidates(
    name: str, answer: BaseModel, batch: Batch, version: str
) -> tuple[list[Candidate], list[int]]:
    """The answer's candidates, and the event numbers of the items dropped because a
    number they named is not one of the batch's numbered events."""
    events = batch.events
    bad: list[int] = []

    def listed(numbers: Sequence[int]) -> bool:
        wrong = [n for n in numbers if not 1 <= n <= len(events)]
        bad.extend(wrong[:1])  # one per dropped item
        return not wrong

    def pick(numbers: Sequence[int]) -> tuple[Event, ...]:
        # every number is listed (checked first); none at all: the whole batch is the source
        return tuple(events[n - 1] for n in dict.fromkeys(numbers)) or events

    def source(picked: Sequence[Event]) -> Source:
        return Source("event", tuple(e.id for e in picked), name, version)

    out: list[Candidate] = []
    if isinstance(answer, Facts):
        for f in answer.facts:
            if not listed([f.event]):
                continue
            picked = pick([f.event])
            # a blank value is no value: the fact is kept as text, with no field to answer
            has_field = bool(f.attribute and f.attribute.strip() and f.value and f.value.strip())
            out.append(
                Candidate(
                    text=f.text.strip(),
                    kind=Kind.SEMANTIC,
                    source=source(picked),
                    observed_at=picked[-1].time,
                    field=_attribute_field(f.attribute) if has_field and f.attribute else None,
                    value=f.value.strip() if has_field and f.value else None,
                )
            )
    elif isinstance(answer, Preferences):
        for p in answer.preferences:
            if not listed([p.event]):
                continue
            picked = pick([p.event])
            text = p.text.strip()
            if p.context and p.context.lower() not in text.lower():
                text = f"{text} (when: {p.context.strip()})"
            out.append(
                Candidate(
                    text=text,
                    kind=Kind.PREFERENCE,
                    source=source(picked),
                    observed_at=picked[-1].time,
                )
            )
    elif isinstance(answer, SessionSummary):
        # a fresh summary covers the session read as context too; a running one, what its
        # previous version covered plus the new events
        before = [i for r in batch.previous for i in r.source.event_ids]
        if not batch.previous:
            before = [e.id for e in batch.context]
        covered = tuple(dict.fromkeys([*before, *(e.id for e in events)]))
        first = batch.previous[0].value if batch.previous else None
        start = json.loads(first)["first_event"] if first else covered[0]
        for t in answer.topics:
            if not listed(t.key_events):
                continue
            key = tuple(e.id for e in pick(t.key_events)) if t.key_events else ()
            value = {
                "first_event": start,
                "last_event": events[-1].id,
                "unresolved": t.unresolved,
                "key_events": list(key),
                "summariser": version,
            }
            out.append(
                Candidate(
                    text=f"Summary of session {events[-1].session} ({t.topic}): {t.summary}",
                    kind=Kind.SUMMARY,
                    source=Source("event", covered, name, version),
                    observed_at=events[-1].time,
                    field=f"summary:{events[-1].session}:{_slug(t.topic)}",
                    value=json.dumps(value, sort_keys=True),
                    authority=Authority.SUMMARY,
                )
            )
    elif isinstance(answer, Episodes):
        for ep in answer.episodes:
            if not listed(ep.events):
                continue
            picked = pick(ep.events)
            actions = "; ".join(a.strip() for a in ep.actions if a.strip())
            text = f"Attempted: {ep.attempt.strip()}."
            if actions:
                text += f" Actions: {actions}."
            text += f" Outcome: {ep.outcome.strip()}" + (" (verified)" if ep.verified else "")
            out.append(
                Candidate(
                    text=text,
                    kind=Kind.EPISODIC,
                    source=source(picked),
                    observed_at=picked[-1].time,
                    authority=Authority.VERIFIED_OUTCOME if ep.verified else Authority.INFERRED,
                )
            )
    return [c for c in out if c.text], bad


def _slug(text: str) -> str:
    return _SLUG.sub("_", text.lower()).strip("_")[:80] or "general"


def _attribute_field(text: str) -> str:
    """A model's attribute as a field: "Home City" -> "home_city"; a family key keeps its
    colon ("allergy:shellfish", "relation:best friend" -> "relation:best_friend")."""
    if m := _FAMILY_KEY.fullmatch(text.lower().strip()):
        kind = _SLUG.sub("_", m["kind"]).strip("_")
        if kind:
            return f"{m['head']}:{kind}"[:80]
    return _slug(text)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _day(t: datetime) -> str:
    return t.date().isoformat()


def _quote(text: str) -> str:
    return json.dumps(text[:MAX_EVENT_CHARS_IN_PROMPT], ensure_ascii=False)
