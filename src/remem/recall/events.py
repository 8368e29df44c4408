"""Raw events of the thread log as recall candidates, on the records' scale.

An event scores like a record (see `remem.recall.fusion`), plus:

- **neighbours**: the turn that asks often shares the query's words while the
  turn after it holds the answer, in words of its own ("Yes! Last week, at
  the lake."). The events on either side of each of the best events that
  share a word with the query earn a share of its score that halves with each
  step away (one half next to it, one quarter two turns away), whether or not
  they match anything themselves; an event keeps the best share it is
  offered. A turn found by its meaning alone lends nothing: a stated
  preference ("I avoid hotels with a loud nightlife") says nothing about the
  small talk before it, and letting it lend made that small talk outrank
  other preferences (on the development sets, in a harness run: PrefEval
  hit@5 at 10 per actor 0.96 with, 0.97 without; LoCoMo recall@10 0.746 with,
  0.758 without, multi-hop 0.47 to 0.49). Nor does a turn holding under a fifth of the
  query's informative words (`LENDER_WORD_SHARE`): "car" in a long request
  about eco-friendly cars made the turns around "what is the fastest car"
  outrank the request's own preference (harness, 50 preferences per actor:
  hit@5 0.733 to 0.750; LoCoMo recall@10 0.770 either way, adversarial 0.625
  to 0.633; at 0.3 LoCoMo fell to 0.762).
- **the speaker and the date**: an event said by a speaker the query names,
  or within a time span it names, earns a bonus (`Query.bonus`).
- **a turn that only asks** (`only_asks`: a question, or an instruction to the
  listener, that says nothing of the one asking) ranks at `ASKS_ONLY_SHARE` of
  its score. It shares the query's words and form ("tell me the fastest car"
  for "what car would you recommend for me?", "What's your best camping
  memory?" for "Where has Melanie camped?") but holds no answer: the stated
  preference, or the reply next to it, does. It still lends its neighbours
  their share, and the relevance floor judges its evidence as before. Decided
  on LoCoMo conversations 1-3 and PrefEval topics 1-5 of the development sets
  and checked on the rest (harness over one ingested database; docs/benchmarks.md,
  "Conversations"): at 0.8 no category or k fell on either half; at 0.5
  single-hop recall@10 fell 0.02 on conversations 1-3.

- **an assistant turn that holds no fact** (`holds_no_fact`: an acknowledgement,
  a reaction, a question back: "Lovely! What matters most to you when you
  travel?", "Got it - quick weeknight meals.") is never a candidate. Facts
  about the user come from the user, and what the assistant adds is advice or
  an answer, said in statements of some length; a reply of at most
  `NO_FACT_WORDS` words whose every sentence is a question, an exclamation or
  a short statement (at most `SHORT_SENTENCE_WORDS` words) says nothing that
  the packet needs, and would take a slot a record could hold. A user's turn
  is never judged so: "I'm vegan now." is three words. Decided on the everyday
  development set (assistant turns marked filler by its authors), personas
  1-12, checked on 13-24: at 10 and 25 words, 61 of 61 filler turns and none
  of 104 others on 1-12, 57 of 57 and none of 93 on 13-24; at 8 words 60 of
  61; at 12 one turn of advice ("Updated close: '...'") was caught on 13-24.
  LoCoMo and PrefEval turns are all the user's, so they are not affected.

What cannot be returned (an event after the as-of time, one whose text was
forgotten, one whose records were superseded or removed) is set aside before
scoring: it neither sets the scale nor lends a neighbour a bonus.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice

import numpy as np
import numpy.typing as npt

from remem.model import Event, Role, Status
from remem.recall.fusion import candidate_ids, fuse
from remem.recall.query import Query
from remem.store.roles import Hit, Scope, Store

EVENT_POOL = 50  # how many events each retriever contributes
NEIGHBOURS_OF = 20  # the best events whose neighbours earn a share of their score
NEIGHBOUR_SHARES = (0.5, 0.25)  # the share one and two turns away
# A turn lends its neighbours a share only when it holds at least this share of
# the query's informative words (`fusion.word_evidence`).
LENDER_WORD_SHARE = 0.2
# What a turn that only asks (`only_asks`) keeps of its score.
ASKS_ONLY_SHARE = 0.8
# An assistant turn holds no fact (`holds_no_fact`) when it has at most NO_FACT_WORDS
# words and each sentence is a question, an exclamation or at most SHORT_SENTENCE_WORDS.
NO_FACT_WORDS = 25
SHORT_SENTENCE_WORDS = 10

# How a turn opens when it asks or instructs the listener: a question word, or a
# verb of asking for something to be told, made or done.
_ASKING = re.compile(
    r"\s*(?:what|how|which|who|why|when|where|is|are|do|does|can\s+you|could\s+you|"
    r"would\s+you|please|tell|give|show|list|write|re-?write|explain|describe|make|create|"
    r"convert|complete|continue|simulate|calculate|find|identify|summari[sz]e|translate)\b",
    re.IGNORECASE,
)
# A word by which a turn says something of the one speaking ("I", "I'm", "my"; "tell
# me" still only asks).
_SELF = re.compile(r"\b(?:i|im|my|mine|myself)\b", re.IGNORECASE)


@dataclass
class EventSearch:
    """The event candidates of one recall: word hits, vector hits and the events."""

    scope: Scope
    lexical: list[Hit] = field(default_factory=list)
    vector: list[tuple[str, float]] = field(default_factory=list)
    events: dict[str, Event] = field(default_factory=dict)

    @classmethod
    def run(
        cls,
        store: Store,
        scope: Scope,
        words: str,
        query_vec: npt.NDArray[np.float32] | None,
        model: str,
        at: datetime,
    ) -> EventSearch:
        """Search the scope's events by words and by vector, and fetch them."""
        found = cls(scope)
        if query_vec is not None:
            found.vector = store.search.vector_search_events(
                scope, model, query_vec, EVENT_POOL, at
            )
        found.search_words(store, words)
        return found

    def search_words(self, store: Store, words: str) -> None:
        """(Re)run the word search and fetch the events not fetched yet."""
        self.lexical = store.search.search_events(self.scope, words, EVENT_POOL)
        missing = [e for e in candidate_ids(self.lexical, self.vector) if e not in self.events]
        if missing:
            self.events.update(
                (e.id, e) for e in store.events.get_events(self.scope.tenant, missing)
            )


