"""Search on PostgreSQL at scale: word and vector indexes that forced row-level security
still lets the planner use, and results no worse than the exact scan.

Under forced row-level security the planner may use an index only for a LEAKPROOF
condition; the full-text match `@@` is not one, so words are searched through a
btree of (tenant, actor, term) rows that carry each term's ts_rank, and vectors
through an HNSW index per embedding model (see `remem.store.postgres.store`).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg import sql

from remem.model import Event, Role, Source, Status
from remem.store.postgres import sql as q
from remem.store.postgres.rows import vector_text
from remem.store.postgres.store import SCHEMA_VERSION, PostgresStore
from remem.store.postgres.terms import QUIET_SEARCHES, TermWindows
from remem.store.roles import Scope, Write
from tests.support import pg
from tests.support.store import NOW, T, put, rec

DIM = 32
MODEL = "test-32"


@pytest.fixture
def dsn(pg_admin_dsn: str) -> Iterator[str]:
    with pg.fresh_database(pg_admin_dsn) as app_dsn:
        yield app_dsn


@pytest.fixture
def store(dsn: str) -> Iterator[PostgresStore]:
    s = PostgresStore(dsn, max_size=2)
    yield s
    s.close()


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def load(store: PostgresStore, tenant: str, actor: str, vectors: np.ndarray) -> list[str]:
    """Records `{tenant}-{actor}-{i}` with these vectors; their ids."""
    records = [rec(f"{tenant}-{actor}-{i}", f"fact {i}", actor=actor, tenant=tenant)
               for i in range(len(vectors))]  # fmt: skip
    for i in range(0, len(records), 1000):
        store.records.apply(
            Write(tenant=tenant, inserts=tuple(records[i : i + 1000]),
                  vectors=tuple(vectors[i : i + 1000]), vector_model=MODEL)
        )  # fmt: skip
    return [r.id for r in records]


def exact(vectors: np.ndarray, ids: list[str], query: np.ndarray, k: int) -> list[str]:
    order = np.argsort(-(vectors @ query), kind="stable")[:k]
    return [ids[i] for i in order]


def test_hnsw_results_hold_the_exact_top_hit_and_nothing_of_others(dsn: str) -> None:
    rng = np.random.default_rng(5)
    mine = unit(rng.standard_normal((3000, DIM)))
    queries = unit(rng.standard_normal((20, DIM)))
    approx = PostgresStore(dsn, max_size=2, exact_scan_max=0)  # HNSW for every scope
    ids = load(approx, "t1", "alice", mine)
    # the queries themselves, stored for another actor and another tenant: the nearest
    # rows of the whole index, which a leaking filter would return first
    load(approx, "t1", "bob", queries)
    load(approx, "t2", "alice", queries)
    with psycopg.connect(dsn) as conn:
        names = [r[0] for r in conn.execute("SELECT indexname FROM pg_indexes")]
    assert q.VectorIndex("record_vectors", MODEL, DIM).name in names
    alice = Scope("t1", "alice")
    found_top, overlap = 0, 0
    try:
        for query in queries:
            hits = approx.search.vector_search(alice, MODEL, query, 10, NOW)
            got = [rid for rid, _ in hits]
            assert len(got) == 10 and all(rid.startswith("t1-alice-") for rid in got)
            cosines = [c for _, c in hits]
            assert cosines == sorted(cosines, reverse=True)
            truth = exact(mine, ids, query, 10)
            found_top += truth[0] in got
            overlap += len(set(truth) & set(got))
    finally:
        approx.close()
    assert found_top == len(queries)  # the exact best hit, every time
    assert overlap >= 0.9 * 10 * len(queries)


def test_a_small_scope_is_scanned_exactly_and_a_starved_search_falls_back(dsn: str) -> None:
    rng = np.random.default_rng(6)
    crowd = unit(rng.standard_normal((2000, DIM)))
    few = unit(rng.standard_normal((4, DIM)))
    approx = PostgresStore(dsn, max_size=2, exact_scan_max=0)
    exactly = PostgresStore(dsn, max_size=2)  # 4 vectors: under EXACT_SCAN_MIN
    try:
        load(approx, "t1", "bob", crowd)
        ids = load(approx, "t1", "alice", few)
        alice = Scope("t1", "alice")
        query = few[2]
        # HNSW finds fewer than asked (alice owns 4 of 2,004 indexed rows): exact instead
        assert [r for r, _ in approx.search.vector_search(alice, MODEL, query, 10, NOW)] == exact(
            few, ids, query, 10
        )
        assert exactly.search.vector_search(
            alice, MODEL, query, 10, NOW
        ) == approx.search.vector_search(alice, MODEL, query, 10, NOW)
    finally:
        approx.close()
        exactly.close()


def test_each_model_and_dimension_gets_its_own_index(store: PostgresStore, dsn: str) -> None:
    put(store, rec("a1", "one"), rec("a2", "two"))  # test-8
    # a tenant's vectors are of one model and dimension (`remem.store.flows.vector_fit`):
    # the other two in tenants of their own; the indexes are the table's, every tenant's
    store.records.apply(Write(tenant="t2", inserts=(rec("a3", "three", tenant="t2"),),
                      vectors=(np.ones(4, np.float32) / 2,), vector_model="test-8"))  # fmt: skip
    wide = np.ones(HNSW_TOO_WIDE, np.float32) / np.sqrt(HNSW_TOO_WIDE)
    store.records.apply(
        Write(
            tenant="t3",
            inserts=(rec("a4", "four", tenant="t3"),),
            vectors=(wide,),
            vector_model="wide",
        )
    )
    event = Event("e1", "t1", "alice", "s1", Role.USER, "hello", T)
    store.events.add_events([event], [])
    store.search.add_event_vectors("t1", [(event, np.ones(8, np.float32) / np.sqrt(8))], "test-8")
    with psycopg.connect(dsn) as conn:
        names = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes")}
    for table, model, dims in [("record_vectors", "test-8", 8), ("record_vectors", "test-8", 4),
                               ("event_vectors", "test-8", 8)]:  # fmt: skip
        assert q.VectorIndex(table, model, dims).name in names
    assert q.VectorIndex("record_vectors", "wide", HNSW_TOO_WIDE).name not in names
    wide_alice, alice = Scope("t3", "alice"), Scope("t2", "alice")
    assert [r for r, _ in store.search.vector_search(wide_alice, "wide", wide, 5, NOW)] == ["a4"]
    assert [r for r, _ in store.search.vector_search(alice, "test-8", np.ones(4) / 2, 5, NOW)] == [
        "a3"
    ]


HNSW_TOO_WIDE = 4001  # pgvector indexes `halfvec` up to 4,000 dimensions


def explain(dsn: str, statement: Any, params: Any, settings: list[str]) -> str:
    with psycopg.connect(dsn) as conn:
        conn.execute(q.SET_TENANT, {"tenant": "t1"})
        for setting in settings:
            conn.execute(setting)
        plan = conn.execute(sql.SQL("EXPLAIN ") + sql.SQL(statement), params).fetchall()
    return "\n".join(r[0] for r in plan)


def test_forced_row_level_security_leaves_both_indexes_usable(
    store: PostgresStore, dsn: str
) -> None:
    put(store, rec("a1", "Loves green tea"), rec("a2", "Hates coffee"))
    alice = Scope("t1", "alice")
    built = q.search_records(alice, "green tea", 10)
    assert built is not None
    # tiny tables invite a sequential scan; forbidding it shows the index can be used
    plan = explain(dsn, built[0], built[1], ["SET enable_seqscan = off"])
    assert "record_terms_pkey" in plan and "Seq Scan" not in plan
    ix = q.VectorIndex("record_vectors", "test-8", 8)
    approx, params = q.vector_search_hnsw(ix, alice, False)
    text = vector_text(np.ones(8, np.float32))
    with psycopg.connect(dsn) as conn:
        rendered = approx.as_string(conn)
    settings = q.HNSW_SETTINGS % {"ef_search": "'100'", "plan": f"'{q.CUSTOM_PLAN}'"}
    plan = explain(dsn, rendered, {**params, "query": text, "at": NOW, "limit": 10}, [settings])
    assert ix.name in plan


def ts_rank_of(dsn: str, tenant: str, actor: str, words: list[str]) -> dict[str, float]:
    """What ts_rank gives the OR of these words, straight from the records table."""
    query = " || ".join("plainto_tsquery('english', %s)" for _ in words)
    with psycopg.connect(dsn) as conn:
        conn.execute(q.SET_TENANT, {"tenant": tenant})
        rows = conn.execute(
            f"SELECT id, ts_rank(tsv, {query}) FROM records "
            f"WHERE tenant = %s AND actor = %s AND tsv @@ ({query})",
            [*words, tenant, actor, *words],
        ).fetchall()
    return {r[0]: r[1] for r in rows}


TEXTS = [
    "Green tea in the morning, green tea at night, green tea always",
    "I like green apples",
    "Tea with Sam on Friday",
    "O'Brien's back\\slash tea: it's 'quoted'",
    "Nothing to see here",
]


def test_word_scores_are_ts_rank_of_the_or_of_the_query_words(
    store: PostgresStore, dsn: str
) -> None:
    put(store, *[rec(f"r{i}", text) for i, text in enumerate(TEXTS)])
    put(store, rec("b1", "green tea", actor="bob"))
    alice = Scope("t1", "alice")
    for query in ["green tea", "tea", "morning apples friday", "o'brien's slash", "zebra"]:
        words = q.words(query)
        truth = ts_rank_of(dsn, "t1", "alice", words)
        hits = store.search.search_records(alice, query, 10)
        assert {h.id for h in hits} == set(truth), query
        for h in hits:
            assert h.score == pytest.approx(truth[h.id], rel=1e-5), (query, h.id)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


@pytest.mark.parametrize("kept", [False, True], ids=["statement", "kept windows"])
def test_only_the_newest_matches_are_ranked(store: PostgresStore, kept: bool) -> None:
    store.search.terms = TermWindows(store.backend, window=3)
    # the oldest record says "tea" most often, yet falls outside the newest three matches
    put(store, rec("old", "tea tea tea tea", valid_from=T), vectors=False)
    for i in range(4):
        put(store, rec(f"new{i}", f"tea and {i} biscuits"), vectors=False)
    searches = QUIET_SEARCHES + 1 if kept else 1  # past the quiet ones, windows answer
    for _ in range(searches):
        hits = store.search.search_records(Scope("t1", "alice"), "tea", 10)
    assert [h.id for h in hits] == ["new3", "new2", "new1"]
    assert store.search.terms.held("t1", "alice") == (3 if kept else 0)


def test_forgetting_takes_the_words_too(store: PostgresStore, dsn: str) -> None:
    store.events.add_events([Event("e1", "t1", "alice", "s1", Role.USER, "green tea", T)], [])
    put(store, rec("a1", "Loves green tea", source=Source("event", ("e1",), "offline", "v1")))
    put(store, rec("a2", "Hates coffee"))

    def terms(table: str, column: str, key: str) -> int:
        with psycopg.connect(dsn) as conn:
            conn.execute(q.SET_ALL_TENANTS)
            found = conn.execute(f"SELECT count(*) FROM {table} WHERE {column} = %s", (key,))
            return int(found.fetchall()[0][0])

    assert terms("record_terms", "record_id", "a1") == 3  # love, green, tea
    assert terms("event_terms", "event_id", "e1") == 2
    assert store.erasure.forget_record("t1", "a1", NOW).verified
    assert terms("record_terms", "record_id", "a1") == 0
    assert terms("event_terms", "event_id", "e1") == 0  # the event's text is erased
    assert terms("record_terms", "record_id", "a2") == 2
    assert store.search.search_events(Scope("t1", "alice"), "green tea", 10) == []
    assert store.erasure.forget_actor("t1", "alice", NOW).verified
    assert terms("record_terms", "actor", "alice") == 0


def test_a_schema_3_database_gets_the_words_it_already_holds(pg_admin_dsn: str) -> None:
    with pg.fresh_database(pg_admin_dsn, empty=True) as empty:
        with psycopg.connect(empty) as conn:  # what remem made before schema 4
            conn.execute(q.SCHEMA_TABLE)
            for number, script in q.migrations():
                if number <= 3:
                    for statement in q.split_sql(script):
                        conn.execute(statement)
                    conn.execute(q.SET_VERSION, {"version": number})
            conn.execute(q.SET_TENANT, {"tenant": "t1"})
            for i, text in enumerate(TEXTS):
                conn.execute(
                    "INSERT INTO records (id, tenant, actor, namespace, kind, text, source_type, "
                    "authority, sensitivity, valid_from, created_at, updated_at, status) VALUES "
                    "(%s, 't1', 'alice', '/n', 'semantic', %s, 'explicit', 'confirmed', "
                    "'normal', %s, %s, %s, 'active')",
                    (f"r{i}", text, T, T, T),
                )
            conn.execute(
                "INSERT INTO events (tenant, id, actor, session, role, text, time, received_at) "
                "VALUES ('t1', 'e1', 'alice', 's1', 'user', 'tea on Friday', %s, %s)",
                (T, T),
            )
        store = PostgresStore(empty, max_size=1)
        try:
            assert store.schema_version() == SCHEMA_VERSION
            alice = Scope("t1", "alice")
            truth = ts_rank_of(empty, "t1", "alice", ["tea"])
            hits = store.search.search_records(alice, "tea", 10)
            assert {h.id: pytest.approx(truth[h.id]) for h in hits} == truth
            assert [h.id for h in store.search.search_events(alice, "friday", 10)] == ["e1"]
        finally:
            store.close()


def test_event_vectors_of_a_large_actor_are_searched_through_the_index(dsn: str) -> None:
    rng = np.random.default_rng(8)
    vectors = unit(rng.standard_normal((300, DIM)))
    approx = PostgresStore(dsn, max_size=2, exact_scan_max=0)
    try:
        events = [Event(f"e{i}", "t1", "alice", "s1", Role.USER, f"turn {i}",
                        T + timedelta(minutes=i)) for i in range(300)]  # fmt: skip
        approx.events.add_events(events, [])
        approx.search.add_event_vectors("t1", list(zip(events, vectors, strict=True)), MODEL)
        alice = Scope("t1", "alice")
        hits = approx.search.vector_search_events(alice, MODEL, vectors[7], 5, NOW)
        assert hits[0][0] == "e7" and len(hits) == 5
        # only events that happened by `at`: the index walk keeps the time filter
        early = approx.search.vector_search_events(
            alice, MODEL, vectors[7], 5, T + timedelta(minutes=3)
        )
        assert sorted(e for e, _ in early) == ["e0", "e1", "e2", "e3"]
    finally:
        approx.close()


def test_a_bulk_load_builds_the_index_once_at_its_end(dsn: str) -> None:
    rng = np.random.default_rng(9)
    mine = unit(rng.standard_normal((1500, DIM)))
    query = mine[7]
    name = q.VectorIndex("record_vectors", MODEL, DIM).name
    store = PostgresStore(dsn, max_size=2, exact_scan_max=0)

    def indexes() -> set[str]:
        with psycopg.connect(dsn) as conn:
            return {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes")}

    try:
        with store.bulk_load():
            ids = load(store, "t1", "alice", mine)
            assert name not in indexes()
            # no index yet: the search is exact, and right
            inside = store.search.vector_search(Scope("t1", "alice"), MODEL, query, 5, NOW)
            assert [rid for rid, _ in inside] == exact(mine, ids, query, 5)
        assert name in indexes()
        after = store.search.vector_search(Scope("t1", "alice"), MODEL, query, 5, NOW)
        assert after[0][0] == ids[7]
    finally:
        store.close()


def records_read(dsn: str, statement: str, params: dict[str, Any]) -> tuple[int, str]:
    """How many rows of `records` a statement read (EXPLAIN ANALYZE, all loops), and its
    plan as text."""
    with psycopg.connect(dsn) as conn:
        conn.execute(q.SET_TENANT, {"tenant": "t1"})
        found = conn.execute(sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) ") + sql.SQL(statement),
                             params).fetchall()  # fmt: skip
        text = conn.execute(sql.SQL("EXPLAIN ") + sql.SQL(statement), params).fetchall()

    def read(node: dict[str, Any]) -> int:
        own = (
            node["Actual Rows"] * node["Actual Loops"]
            if node.get("Relation Name") == "records"
            else 0
        )
        return round(own) + sum(read(n) for n in node.get("Plans", []))

    return read(found[0][0][0]["Plan"]), "\n".join(r[0] for r in text)


def test_a_word_search_reads_about_limit_records_however_many_match(
    store: PostgresStore, dsn: str
) -> None:
    # 300 matches, the best two proposed (never recalled): skipped, and the walk stops at five
    put(store, *[rec(f"r{i:03d}", "tea " * (1 + i // 100) + f"note {i}") for i in range(300)])
    put(store, rec("gone1", "tea tea tea tea tea", status=Status.PROPOSED),
        rec("gone2", "tea tea tea tea tea", status=Status.PROPOSED))  # fmt: skip
    built = q.search_records(Scope("t1", "alice"), "tea", 5)
    assert built is not None
    read, plan = records_read(dsn, *built)
    hits = store.search.search_records(Scope("t1", "alice"), "tea", 5)
    assert [h.id for h in hits] == ["r299", "r298", "r297", "r296", "r295"]
    assert read == 5  # joining every match first read 45,753 rows of records here
    assert "records_scope" not in plan  # each match is read by its key
