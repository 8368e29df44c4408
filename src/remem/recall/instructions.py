"""Standing instructions on how to answer, pinned at the head of every packet of their person.

"Wants answers as bullet points", "Wants the answer first, then the
explanation" (the field family `ANSWER_STYLE`, "answer_style:<aspect>": made by
`remem.extract.offline.style`, or written under it by any extractor or the
application) bear on every answer, whatever the question is about, and share
neither words nor meaning with it: no search finds them. So every recall of the
actor reads them by field (one index lookup) and puts those it may return (in
scope, held at the recall's time axes, within its sensitivity and metadata
filter) in the packet's `pinned`, flagged "pinned", before the ranked items and
out of the same budget; they take none of the k ranked slots. At most `MOST`,
newest first. The read returns only what the recall may return (of a recall of now,
active records valid now; of an as-of recall, those written by its `known_at` and
valid from its `valid_at` on) and at most `FIELD_PREFIX_MOST` of them
(`remem.store.roles`), newest first.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from remem.model import PacketItem
from remem.policy.applies import ANSWER_STYLE
from remem.policy.metadata import matches
from remem.policy.validity import not_recallable, within_sensitivity
from remem.recall.gather import closings
from remem.recall.items import record_item
from remem.recall.request import RecallRequest
from remem.store.roles import RecordStore

MOST = 6  # one per aspect of `remem.extract.offline.style`


def standing_instructions(
    records: RecordStore, req: RecallRequest, now: datetime
) -> list[PacketItem]:
    """The actor's instructions on how to answer that this recall may return, newest first."""
    if req.past:
        found = records.records_by_field_prefix(req.scope, ANSWER_STYLE, held_at=req.axes(now))
    else:
        found = records.records_by_field_prefix(req.scope, ANSWER_STYLE, current_at=now)
    closed = closings(records, req.scope.tenant, found, req.known_at, now) if req.past else {}
    held = [
        r
        for r in found
        if not_recallable(r, now, req.known_at, req.valid_at, closed) is None
        and within_sensitivity(r, req.max_sensitivity)
        and matches(r.metadata, req.scope.metadata)
    ]
    held.sort(key=lambda r: r.valid_from, reverse=True)
    return [pinned(record_item(r, 1.0)) for r in held[:MOST]]


def pinned(item: PacketItem) -> PacketItem:
    """`item` flagged "pinned", after any flag of its own."""
    return replace(item, flags=(*item.flags, "pinned"))