def only_asks(ev: Event) -> bool:
    """Whether a turn only asks: a question, or one opening with a word of asking or
    instructing (after its speaker's name, when the text starts with it), that says
    nothing of the one asking ("I", "my", ...).

    "Where did you go hiking?" and "tell me the fastest car in the world" only ask;
    "I'm bored, what can I do?" and "Mount Rainier, last week." do not.
    """
    text = ev.text
    if not (text.rstrip().endswith("?") or _ASKING.match(text, _after_speaker(ev))):
        return False
    return _SELF.search(text) is None


# A sentence: what runs up to its closing marks; a word: letters and digits with an
# apostrophe inside ("what's").
_SENTENCE = re.compile(r"[^.!?]+[.!?]*")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


def holds_no_fact(ev: Event) -> bool:
    """Whether an assistant turn only reacts or asks back: at most `NO_FACT_WORDS` words,
    each sentence a question, an exclamation or at most `SHORT_SENTENCE_WORDS` words.

    "Lovely! What matters most to you when you travel?", "Got it - quick weeknight
    meals." and "Sure, paste it in. Who's the portfolio aimed at?" hold no fact;
    "Invoice in euros, since that's what you agreed." and any user turn do.
    """
    if ev.role is not _ASSISTANT or _more_words(ev.text, NO_FACT_WORDS):
        return False
    for sentence in _SENTENCE.findall(ev.text):
        said = sentence.strip()
        if said.endswith(("?", "!")):
            continue
        if len(_WORD.findall(said)) > SHORT_SENTENCE_WORDS:
            return False
    return True


def _more_words(text: str, most: int) -> bool:
    """Whether `text` holds more than `most` words (`_WORD`): read up to the one after
    them, not to the end of a long turn."""
    return next(islice(_WORD.finditer(text), most, None), None) is not None


_ASSISTANT = Role.ASSISTANT  # an enum's member read from its class is a Python call
_ONLY_ACTIVE = frozenset({Status.ACTIVE.value})


def _after_speaker(ev: Event) -> int:
    """Where a turn's own words begin: after "Name:" when its text opens with its speaker."""
    speaker = ev.metadata.get("speaker")
    if isinstance(speaker, str) and speaker and ev.text.startswith(f"{speaker}:"):
        return len(speaker) + 1
    return 0


def speakers_of(events: Iterable[Event]) -> set[str]:
    """Who said these events (their `speaker` metadata)."""
    return {s for e in events if isinstance(s := e.metadata.get("speaker"), str)}


