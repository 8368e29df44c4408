"""The rules of consolidation: ADD / UPDATE / NO-OP / INVALIDATE for one candidate.

`decide` is a pure function of the candidate and the records it could touch
(those about the same field, and the most similar ones); `with_verdict` applies
a model's advice through the same policy. `remem.consolidate.plan` turns a
decision into rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from remem.model import Action, Candidate, Record, Status
from remem.policy.precedence import may_supersede, outranks_or_equals
from remem.policy.text import nfc

DUPLICATE_COSINE = 0.92
DUPLICATE_JACCARD = 0.75

_SYNONYMS = {
    "love": "like", "loves": "like", "loved": "like", "likes": "like", "liked": "like",
    "enjoy": "like", "enjoys": "like", "adore": "like", "adores": "like", "fond": "like",
    "hate": "dislike", "hates": "dislike", "dislikes": "dislike", "detest": "dislike",
    "favourite": "favorite", "colour": "color", "prefers": "prefer", "preferred": "prefer",
}  # fmt: skip
_STOP = frozenset(
    "a an the i i'm im my me is am are was be been really very so much just also "
    "user user's to of and that this it for".split()
)
_TOKEN = re.compile(r"[^\W_]+(?:'[a-z]+)?", re.UNICODE)


def normalise(text: str) -> frozenset[str]:
    """Content words of a statement, with synonyms folded and plurals stripped."""
    out = set()
    for tok in _TOKEN.findall(text.lower()):
        if tok in _STOP:
            continue
        tok = _SYNONYMS.get(tok, tok)
        if len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss"):
            tok = tok[:-1]
        out.add(tok)
    return frozenset(out)


def text_similarity(a: str, b: str) -> float:
    """Jaccard similarity of the normalised content words of two statements."""
    na, nb = normalise(a), normalise(b)
    if not na or not nb:
        return 1.0 if na == nb else 0.0
    return len(na & nb) / len(na | nb)


def same_value(a: str | None, b: str | None) -> bool:
    """Whether two structured values say the same thing."""
    if a is None or b is None:
        return a == b
    a, b = nfc(a), nfc(b)  # a value stored decomposed before values were put in NFC
    return normalise(a) == normalise(b) or a.strip().lower() == b.strip().lower()


def same_statement(record: Record, candidate: Candidate) -> bool:
    """Whether a record and a candidate about one field say the same thing: their values
    (`same_value`), or, when neither has a value, their texts, which then are the value
    ("Bob drinks tea" about `beverage` is not "Bob drinks coffee")."""
    if record.value is None and candidate.value is None:
        return same_value(record.text, candidate.text)
    return same_value(record.value, candidate.value)


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with a candidate, and why."""

    action: Action
    reason: str
    target: str | None = None  # the duplicate, for NO-OP
    supersedes: tuple[str, ...] = ()  # records the new one replaces (UPDATE)
    late_behind: str | None = None  # a newer record already holds this field
    conflicts_with: tuple[str, ...] = ()
    binding: bool = False  # decided by a rule no model verdict may override
    # NO-OP: the candidate's source events the target lacks, to join its provenance
    adds_sources: tuple[str, ...] = ()


def restated_sources(candidate: Candidate, target: Record) -> tuple[str, ...]:
    """The candidate's source events an active `target` it restates does not name yet. Pure.

    A statement said again joins the record's provenance (so erasing the record
    reaches every event that said it); an event already there adds nothing,
    which keeps a re-run of the same (event, strategy) idempotent.
    """
    if target.status is not Status.ACTIVE:
        return ()
    have = set(target.source.event_ids)
    return tuple(e for e in dict.fromkeys(candidate.source.event_ids) if e not in have)


