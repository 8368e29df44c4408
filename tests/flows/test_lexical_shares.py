"""Issue 37: SQLite ranks words from each phrase's BM25 shares, kept while the file is
unchanged (`remem.store.sqlite.upkeep.PhraseShares`), with the very hits and scores FTS5 gives the
OR-query: the same rows, the same doubles, ties in the same order, the same floor of
the newest `LEXICAL_WINDOW` matches. A write by this connection or by another process
(a record added, one forgotten) is seen by the next search, whose hits are again
FTS5's own.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem import Memory
from remem.store.roles import Hit, Scope
from remem.store.sqlite import search as sqlite_search
from remem.store.sqlite import sql as q
from remem.store.sqlite import upkeep
from remem.store.sqlite.search import SQLiteSearch
from remem.store.sqlite.store import SQLiteStore

WORDS = "spade rake hoe trowel shed garden blue green red ladder hose seed".split()
WINDOW = 40  # the newest matches ranked, small enough that 300 rows pass it


def texts(seed: int, n: int) -> list[str]:
    """Texts of several lengths from few words: repeated words, equal texts (ties)."""
    pick = random.Random(seed)
    return [" ".join(pick.choices(WORDS, k=pick.choice([1, 2, 3, 5, 8]))) for _ in range(n)]


def queries(seed: int, n: int) -> list[str]:
    pick = random.Random(seed)
    return [" ".join(pick.sample([*WORDS, "absent", "nowhere"], pick.randint(1, 5)))
            for _ in range(n)]  # fmt: skip


@pytest.fixture
def mem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    monkeypatch.setattr(sqlite_search, "LEXICAL_WINDOW", WINDOW)
    monkeypatch.setattr(upkeep, "QUIET_SEARCHES", 0)  # phrases read from the first search
    rows = [{"actor": "ann", "session": "s", "role": "user", "text": t, "event_id": f"e{i}"}
            for i, t in enumerate(texts(1, 300))]  # fmt: skip
    with Memory.open(tmp_path / "m.db", embedder=None) as m:
        m.add_events(rows)
        for t in texts(2, 300):
            m.remember(actor="ann", text=t)
        yield m


def search_of(mem: Memory) -> SQLiteSearch:
    assert isinstance(mem.store, SQLiteStore)
    return mem.store.search


def in_sql(mem: Memory, events: bool, query: str, limit: int) -> list[Hit]:
    """The joined query: FTS5's BM25 of the OR-query, floor and all, in SQL alone."""
    scope, search = Scope(mem.tenant, "ann"), search_of(mem)
    if events:
        params = {"tenant": scope.tenant, "actor": scope.actor}
        return search._search("events_fts", scope, query, q.SEARCH_EVENTS, params, limit)
    sql, params = q.search_records(scope)
    return search._search("records_fts", scope, query, sql, params, limit)


def searched(mem: Memory, events: bool, query: str, limit: int) -> list[Hit]:
    scope, search = Scope(mem.tenant, "ann"), search_of(mem)
    if events:
        return search.search_events(scope, query, limit)
    return search.search_records(scope, query, limit)


@pytest.mark.parametrize("events", [False, True])
def test_kept_shares_rank_as_fts5_ranks_the_or_query(mem: Memory, events: bool) -> None:
    for limit in (3, 10, 60):
        for query in queries(3, 60):
            assert searched(mem, events, query, limit) == in_sql(mem, events, query, limit)
    held = search_of(mem)._shares._held
    assert held and all(len(s.rowids) <= WINDOW for s in held.values())


def test_with_little_kept_the_hits_are_the_same(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upkeep, "SHARES_HELD", 50)  # most phrases dropped as soon as read
    for query in queries(4, 40):
        assert searched(mem, False, query, 10) == in_sql(mem, False, query, 10)
    assert len(search_of(mem)._shares._held) <= 2


def test_a_write_of_this_store_is_seen_by_the_next_search(mem: Memory) -> None:
    before = searched(mem, False, "spade hose", 10)
    added = mem.remember(actor="ann", text="spade hose spade").id
    after = searched(mem, False, "spade hose", 10)
    assert after != before and after[0].id == added
    assert after == in_sql(mem, False, "spade hose", 10)


_WRITER = """
import sys
from remem import Memory
with Memory.open(sys.argv[1], embedder=None) as m:
    m.forget(record_id=sys.argv[2])
    print(m.remember(actor="ann", text="a ladder to the wheelbarrow seed").id)
    m.add_events([{"actor": "ann", "session": "s", "role": "user",
                   "text": "a ladder to the wheelbarrow seed", "event_id": "from-another-process"}])
"""


def test_a_write_of_another_process_is_seen_by_the_next_search(mem: Memory) -> None:
    db = search_of(mem).backend.path
    for events in (False, True):
        assert searched(mem, events, "ladder seed", 60) == in_sql(mem, events, "ladder seed", 60)
    best = searched(mem, False, "ladder seed", 60)[0].id
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.run(
        [sys.executable, "-c", _WRITER, db, best],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    added = child.stdout.strip()
    records = searched(mem, False, "ladder seed", 60)
    assert added in [h.id for h in records] and best not in [h.id for h in records]
    assert records == in_sql(mem, False, "ladder seed", 60)
    events = searched(mem, True, "ladder seed", 60)
    assert "from-another-process" in [h.id for h in events]
    assert events == in_sql(mem, True, "ladder seed", 60)


def test_searches_just_after_a_write_read_no_phrase(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upkeep, "QUIET_SEARCHES", 3)
    shares = search_of(mem)._shares
    for text in ("a wheel by the gate", "the gate's wheel squeaks"):
        mem.remember(actor="ann", text=text)
        for _ in range(3):  # FTS5 alone, nothing read
            assert searched(mem, False, "wheel gate", 10) == in_sql(mem, False, "wheel gate", 10)
        assert not shares._held
        assert searched(mem, False, "wheel gate", 10) == in_sql(mem, False, "wheel gate", 10)
        assert {k[1] for k in shares._held} == {f'"{q.scope_token(mem.tenant, "ann")}{w}"'
                                                for w in ("wheel", "gate")}  # fmt: skip


def test_a_cold_query_of_many_phrases_asks_fts5_and_keeps_what_it_read(mem: Memory) -> None:
    shares = search_of(mem)._shares
    query = " ".join(WORDS)  # each word in about a third of the rows: past the window at once
    assert searched(mem, False, query, 10) == in_sql(mem, False, query, 10)
    kept = {k[1] for k in shares._held}
    assert 0 < len(kept) < len(WORDS)  # stopped once a window of rows was read
    for _ in range(len(WORDS)):  # each call reads up to a window more, then none at all
        assert searched(mem, False, query, 10) == in_sql(mem, False, query, 10)
    assert len({k[1] for k in shares._held}) == len(WORDS)