@dataclass(frozen=True, slots=True)
class GatheredEvents:
    """The raw-event candidates of one recall, with what ranking needs to know of them."""

    lexical: tuple[Hit, ...] = ()
    vector: tuple[tuple[str, float], ...] = ()
    events: Mapping[str, Event] = field(default_factory=dict)  # candidates and neighbours
    near: Mapping[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)
    made: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # event -> record statuses


@dataclass
class ScoredEvents:
    """The returnable events of one recall (candidates and their neighbours)."""

    events: dict[str, Event] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    records_made: dict[str, int] = field(default_factory=dict)  # event id -> its active records
    # event id -> its own fused evidence, or for a neighbour the best evidence of
    # the match that lent it a share: what the relevance floor judges
    evidence: dict[str, float] = field(default_factory=dict)
    only_ask: list[str] = field(default_factory=list)  # ranked at ASKS_ONLY_SHARE (`only_asks`)


def returnable_events(
    found: GatheredEvents, ids: Iterable[str], at: datetime, rejected: dict[str, str]
) -> ScoredEvents:
    """Those of these events that may be returned (not yet scored); the others go to
    `rejected`."""
    out = ScoredEvents()
    _returnable(found, ids, at, rejected, out)
    return out


def score_events(
    found: GatheredEvents,
    out: ScoredEvents,
    vector: list[tuple[str, float]],
    query: Query,
    at: datetime,
    rejected: dict[str, str],
    words: Mapping[str, float],
) -> ScoredEvents:
    """Score the returnable candidates in `out` and add their returnable neighbours.

    `vector` is the event vector hits worth keeping; `words` the word evidence of
    the gathered texts (`fusion.word_evidence`). Pure: reads `found`, no store.
    """
    candidates = dict(out.events)
    base = fuse(found.lexical, vector, words, candidates)
    base = {eid: base.get(eid, 0.0) for eid in candidates}

    share, lent, near = _neighbour_shares(found, candidates, base, words)
    _returnable(found, near, at, rejected, out)
    for eid, ev in out.events.items():
        bonus = query.bonus([ev.metadata.get("speaker")], ev.time)
        score = base.get(eid, 0.0) + share.get(eid, 0.0) + bonus
        if only_asks(ev):
            out.only_ask.append(eid)
            score *= ASKS_ONLY_SHARE
        out.scores[eid] = score
        out.evidence[eid] = max(base.get(eid, 0.0), lent.get(eid, 0.0))
    return out


def _neighbour_shares(
    found: GatheredEvents,
    candidates: dict[str, Event],
    base: dict[str, float],
    words: Mapping[str, float],
) -> tuple[dict[str, float], dict[str, float], list[str]]:
    """What each neighbour of the best candidates is offered, the best score of a
    match that offered it a share, and the neighbours that are not candidates."""
    # only a turn holding a meaningful share of the query's words lends a share
    said = {h.id for h in found.lexical if words.get(h.id, 0.0) >= LENDER_WORD_SHARE}
    ranked = sorted(base, key=lambda e: base[e], reverse=True)[:NEIGHBOURS_OF]
    best = [eid for eid in ranked if base[eid] > 0 and eid in said]
    share: dict[str, float] = defaultdict(float)
    lent: dict[str, float] = defaultdict(float)
    near: dict[str, None] = {}
    for eid in best:
        for distance, nb in found.near.get(eid, ()):
            share[nb] = max(share[nb], NEIGHBOUR_SHARES[distance - 1] * base[eid])
            lent[nb] = max(lent[nb], base[eid])
            if nb not in candidates:
                near[nb] = None
    return share, lent, list(near)


def _returnable(
    found: GatheredEvents,
    ids: Iterable[str],
    at: datetime,
    rejected: dict[str, str],
    out: ScoredEvents,
) -> None:
    """Add the events that may be returned to `out`; record the others in `rejected`."""
    for eid in ids:
        ev = found.events.get(eid)
        if ev is None or eid in out.events:
            continue
        made = found.made.get(eid, ())
        if ev.time > at:
            rejected[eid] = "event after the as-of time"
        elif not ev.text.strip():
            rejected[eid] = "event text was forgotten"
        elif holds_no_fact(ev):
            rejected[eid] = "an assistant turn that holds no fact (a reaction or a question back)"
        elif not _ONLY_ACTIVE.issuperset(made):
            rejected[eid] = "its records were superseded or removed"
        else:
            out.events[eid] = ev
            out.records_made[eid] = len(made)