def decide(
    candidate: Candidate,
    same_field: Sequence[Record],
    neighbours: Sequence[tuple[Record, float]],
) -> Decision:
    """Decide ADD / UPDATE / NO-OP for a candidate. Pure.

    `same_field` are the scope's active and invalid records about the
    candidate's field; `neighbours` are similar active records with their
    cosine similarity (or None-free 0.0 when no embedder is configured). A
    neighbour about another field than the candidate's is not its duplicate
    (`_other_field`).
    """
    active_same = [r for r in same_field if r.status is Status.ACTIVE]
    # a re-run of the same source event never adds a second record
    for r in same_field:
        if set(r.source.event_ids) & set(candidate.source.event_ids) and same_statement(
            r, candidate
        ):
            return Decision(
                Action.NOOP,
                "already recorded from the same event",
                target=r.id,
                binding=True,
                adds_sources=restated_sources(candidate, r),
            )

    if candidate.field is not None and active_same:
        equal = [r for r in active_same if same_statement(r, candidate)]
        if equal:
            best = equal[0]
            if not outranks_or_equals(best.authority, candidate.authority):
                return Decision(
                    Action.UPDATE,
                    f"same value, now stated with {candidate.authority.value} authority",
                    supersedes=(best.id,),
                    binding=True,
                )
            return Decision(
                Action.NOOP,
                f"same {candidate.field} as {best.id}",
                target=best.id,
                binding=True,
                adds_sources=restated_sources(candidate, best),
            )
        newer = [r for r in active_same if r.valid_from > candidate.observed_at]
        if newer:
            return Decision(
                Action.ADD,
                f"older than {newer[0].id}, which already holds {candidate.field}; kept as history",
                late_behind=newer[0].id,
                binding=True,
            )
        replace = tuple(
            r.id
            for r in active_same
            if may_supersede(candidate.authority, candidate.observed_at, r.authority, r.valid_from)
        )
        keep = tuple(r.id for r in active_same if r.id not in replace)
        if replace:
            return Decision(
                Action.UPDATE,
                f"newer statement about {candidate.field}",
                supersedes=replace,
                conflicts_with=keep,
                binding=True,
            )
        return Decision(
            Action.ADD,
            f"conflicts with higher-authority {', '.join(keep)}; both kept",
            conflicts_with=keep,
            binding=True,
        )

    for rec, cosine in neighbours:
        if rec.status is not Status.ACTIVE or rec.kind is not candidate.kind:
            continue
        if _other_field(rec, candidate):
            continue  # about another thing, however alike it reads: "Sister Bec lives in ..."
        lexical = text_similarity(rec.text, candidate.text)
        if cosine >= DUPLICATE_COSINE or lexical >= DUPLICATE_JACCARD:
            if (
                candidate.is_correction
                and not same_value(rec.text, candidate.text)
                and may_supersede(
                    candidate.authority, candidate.observed_at, rec.authority, rec.valid_from
                )
            ):  # "sorry, I meant the 5th": the record put right, not a duplicate of it
                return Decision(
                    Action.UPDATE, f"corrects near-duplicate {rec.id}", supersedes=(rec.id,)
                )
            if not outranks_or_equals(rec.authority, candidate.authority):
                return Decision(
                    Action.UPDATE,
                    f"near-duplicate of {rec.id}, now with {candidate.authority.value} authority",
                    supersedes=(rec.id,),
                )
            return Decision(
                Action.NOOP,
                f"near-duplicate of {rec.id} (cosine {cosine:.2f}, words {lexical:.2f})",
                target=rec.id,
                adds_sources=restated_sources(candidate, rec),
            )
    return Decision(Action.ADD, "new information")


def _other_field(rec: Record, candidate: Candidate) -> bool:
    """Whether a record is about another field than the candidate, so never its
    duplicate however alike they read: "Sister Ana lives in Bristol" on
    `sister_ana:home` is not "Sister Bec lives in Bristol" on `sister_bec:home`, nor
    "Is allergic to peanuts" one to shellfish. A correction may still put right a
    look-alike of the same family ("sorry, I meant pecans": `allergy:pecan` for
    `allergy:peanut`), never one of another family or person."""
    if not (rec.field and candidate.field) or rec.field == candidate.field:
        return False
    same_family = rec.field.partition(":")[0] == candidate.field.partition(":")[0]
    return not (candidate.is_correction and same_family)


# what a diet leaves out, by the last word of an `eats:<food>` key
_MEAT = frozenset(
    "meat beef pork chicken lamb bacon ham turkey steak sausage veal duck venison burger".split()
)
_FISH = frozenset(
    "fish seafood salmon tuna shellfish prawn shrimp sushi cod crab lobster oyster mussel "
    "anchovy sardine".split()
)
_ANIMAL = frozenset("egg dairy cheese milk butter honey yogurt yoghurt cream".split())
LEFT_OUT = {
    "vegetarian": _MEAT | _FISH,
    "vegan": _MEAT | _FISH | _ANIMAL,
    "pescatarian": _MEAT,
    "no meat": _MEAT,
}


