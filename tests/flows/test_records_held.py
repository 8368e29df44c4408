"""Stores keep decoded records between reads while they are unchanged.

`get_records` (every recall fetches its candidates through it) hands back the
records it decoded before: on SQLite until this connection writes or another
commits, on PostgreSQL while their scope's version stands; an erasure drops
them. These read through `Memory` on a real SQLite file or PostgreSQL database,
with a second `Memory` on it as the other process, and compare with a fresh
store, which holds nothing.
"""

from __future__ import annotations

from pathlib import Path

from remem import Memory
from remem.embed import HashEmbedder
from remem.model import Status
from remem.store.open import open_store
from tests.support.backends import both_backends

TEXTS = [f"I keep the {thing} in the {place}" for thing, place in [
    ("rake", "shed"), ("kayak", "garage"), ("violin", "attic"), ("passport", "desk"),
    ("tent", "loft"), ("kettle", "kitchen"), ("atlas", "study"), ("skis", "cellar"),
]]  # fmt: skip


def open_mem(db: Path | str) -> Memory:
    return Memory.open(db, embedder=HashEmbedder())


def fresh(db: Path | str, ids: list[str]) -> list[tuple[str, str, str | None]]:
    store = open_store(db)
    try:
        return [
            (r.id, r.status.value, r.superseded_by)
            for r in store.records.get_records("default", ids)
        ]
    finally:
        store.close()


def seen(mem: Memory, ids: list[str]) -> list[tuple[str, str, str | None]]:
    return [
        (r.id, r.status.value, r.superseded_by)
        for r in mem.store.records.get_records("default", ids)
    ]


@both_backends
def test_records_are_held_until_a_write_here_or_elsewhere_and_read_the_same(
    db_path: Path | str,
) -> None:
    with open_mem(db_path) as mem, open_mem(db_path) as other:
        ids = [mem.remember(actor="ann", text=text).id for text in TEXTS]
        asked = [ids[5], ids[1], "rec_missing", ids[7], ids[1], ids[0]]
        first = mem.store.records.get_records(mem.tenant, asked)
        again = mem.store.records.get_records(mem.tenant, asked)
        assert [a is b for a, b in zip(first, again, strict=True)] == [True] * len(first)
        assert seen(mem, asked) == fresh(db_path, asked)  # same records, same order

        # another connection commits: the held copy is not handed out
        newer = other.update(ids[1], text="I keep the kayak in the barn").id
        assert seen(mem, asked) == fresh(db_path, asked)
        assert (ids[1], Status.INVALID.value, newer) in seen(mem, asked)
        # this connection writes
        mem.update(ids[5], text="I keep the kettle in the pantry")
        assert seen(mem, asked) == fresh(db_path, asked)
        assert mem.store.records.get_records(mem.tenant, [ids[5]])[0].status is Status.INVALID
        # erased elsewhere, then here
        assert other.forget(record_id=ids[7]).verified
        assert ids[7] not in [r for r, _, _ in seen(mem, asked)]
        assert mem.forget(record_id=ids[0]).verified
        assert seen(mem, asked) == fresh(db_path, asked)
        assert {r for r, _, _ in seen(mem, asked)} == {ids[1], ids[5]}
        packet = mem.recall(actor="ann", query="where is my passport").as_dict()
        with open_mem(db_path) as third:
            assert packet == third.recall(actor="ann", query="where is my passport").as_dict()


@both_backends
def test_a_caller_changing_the_metadata_it_was_handed_changes_no_later_read(
    db_path: Path | str,
) -> None:
    with open_mem(db_path) as mem:
        rid = mem.remember(actor="ann", text=TEXTS[1], metadata={"room": "garage"}).id
        for _ in range(2):  # decoded, then held
            (item,) = [r for r in mem.recall(actor="ann", query="kayak").records if r.id == rid]
            assert item.metadata == {"room": "garage"}
            item.metadata["room"] = "attic"  # the caller's own copy, to do with as it likes
        (rec,) = mem.store.records.get_records(mem.tenant, [rid])
        assert rec.metadata == {"room": "garage"}
