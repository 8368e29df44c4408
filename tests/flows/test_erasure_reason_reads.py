"""What an erasure's reason is checked against (issue 39, `remem.lifecycle.reasons`):
everything the erasure removes that could hold the erased words (a record's metadata,
an actor's events' metadata and checkpoints), read a page at a time, never an
actor's whole memory at once. Both backends."""

from __future__ import annotations

from typing import Any

import pytest

from remem import Memory
from remem.errors import InvalidInput
from remem.lifecycle import reasons
from remem.store.values import Asked
from remem.thread.api import checkpoint_save
from tests.support.backends import both_backends

REFUSED = "repeats"


def _why(reason: str) -> Asked:
    return Asked(None, None, reason)


@both_backends
def test_a_reason_repeating_a_record_metadata_value_is_refused(mem: Memory) -> None:
    rec = mem.remember(actor="alice", text="Sees a doctor", metadata={"clinic": "Quimperle"})
    with pytest.raises(InvalidInput, match=REFUSED):
        mem.forget(record_id=rec.id, asked=_why("DSR-9: the quimperle visits"))
    assert mem.store.records.get_record(mem.tenant, rec.id) is not None  # nothing was erased
    with pytest.raises(InvalidInput, match=REFUSED):  # the actor's records, too
        mem.forget(actor="alice", asked=_why("DSR-9: the quimperle visits"))
    assert mem.deletions(10) == []


@both_backends
def test_a_reason_repeating_an_event_metadata_or_checkpoint_word_is_refused(
    mem: Memory,
) -> None:
    mem.add_event(actor="bob", session="s1", role="user", text="hello there",
                  metadata={"city": "Zanzibar"})  # fmt: skip
    with pytest.raises(InvalidInput, match=REFUSED):
        mem.forget(actor="bob", asked=_why("ticket 4: bob from zanzibar"))
    checkpoint_save(mem, actor="carol", workflow="trip",
                    state={"step": "book", "data": {"hotel": "Marrakech Riad"}})  # fmt: skip
    with pytest.raises(InvalidInput, match=REFUSED):
        mem.forget(actor="carol", asked=_why("ticket 5: the marrakech trip"))
    assert mem.deletions(10) == []
    # words of neither go through, and a checkpoint's field names are not its words
    done = mem.forget(actor="carol", asked=_why("ticket 5: step data removal"))
    assert done.verified


@both_backends
def test_the_reason_check_reads_an_actor_a_page_at_a_time(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.remember(actor="dora", text="Collects tin soldiers")  # the oldest: read last
    for i in range(reasons.PAGE * 2 + 5):
        mem.remember(actor="dora", text=f"note number {i}")
    asked: list[int] = []
    store: Any = mem.store.records
    real_list, real_page = store.list_records, store.records_page

    def list_records(*args: Any, limit: int = 10_000, **kw: Any) -> Any:
        asked.append(limit)
        return real_list(*args, limit=limit, **kw)

    def records_page(scope: Any, statuses: Any, after: Any, limit: int) -> Any:
        asked.append(limit)
        return real_page(scope, statuses, after, limit)

    monkeypatch.setattr(store, "list_records", list_records)
    monkeypatch.setattr(store, "records_page", records_page)
    with pytest.raises(InvalidInput, match=REFUSED):  # found past the first pages
        mem.forget(actor="dora", asked=_why("DSR-7: the soldiers"))
    assert asked and max(asked) <= reasons.PAGE, asked


@both_backends
def test_a_reason_repeating_a_history_reason_is_refused(mem: Memory) -> None:
    rec = mem.propose_procedure(text="Skip checks", actor="erin")
    mem.reject(rec.id, reviewer="dana", reason="conflicts with the Bratislava office")
    with pytest.raises(InvalidInput, match=REFUSED):  # the rejection's reason is erased too
        mem.forget(record_id=rec.id, asked=_why("DSR-3: the bratislava one"))
    assert mem.deletions(10) == []


@both_backends
def test_a_reason_repeating_a_document_source_is_refused(mem: Memory) -> None:
    uri = "file:///letters/Weberhof-referral.txt"
    mem.add_document(text="notes of a call", title="Call notes", source_uri=uri, scope="actor:fay")
    with pytest.raises(InvalidInput, match=REFUSED):  # the document goes with its source
        mem.forget(actor="fay", asked=_why("DSR-8: the weberhof referral"))
    assert mem.deletions(10) == []


@both_backends
def test_a_reason_repeating_a_record_field_is_refused(mem: Memory) -> None:
    rec = mem.remember(actor="gus", text="Has a severe allergy", field="allergy:cashew",
                       value="severe")  # fmt: skip
    with pytest.raises(InvalidInput, match=REFUSED):  # the field goes with the record
        mem.forget(record_id=rec.id, asked=_why("DSR-6: the cashew entry"))
    with pytest.raises(InvalidInput, match=REFUSED):
        mem.forget(actor="gus", asked=_why("DSR-6: the cashew entry"))
    assert mem.deletions(10) == []