def diets_left_behind(candidate: Candidate, diets: Sequence[Record]) -> tuple[str, ...]:
    """The active `diet` records a newer "eats <food>" statement contradicts. Pure.

    "I've started eating fish again" (`eats:fish` = "eats") ends a vegetarian or
    vegan diet, which leaves fish out (`LEFT_OUT`); it says nothing of a pescatarian
    one. Only a statement that may supersede the diet's record (newer, at least its
    authority) ends it.
    """
    field, value = candidate.field or "", candidate.value
    if not field.startswith("eats:") or value != "eats":
        return ()
    food = field.partition(":")[2].rsplit("_", 1)[-1]
    return tuple(
        r.id
        for r in diets
        if r.status is Status.ACTIVE
        and r.field == "diet"
        and food in LEFT_OUT.get((r.value or "").strip().lower(), frozenset())
        and r.valid_from <= candidate.observed_at
        and may_supersede(candidate.authority, candidate.observed_at, r.authority, r.valid_from)
    )


# words of a choice's statement that say nothing of what it is about
_CHOICE_WORDS = frozenset("instead now again anymore these days nowadays from on".split())
# a verb that says the choice is a switch, whatever was said of the old one
_SWITCH = re.compile(r"\b(?:switched|changed|swapped|gone|went|decided)\b", re.IGNORECASE)


def choices_left_behind(candidate: Candidate, neighbours: Sequence[Record]) -> tuple[str, ...]:
    """The active records a newer choice ("I'm doing the 10k instead of the half") ends. Pure.

    A candidate about `choice:<what was left>` (value: the new choice) ends the
    earlier choice of the same thing (a `choice:` record whose value is what was
    left), and a plain record (no field, same kind) that tells of what was left
    and not of the new choice: by every word of it when it has two or more ("half
    marathon"), else by that word and either a word of the statement besides both
    choices ("doing") or a statement that says it switched. Only what the candidate
    may supersede (newer, at least its authority) is ended.
    """
    field = candidate.field or ""
    if not field.startswith("choice:"):
        return ()
    left = normalise(field.partition(":")[2].replace("_", " "))
    new = normalise(candidate.value or "")
    frame = normalise(candidate.text) - left - new - _CHOICE_WORDS
    switched = _SWITCH.search(candidate.text) is not None
    out = []
    for r in neighbours:
        if r.status is not Status.ACTIVE or r.kind is not candidate.kind or not left:
            continue
        if r.valid_from > candidate.observed_at or not may_supersede(
            candidate.authority, candidate.observed_at, r.authority, r.valid_from
        ):
            continue
        if r.field is not None:
            ends = r.field.startswith("choice:") and normalise(r.value or "") <= left
        else:
            words = normalise(r.text)
            told = left <= words if len(left) > 1 else bool(left & words)
            ends = told and not (new & words) and (len(left) > 1 or switched or bool(frame & words))
        if ends:
            out.append(r.id)
    return tuple(out)


def with_verdict(
    rule: Decision,
    candidate: Candidate,
    neighbours: Sequence[Record],
    action: str,
    target: str | None,
    reason: str,
) -> Decision:
    """Apply a model's verdict through policy. Pure.

    The model only advises: a binding rule (the same event again, a field
    already held) stands; a target outside the candidate's neighbours is
    ignored; an older statement never replaces a newer record, and a lower
    authority never replaces a higher one (both are kept, the conflict shown).
    """
    if rule.binding:
        return rule
    said = f"model: {reason}" if reason else "model"
    if action == Action.ADD.value:
        return Decision(Action.ADD, said)
    by_id = {r.id: r for r in neighbours if r.status is Status.ACTIVE}
    old = by_id.get(target or "")
    if old is None:
        return Decision(Action.ADD, f"{said}; its target {target!r} is not a neighbour, so added")
    if action == Action.NOOP.value:
        return Decision(
            Action.NOOP, said, target=old.id, adds_sources=restated_sources(candidate, old)
        )
    if old.valid_from > candidate.observed_at:
        return Decision(
            Action.ADD, f"{said}; older than {old.id}, so kept as history", late_behind=old.id
        )
    if not may_supersede(candidate.authority, candidate.observed_at, old.authority, old.valid_from):
        return Decision(
            Action.ADD,
            f"{said}; {old.id} has higher authority, so both are kept",
            conflicts_with=(old.id,),
        )
    return Decision(Action(action), said, supersedes=(old.id,))
