"""A profile reads a bounded number of records, and says when it was capped
(`remem.memory.reads.actor_profile`, `PROFILE_RECORDS_MOST`): it is on the request path
(HTTP `GET /v1/actors/{actor}/profile`, MCP `get_profile`), so an actor with a long
history costs it the newest records about a field, never every record; records without
a field (most of an actor's notes) are not read at all. On both backends."""

from __future__ import annotations

import pytest

from remem import Memory
from remem.memory import reads
from remem.service.answers import ProfileOut
from tests.support.backends import both_backends
from tests.support.clock import Clock
from tests.support.field_history import rows_read

CAP = 40  # the bound, made small so the test writes a few dozen records


@pytest.fixture(autouse=True)
def small_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reads, "PROFILE_RECORDS_MOST", CAP)


def fields(mem: Memory, clock: Clock, start: int, n: int) -> None:
    for i in range(start, start + n):
        clock.advance(minutes=1)
        mem.remember(actor="ann", text=f"Ann's hobby {i} is kite {i}", field=f"hobby:h{i}",
                     value=f"kite {i}")  # fmt: skip


@both_backends
def test_a_profile_reads_the_newest_records_about_a_field_and_says_when_capped(
    mem: Memory, clock: Clock
) -> None:
    fields(mem, clock, 0, 30)
    for i in range(60):  # newer notes without a field: not what a profile reads
        clock.advance(minutes=1)
        mem.remember(actor="ann", text=f"Ann walked along the river on day {i}")
    whole = mem.profile(actor="ann")
    assert sorted(f.field for f in whole.facts) == sorted(f"hobby:h{i}" for i in range(30))
    assert whole.capped == 0 and whole.note is None

    fields(mem, clock, 30, 15)  # 45 fields: more than the cap
    with rows_read(mem) as seen:
        capped = mem.profile(actor="ann")
    assert sorted(f.field for f in capped.facts) == sorted(f"hobby:h{i}" for i in range(5, 45))
    assert seen[0] <= CAP + 1  # the newest records, one more to know some were left
    assert capped.capped == CAP
    assert capped.note is not None and f"newest {CAP} records" in capped.note
    assert "ann's profile" in capped.note.lower()
    answer = ProfileOut.model_validate(capped.as_dict()).model_dump()  # what HTTP answers
    assert answer["capped"] == CAP and answer["note"] == capped.note
    # the fields left out are still there, one at a time
    assert mem.fact(actor="ann", field="hobby:h0").as_dict()["value"] == "kite 0"
