"""The relevance floor: a packet ends at the last item relevant to the query.

An item is relevant when its own evidence (word evidence plus cosine, see
`remem.recall.fusion`; the speaker and date bonuses do not count) reaches the
floor, or when it borrows that of a relevant match: a turn next to one (its
neighbour share), a record made from one, the current record of a superseded
one. A standing preference that applies to a request (`remem.policy.applies`)
is relevant by what it applies to. Everything else is cut, however few items
remain, instead of padding the packet to k with turns that share nothing with
the query.

The floor is absolute, not relative to the best candidate: a query nothing
answers gets an empty packet rather than its least bad matches. With an
embedder, evidence is word evidence (0 to 1) plus the cosine of
all-MiniLM-L6-v2, and `FLOOR` applies; a lexical-only recall has word evidence
alone, and `WORD_FLOOR` applies to it.

`FLOOR` is low because MiniLM's cosine does not separate much better: on the
PrefEval development set a request's own stated preference has a median
cosine of 0.42 with it and a quarter are below 0.33, while the best candidate
for a request on a topic the actor never mentioned is at 0.12 (10 preferences
per actor) or 0.34 (50). Raising the floor from 0.15 to 0.20 and 0.25 cut
off-topic packets at 10 per actor from 5.8 to 3.4 and 1.8 items but in-topic
hit@5 from 0.97 to 0.95 and 0.91; LoCoMo recall@10 held within 0.002 up to
0.30 (README, "Preference recall"). A floor relative to the query's pool
(its mean cosine plus 1, 1.5 or 2 standard deviations) did no better: the
best off-topic candidate stands as far above its pool as a requested
preference does, so it cut on-topic hits as fast as off-topic items.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence

from remem.model import PacketItem

FLOOR = 0.15  # word evidence + cosine, with an embedder
WORD_FLOOR = 0.3  # word evidence alone (no embedder): a third of the query's weight


def relevance(item: PacketItem, evidence: Mapping[str, float]) -> float:
    """An item's own evidence, or the best of the turns it was made from."""
    own = evidence.get(item.id, 0.0)
    sources = item.source.get("event_ids", []) if item.kind != "summary" else []
    return max([own, *(evidence.get(e, 0.0) for e in sources)])


def above_floor(
    items: Sequence[PacketItem],
    evidence: Mapping[str, float],
    rejected: dict[str, str],
    floor: float = FLOOR,
    applies: Container[str] = (),
) -> list[PacketItem]:
    """The items whose relevance reaches `floor`, in order; the others go to `rejected`.

    A standing preference that applies to the request (`applies`) is relevant by
    what it applies to, whatever its evidence.
    """
    kept: list[PacketItem] = []
    for it in items:
        r = relevance(it, evidence)
        if r >= floor or it.id in applies:
            kept.append(it)
        else:
            rejected[it.id] = f"below the relevance floor ({r:.2f} < {floor:.2f})"
    return kept
