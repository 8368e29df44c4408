"""Ranking: a pure function of what was gathered, the understood query and the time.

    gathered ─► what may be returned (status, validity, sensitivity, known_at/valid_at)
             ─► word evidence over the returnable texts + cosine (fusion)
             ─► the current record of a superseded match ranks where it did
             ─► standing preferences that apply to a request join, 0.1 up
             ─► speaker and date bonuses; events with their neighbours (events)
             ─► one ranking ─► an event or its records, not both ─► each text once

Records are scored like events: fused word evidence and cosine, plus the
speaker bonus when they were made from a turn of a speaker the query names (a
record says "Painted a lake sunrise", its turn was Melanie's), plus the date
bonus when they hold from a time the query names. A record that scores close
to the turn it was made from is shown in the turn's place: the governed fact
before the raw words, when it says what the turn says (`SAYS_SAME`).

No store, no clock, no model: everything comes from `Gathered`, so each rule
is tested directly on small hand-made values (tests/unit/test_recall_rank.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from remem.model import Event, Record, Status
from remem.policy.applies import (
    ANSWER_STYLE,
    applies_to,
    asking_words,
    is_request,
    is_standing,
)
from remem.policy.asker import about_asker
from remem.policy.fields import field_names
from remem.policy.metadata import matches
from remem.policy.precedence import RANK
from remem.policy.validity import event_not_held, is_recallable, not_recallable, within_sensitivity
from remem.recall.events import GatheredEvents, returnable_events, score_events
from remem.recall.fusion import (
    MIN_VECTOR_ONLY_COSINE,
    candidate_ids,
    content_stems,
    fuse,
    named_fields,
    without_asking,
    without_weak_vectors,
    word_evidence,
)
from remem.recall.gather import MAX_SUCCESSION, Gathered
from remem.recall.items import Ranked
from remem.store.roles import Hit, Scope

# A record stands in for the event it was made from when it scores at least
# this share of the event's score (see `_one_of_each_source`).
STAND_IN = 0.8

# A record stands in for its turn only when it holds at least this share of the turn's
# content words (`says_what_its_turn_says`); otherwise the turn stands for it.
SAYS_SAME = 0.5

# The least cosine of a vector-only match to a question about the asker: none is cut,
# all rank by their evidence (`floor.at_least`, `remem.policy.asker`).
ASKER_WEAK = -1.0

# The least score of a turn that states a standing constraint, for a request
# (`remem.recall.constraints`): where the floor and the bonus of `APPLIES_BONUS` put a
# standing preference that applies and matches nothing else.
CONSTRAINT_PLACE = 0.25

# A record that holds less than its turn but names the turn's speaker, whom the turn's
# text does not name, is shown just before its turn (`_names_whose`).
SHOW_BOTH = True

# What a standing preference that applies to a request (`remem.policy.applies`)
# earns over its own evidence, on the fused scale (see `_applicable`).
APPLIES_BONUS = 0.1


@dataclass(frozen=True, slots=True)
class Ranking:
    """The returnable candidates in rank order, and why the others are not among them."""

    items: tuple[Ranked, ...]  # one of each source, best first (`Ranked.item`)
    evidence: Mapping[str, float]  # id -> what the relevance floor judges (`floor`)
    eligible: tuple[Record, ...] = ()  # the returnable records, best first
    vector: tuple[tuple[str, float], ...] = ()  # the record vector hits kept
    heirs: Mapping[str, str] = field(default_factory=dict)  # heir id -> the match it inherited
    # standing preferences that apply to the request (and their turns) -> the domains shared
    applies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    rejected: Mapping[str, str] = field(default_factory=dict)  # id -> why not returnable
    named: tuple[str, ...] = ()  # records whose field the query names (`named_fields`)
    only_ask: tuple[str, ...] = ()  # turns that only ask, ranked lower (`events.only_asks`)


def rank(g: Gathered, now: datetime) -> Ranking:
    """Rank what `g` holds at `now` (or at the request's `known_at` and `valid_at`)."""
    req = g.request
    at = req.valid_at or now
    rejected: dict[str, str] = {}
    fields = {rid: field_names(rec.field) for rid, rec in g.records.items() if rec.field}
    named = named_fields(g.query.words, fields)  # id -> its field's names the query says
    by_words = {h.id for h in g.lexical}
    lexical = [*g.lexical, *(Hit(rid, 0.0) for rid in named if rid not in by_words)]
    # a question about the asker keeps its weak matches to rank: the floor may cut them,
    # but not below k items (`floor.at_least`, `remem.policy.asker`)
    weak = ASKER_WEAK if about_asker(req.query) else MIN_VECTOR_ONLY_COSINE
    vector = without_weak_vectors(lexical, list(g.vector), rejected, weak)

    # filter first, then score: what cannot be returned must not weigh the words
    returnable: dict[str, Record] = {}
    replaced: dict[str, Record] = {}  # superseded since: its successor may inherit its match
    for rid in candidate_ids(lexical, vector):
        rec = g.records.get(rid)
        if rec is None:
            rejected[rid] = "deleted"
        elif (why := not_recallable(rec, now, req.known_at, req.valid_at, g.closed)) is not None:
            rejected[rid] = why
            if not req.past and rec.status is Status.INVALID and rec.superseded_by:
                replaced[rid] = rec
        elif not within_sensitivity(rec, req.max_sensitivity):
            rejected[rid] = f"sensitivity {rec.sensitivity.value}"
        elif not matches(rec.metadata, req.scope.metadata):
            rejected[rid] = "metadata filter"
        else:
            returnable[rid] = rec
    vector.extend((rid, c) for rid, c in g.replaced_vector if rid in replaced)
    applies = _applicable(g, now, returnable, rejected)

    events = None
    event_vector: list[tuple[str, float]] = []
    found = g.events
    if found is not None and req.past:
        found = _held_events(found, req.known_at, at, rejected)
    if found is not None:
        event_vector = without_weak_vectors(list(found.lexical), list(found.vector), rejected, weak)
        ids = candidate_ids(list(found.lexical), event_vector)
        ids += [eid for eid in g.constraints if eid not in ids]  # `remem.recall.constraints`
        events = returnable_events(found, ids, at, rejected)

    def words_of(rid: str, rec: Record) -> str:  # its text, and its field's names asked for
        return f"{rec.text} {named[rid]}" if rid in named else rec.text

    texts = {rid: words_of(rid, rec) for rid, rec in returnable.items()}
    if events is not None:
        texts |= {eid: ev.text for eid, ev in events.events.items()}
    also = {rid: words_of(rid, rec) for rid, rec in replaced.items()}
    # a request: its heaviest shared word orders nothing, but the floor still reads it
    choice = names_a_choice(g)
    asked = without_asking(g.query.words, asking_words(req.query)) if choice else g.query.words
    words = word_evidence(asked, texts, also=also, past_the_first=choice, by_length=choice)
    every_word = word_evidence(g.query.words, texts, also=also) if choice else words

    scores = fuse(lexical, vector, words, returnable, also=replaced)
    heirs = _inherit(g, now, replaced, returnable, scores)
    for rid in applies:  # its own evidence, or its meaning alone if no search found it
        scores[rid] = max(scores.get(rid, 0.0), g.applicable.cosines.get(rid, 0.0))
    evidence = dict(scores)  # before the bonuses: what the relevance floor judges
    if choice:
        for rid, full in fuse(lexical, vector, every_word, returnable).items():
            evidence[rid] = max(evidence.get(rid, 0.0), full)
    for rid in applies:
        scores[rid] += APPLIES_BONUS
    bonuses = bool(g.query.speakers or g.query.spans)  # else every bonus is 0.0
    for rid, rec in returnable.items():  # said by whoever said the turns it was made from
        said = [_speaker(g.sources.get(e)) for e in rec.source.event_ids] if bonuses else ()
        bonus = g.query.bonus(said, rec.valid_from) if bonuses else 0.0
        scores[rid] = scores.get(rid, 0.0) + bonus
    eligible = sorted(
        returnable.values(),
        key=lambda r: (scores[r.id], RANK[r.authority], r.valid_from.timestamp()),
        reverse=True,
    )

    items = [Ranked.of_record(r, scores[r.id]) for r in eligible]
    records_made: dict[str, int] = {}
    only_ask: tuple[str, ...] = ()
    if found is not None and events is not None:
        scored = score_events(found, events, event_vector, g.query, at, rejected, words)
        # the turn a standing preference was made from applies as the preference does
        stated = {e: ds for rid, ds in applies.items() for e in returnable[rid].source.event_ids}
        # a turn stating a standing constraint bounds any plan (`remem.recall.constraints`)
        bounds = {e: k for e, k in g.constraints.items() if e in scored.events}
        # and so does a record made from such a turn: placed as its turn is, it can stand
        # in for the turn when it says what the turn says (`_one_of_each_source`)
        if bounds:
            items = [
                it.at(max(it.score, CONSTRAINT_PLACE))
                if it.kind not in ("event", "summary") and bounds.keys() & set(it.turns)
                else it
                for it in items
            ]
        items.extend(
            Ranked.of_event(ev, _event_score(scored.scores[eid], eid in stated, eid in bounds))
            for eid, ev in scored.events.items()
        )
        applies |= {eid: ds for eid, ds in stated.items() if eid in scored.events}
        for eid, kind in bounds.items():
            rejected.pop(eid, None)  # a weak match, as such turns are
            applies.setdefault(eid, (f"a standing constraint ({kind})",))
        records_made = scored.records_made
        evidence |= scored.evidence
        if choice:
            for eid, full in fuse(found.lexical, event_vector, every_word, scored.events).items():
                evidence[eid] = max(evidence.get(eid, 0.0), full)
        only_ask = tuple(scored.only_ask)
    items.sort(key=lambda it: it.score, reverse=True)  # stable: records first at a tie
    unnamed = _unnamed_turns(g, items)
    items = _one_of_each_source(items, rejected, records_made, evidence, unnamed)
    for it in items:  # a record shown for a constraint's turn applies as the turn does
        turns = it.turns if it.kind != "summary" else ()
        if it.id not in applies and (held := [applies[e] for e in turns if e in g.constraints]):
            applies[it.id] = held[0]
    items = _one_of_each_text(items, rejected)
    return Ranking(
        items=tuple(items),
        evidence=evidence,
        eligible=tuple(eligible),
        vector=tuple(vector),
        heirs=heirs,
        applies=applies,
        rejected=rejected,
        named=tuple(named),
        only_ask=only_ask,
    )


def names_a_choice(g: Gathered) -> bool:
    """Whether the query asks for something to be chosen for the asker (`is_request`) and
    names no speaker of the scope; then a candidate's heaviest shared word does not count
    (`fusion.word_evidence`, `past_the_first`).

    A request's words name what it asks for ("recommend some TV shows for me"), and every
    memory about that kind of thing holds them, while the preference that should shape
    it ("I can't stand laugh tracks") rarely repeats them. One shared word then said only
    "about the same kind of thing", which the meaning already says, and it outweighed the
    meaning's order: on the PrefEval development set remem fell below its own dense
    component at hit@1 on three topics, in 31 of its 49 misses behind a candidate holding
    a word of the request ("Is not a fan of comedy movies or shows" for "light-hearted
    movies to unwind").
    A question naming a speaker ("What changes has Caroline faced?") asks about them, as
    a question does. The relevance floor still reads every shared word: one says the
    candidate is about what was asked ("Prefers aisle seats" for "which seat should I
    book?" with a weak embedder). Runs in docs/decisions/prefeval-topics.md.
    """
    return not g.query.speakers and is_request(g.request.query)


def _event_score(score: float, applies: bool, bounds: bool) -> float:
    """A turn's score: `APPLIES_BONUS` up when a standing preference it states applies,
    and at least `CONSTRAINT_PLACE` when it states a constraint (no bonus: on PrefEval
    the bonus lifted constraint turns above the preference a request asked for)."""
    score += APPLIES_BONUS * applies
    return max(score, CONSTRAINT_PLACE) if bounds else score


def _applicable(
    g: Gathered, now: datetime, returnable: dict[str, Record], rejected: dict[str, str]
) -> dict[str, tuple[str, ...]]:
    """The standing preferences that apply to the request: id -> the domains they share.

    Each joins `returnable` (when it may be returned at all) whether or not a word
    or vector search found it: "I get seasick" applies to "plan a weekend on the
    islands" through travel and physical limits although the two share no word
    and little meaning.
    """
    req = g.request
    asked = g.applicable.domains
    out: dict[str, tuple[str, ...]] = {}
    for rid, domains in g.applicable.of.items():
        rec = g.records.get(rid)
        if rec is None or not is_standing(rec, domains):
            continue
        if (rec.field or "").startswith(ANSWER_STYLE):  # pinned instead (`recall.instructions`)
            continue
        if not (shared := applies_to(domains, asked)):
            continue
        if rid not in returnable:
            if rid in rejected and not rejected[rid].startswith("weak match"):
                continue
            if not_recallable(rec, now, req.known_at, req.valid_at, g.closed) is not None:
                continue
            if not within_sensitivity(rec, req.max_sensitivity):
                continue
            if not matches(rec.metadata, req.scope.metadata):
                continue
            rejected.pop(rid, None)
            returnable[rid] = rec
        out[rid] = shared
    return out


def conflicts(records: tuple[Record, ...]) -> list[dict[str, Any]]:
    """Active records about the same field with different values: ask, don't pick."""
    by_field: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        if r.field and r.status is Status.ACTIVE:
            by_field[r.field].append(r)
    out = []
    for fld, recs in by_field.items():
        values = {(r.value or r.text).strip().lower() for r in recs}
        if len(values) > 1:
            out.append(
                {
                    "field": fld,
                    "record_ids": [r.id for r in recs],
                    "values": [r.value or r.text for r in recs],
                    "question": f"{len(recs)} different values for {fld}; which is current?",
                }
            )
    return out


def _speaker(ev: Event | None) -> object:
    return ev.metadata.get("speaker") if ev is not None else None


def _inherit(
    g: Gathered,
    now: datetime,
    replaced: dict[str, Record],
    returnable: dict[str, Record],
    scores: dict[str, float],
) -> dict[str, str]:
    """Let the current record of a superseded match rank where the match did.

    "How much can we spend?" matches the words of the old budget, not of the
    raise that superseded it; the raise is the answer. Each superseded
    candidate's score passes along its `superseded_by` chain to the first
    record that may be returned (in scope, recallable, within sensitivity),
    which keeps the better of its own score and the inherited one. Returns
    heir id -> the superseded record it inherited from.
    """
    req = g.request
    scopes = (req.scope, *req.shared)
    heirs: dict[str, str] = {}
    chains = {rid: rec.superseded_by for rid, rec in replaced.items() if rec.superseded_by}
    for _ in range(MAX_SUCCESSION):
        following: dict[str, str] = {}
        for old, heir in chains.items():
            rec = g.records.get(heir)
            if rec is None:
                continue
            if heir not in returnable and (
                is_recallable(rec, now)
                and within_sensitivity(rec, req.max_sensitivity)
                and any(_in_scope(rec, sc) for sc in scopes)
            ):
                returnable[heir] = rec
            if heir in returnable:
                if scores.get(old, 0.0) > scores.get(heir, 0.0):
                    scores[heir] = scores[old]
                    heirs[heir] = old
            elif rec.superseded_by:
                following[old] = rec.superseded_by
        chains = following
        if not chains:
            break
    return heirs


def _in_scope(rec: Record, scope: Scope) -> bool:
    prefix = scope.namespace_prefix
    return (
        rec.tenant == scope.tenant
        and rec.actor == scope.actor
        and (prefix is None or rec.namespace.startswith(prefix))
        and matches(rec.metadata, scope.metadata)
    )


def _one_of_each_source(
    items: list[Ranked],
    rejected: dict[str, str],
    records_of: dict[str, int],
    evidence: dict[str, float],
    unnamed: Mapping[str, str] | None = None,
) -> list[Ranked]:
    """Keep a raw event or the records made from it, not both.

    `items` are in rank order. A record that scores at least `STAND_IN` of
    the event it was made from takes the event's place (and score): the
    governed fact is preferred to the raw words, and ranks where they did. A
    record further behind its event gives way to it.

    A turn made into several records ("I'm vegetarian. And I can't stand
    cilantro.") holds what each of them holds, so it is never replaced by
    one of them: a record of it that ranks first brings the turn up to its
    rank instead. So is a turn whose one record holds less than `SAYS_SAME` of
    its content words (`says_what_its_turn_says`), which also takes the
    record's evidence for the relevance floor, as the record would have stood
    for it. (A turn made into several records keeps its own evidence: giving
    it its record's kept two more turns per question on LoCoMo, which pushed
    two multi-hop answers below k=10 on the development set.) `records_of`
    counts the active records of each returnable event (summaries aside).

    `SAYS_SAME` was decided on the everyday development set (`remem eval
    everyday`, one ingested database), personas 1-12, checked on 13-24: hit
    over answerable questions 0.926 at 0 and 0.3, 0.951 at 0.5, 0.7 and
    always the turn; on 13-24 0.927 at every value. 0.5 is the lowest that
    gains, and keeps the most records (records were 7.3% of packet items on
    1-12 at 0.5, 5.8% at 0.7, 10.3% at 0). Lowering `STAND_IN` to 0.5 or 0
    for records that say what their turn says cost 13-24 0.012.
    """
    event_items = {it.id: it for it in items if it.kind == "event"}
    best_record: dict[str, Ranked] = {}  # event id -> its best record, if any
    for it in items:
        if it.kind not in ("event", "summary"):
            for eid in it.turns:
                best_record.setdefault(eid, it)
    out: list[Ranked] = []
    placed: set[str] = set()
    events_in: set[str] = set()
    covered: set[str] = set()
    for it in items:
        if it.kind == "summary":  # a lossy index over many events: it stands beside them
            out.append(it)
            continue
        if it.kind == "event":
            if it.id in events_in:  # brought up by one of its records
                continue
            rec = best_record.get(it.id)
            if (
                it.id not in covered
                and rec is not None
                and rec.id not in placed
                and records_of.get(it.id, 0) <= 1
                and rec.score >= STAND_IN * it.score
            ):
                if len(rec.turns) > 1 or says_what_its_turn_says(rec, it):
                    out.append(rec.at(it.score))
                    placed.add(rec.id)
                    covered |= set(rec.turns)
                else:  # the turn stands for it, with its relevance for the floor
                    evidence[it.id] = max(evidence.get(it.id, 0.0), evidence.get(rec.id, 0.0))
                    if _names_whose(rec, it, unnamed):  # and its record says whose it is
                        out.append(rec.at(it.score))
                        placed.add(rec.id)
            if it.id in covered:
                rejected[it.id] = "represented by a record made from it"
                continue
            events_in.add(it.id)
        elif it.id in placed:
            continue
        else:
            sources = set(it.turns)
            if sources & events_in:
                rejected[it.id] = "its source event ranks higher"
                continue
            (turn,) = sources if len(sources) == 1 else (None,)
            if (
                turn in event_items
                and turn not in covered
                and (
                    records_of.get(turn, 0) > 1
                    or not says_what_its_turn_says(it, event_items[turn])
                )
            ):
                events_in.add(turn)
                if records_of.get(turn, 0) <= 1 and _names_whose(it, event_items[turn], unnamed):
                    out.append(it)  # the record first: it says whose the turn is
                    out.append(event_items[turn].at(it.score))
                    evidence[turn] = max(evidence.get(turn, 0.0), evidence.get(it.id, 0.0))
                    continue
                out.append(event_items[turn].at(it.score))
                if records_of.get(turn, 0) > 1:
                    rejected[it.id] = "its turn, made into several records, stands for them"
                else:  # it stands for the record, with the record's relevance for the floor
                    rejected[it.id] = "its turn says more than it, and stands for it"
                    evidence[turn] = max(evidence.get(turn, 0.0), evidence.get(it.id, 0.0))
                continue
            covered |= sources
        out.append(it)
    return out


def _unnamed_turns(g: Gathered, items: list[Ranked]) -> dict[str, str]:
    """Turn id -> its speaker, for the turns among `items` whose text does not say who
    spoke ("I went to a support group yesterday", said by Caroline)."""
    if g.events is None:
        return {}
    out: dict[str, str] = {}
    for it in items:
        ev = g.events.events.get(it.id) if it.kind == "event" else None
        if ev is None:
            continue
        who = ev.metadata.get("speaker")
        if isinstance(who, str) and who and who.lower() not in ev.text.lower():
            out[it.id] = who
    return out


def _names_whose(record: Ranked, turn: Ranked, unnamed: Mapping[str, str] | None) -> bool:
    """Whether `record` names the speaker its `turn` does not (`SHOW_BOTH`): the turn
    stands for the record, and the record is shown too, just before it."""
    who = (unnamed or {}).get(turn.id)
    return SHOW_BOTH and who is not None and who.lower() in record.text.lower()


def says_what_its_turn_says(record: Ranked, turn: Ranked) -> bool:
    """Whether a record holds at least `SAYS_SAME` of its turn's content words (stems).

    Asked only of a record made from that one turn: a record made from several
    stands for all of them, and one slot is worth more than the words of one.

    The offline extractor often makes a record of one sentence of a turn that says
    several things: "Phone fell in the waterway, rip" of "so my phone fell in the
    waterway rip. got a pixel 9 on sale. how do i get my stuff over"; shown in the
    turn's place, the record hid the new phone.
    """
    said = content_stems(turn.text.partition(": ")[2])
    if not said:
        return True
    return len(content_stems(record.text) & said) >= SAYS_SAME * len(said)


def _held_events(
    found: GatheredEvents, known_at: datetime | None, valid_at: datetime, rejected: dict[str, str]
) -> GatheredEvents:
    """`found` without the events not held at (`known_at`, `valid_at`): received after
    `known_at` (None: now) or said after `valid_at`; each goes to `rejected`."""
    unknown = {
        eid: why
        for eid, ev in found.events.items()
        if (why := event_not_held(ev, known_at, valid_at)) is not None
    }
    if not unknown:
        return found
    rejected.update(unknown)
    events = {eid: ev for eid, ev in found.events.items() if eid not in unknown}
    return replace(found, events=events)


def _one_of_each_text(items: list[Ranked], rejected: dict[str, str]) -> list[Ranked]:
    """Keep the best-ranked of items that say the same (case and spacing aside).

    A user who pastes the same request twice, or a record made twice, would
    otherwise fill the packet with copies: on the PrefEval development set
    (turns drawn from a pool, so some repeat) three copies of "tell me the
    fastest car" stood above a stated preference.
    """
    out: list[Ranked] = []
    first: dict[str, str] = {}
    for it in items:
        key = " ".join(it.text.lower().split())
        if key in first:
            rejected[it.id] = f"says the same as {first[key]}"
            continue
        first[key] = it.id
        out.append(it)
    return out
