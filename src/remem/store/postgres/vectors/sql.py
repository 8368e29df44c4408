"""Named SQL of nearest-vector search on PostgreSQL: exact scans, HNSW indexes, their upkeep.

Built here and run in `remem.store.postgres.search`; `remem.store.postgres.sql`
re-exports every name, so the store reads all its SQL as one `q`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from psycopg import sql

from remem.store.postgres.scope import scope_where
from remem.store.roles import Scope

__all__ = [
    "ANALYZE_RECORDS",
    "BUMP_SCOPE",
    "CUSTOM_PLAN",
    "EVENT_VECTOR_SEARCH",
    "GENERIC_PLAN",
    "HNSW_SETTINGS",
    "HNSW_SETTINGS_ITERATIVE",
    "INDEX_SIZE",
    "PGVECTOR_VERSION",
    "PREWARM",
    "PREWARM_INSTALLED",
    "SCOPE_DDL_TRY_LOCK",
    "SCOPE_DDL_UNLOCK",
    "SCOPE_INDEXES_OF",
    "SCOPE_VECTORS",
    "SCOPE_VECTOR_COUNTS",
    "SCOPE_VERSION",
    "SET_INDEX_MEMORY",
    "SET_SESSION_INDEX_MEMORY",
    "VECTORS_ESTIMATE",
    "VECTOR_INDEX_EXISTS",
    "VECTOR_INDEX_LOCK",
    "ScopeIndex",
    "VectorIndex",
    "create_scope_index",
    "create_vector_index",
    "event_vector_search_hnsw",
    "vector_search",
    "vector_search_hnsw",
]


def vector_search(scope: Scope, include_invalid: bool) -> tuple[str, dict[str, Any]]:
    """Exact cosine search inside one scope, with named parameters: the scope's (given),
    then `query`, `model`, `dims`, `at` and `limit`.

    The scope, model, status and validity are in the WHERE clause, so the scan
    only ever reads one subject's vectors (of the query's dimension).
    """
    where, params = scope_where(scope, "r")
    statuses = "('active', 'invalid')" if include_invalid else "('active')"
    sql = (
        "SELECT r.id, 1 - (v.vec <=> %(query)s::vector) AS cosine "
        "FROM record_vectors v JOIN records r ON r.tenant = v.tenant AND r.id = v.record_id "
        f"WHERE v.tenant = %(tenant)s AND v.actor = %(actor)s AND {where} "
        "AND v.model = %(model)s AND vector_dims(v.vec) = %(dims)s "
        f"AND r.status IN {statuses} AND r.valid_from <= %(at)s "
        "AND (r.valid_until IS NULL OR r.valid_until > %(at)s) "
        "ORDER BY v.vec <=> %(query)s::vector, r.seq LIMIT %(limit)s"
    )
    return sql, params


# exact cosine search of one actor's events: tenant, actor, query, model, dims, at, limit
EVENT_VECTOR_SEARCH = """
SELECT event_id AS id, 1 - (vec <=> %(query)s::vector) AS cosine FROM event_vectors
WHERE tenant = %(tenant)s AND actor = %(actor)s AND model = %(model)s
  AND vector_dims(vec) = %(dims)s AND time <= %(at)s
ORDER BY vec <=> %(query)s::vector, time LIMIT %(limit)s
"""


@dataclass(frozen=True, slots=True)
class VectorIndex:
    """The HNSW index of one embedding model's vectors in one table.

    An HNSW index needs a fixed dimension and the vector columns have none, so
    the index is on the expression `vec::halfvec(dims)`, partial to one model and
    that dimension; a query uses it only if it repeats both verbatim, which
    `vector_search_hnsw` and `event_vector_search_hnsw` do. Half precision
    halves the index (the pages a search reads, often from outside PostgreSQL's
    buffers) and orders neighbours as well; cosines are computed from the
    stored single-precision vectors.
    """

    table: str  # "record_vectors" or "event_vectors"
    model: str
    dims: int

    @property
    def name(self) -> str:
        """The index's name: the table's, then a digest of the model and dimension."""
        key = f"{self.model}\x00{self.dims}\x00halfvec".encode()
        return f"{self.table}_hnsw_{hashlib.blake2b(key, digest_size=6).hexdigest()}"

    def predicate(self, alias: str = "") -> sql.Composable:
        """The partial index's condition (with a table alias, for a query)."""
        a = sql.SQL(f"{alias}." if alias else "")
        return sql.SQL("{a}model = {model} AND vector_dims({a}vec) = {dims}").format(
            a=a, model=sql.Literal(self.model), dims=sql.Literal(self.dims)
        )

    def distance(self, alias: str = "") -> sql.Composable:
        """The indexed distance to the query vector (the parameter `query`)."""
        a = f"{alias}." if alias else ""
        return sql.SQL(f"{a}vec::halfvec({self.dims}) <=> %(query)s::halfvec({self.dims})")


def create_vector_index(ix: VectorIndex, concurrently: bool = False) -> sql.Composed:
    """CREATE INDEX for `ix` (made by the store the first time its model writes there);
    `concurrently`, outside any transaction, so that writers are not blocked (a reindex's
    switch, `remem.store.postgres.reindex`)."""
    return sql.SQL(
        ("CREATE INDEX CONCURRENTLY " if concurrently else "CREATE INDEX ")
        + "IF NOT EXISTS {name} ON {table} USING hnsw "
        "((vec::halfvec({dims})) halfvec_cosine_ops) WHERE {predicate}"
    ).format(
        name=sql.Identifier(ix.name),
        table=sql.Identifier(ix.table),
        dims=sql.Literal(ix.dims),
        predicate=ix.predicate(),
    )


def _digest(*parts: str) -> str:
    return hashlib.blake2b("\x00".join(parts).encode(), digest_size=6).hexdigest()


@dataclass(frozen=True, slots=True)
class ScopeIndex:
    """The HNSW index of one large scope's record vectors of one model: the model's
    `VectorIndex` made partial to one (tenant, actor) as well.

    Searched through the model's index, a scope that is a tenth of it is
    filtered after the walk: about ten candidates read (index and heap pages) for
    each one kept, most from outside PostgreSQL's buffers, and the pages differ
    from query to query. Its own index holds only its vectors, is a tenth of the
    size, and keeps every candidate it walks. `vector_search_hnsw` repeats the
    conditions with bound values, and the planner takes this index when its
    predicate is proven by them (a custom plan: see `HNSW_SETTINGS`). The name
    carries digests of the scope and of the model, so an actor's erasure finds
    (and drops) the indexes whose definitions name it.
    """

    tenant: str
    actor: str
    model: str
    dims: int

    @property
    def prefix(self) -> str:
        """The names of every scope index of this scope start so (`SCOPE_INDEXES_OF`)."""
        return f"record_vectors_scope_{_digest(self.tenant, self.actor)}_"

    @property
    def name(self) -> str:
        """The index's name: the scope's digest, then the model's and dimension's."""
        return self.prefix + _digest(self.model, str(self.dims))

    @property
    def model_index(self) -> VectorIndex:
        """The model's index over every scope, which this one narrows."""
        return VectorIndex("record_vectors", self.model, self.dims)


def create_scope_index(ix: ScopeIndex, concurrently: bool = False) -> sql.Composed:
    """CREATE INDEX for one large scope (see `ScopeIndex`); `concurrently`, outside any
    transaction, so that writers of record_vectors are not blocked while it is built."""
    return sql.SQL(
        ("CREATE INDEX CONCURRENTLY " if concurrently else "CREATE INDEX ")
        + "IF NOT EXISTS {name} ON record_vectors USING hnsw "
        "((vec::halfvec({dims})) halfvec_cosine_ops) "
        "WHERE tenant = {tenant} AND actor = {actor} AND {predicate}"
    ).format(
        name=sql.Identifier(ix.name),
        dims=sql.Literal(ix.dims),
        tenant=sql.Literal(ix.tenant),
        actor=sql.Literal(ix.actor),
        predicate=ix.model_index.predicate(),
    )


def vector_search_hnsw(
    ix: VectorIndex, scope: Scope, include_invalid: bool
) -> tuple[sql.Composed, dict[str, Any]]:
    """Approximate cosine search of one scope through `ix`, with named parameters: the
    scope's (given), then `query`, `at` and `limit`. Rows come with `tie` (the record's
    seq) and are not strictly ordered (`hnsw.iterative_scan = relaxed_order`): the
    caller sorts them."""
    where, params = scope_where(scope, "r")
    statuses = "('active', 'invalid')" if include_invalid else "('active')"
    query = sql.SQL(
        "SELECT r.id, r.seq AS tie, 1 - (v.vec <=> %(query)s::vector) AS cosine "
        "FROM record_vectors v JOIN records r ON r.tenant = v.tenant AND r.id = v.record_id "
        "WHERE v.tenant = %(tenant)s AND v.actor = %(actor)s AND {predicate} AND "
        + where
        + f" AND r.status IN {statuses} AND r.valid_from <= %(at)s "
        "AND (r.valid_until IS NULL OR r.valid_until > %(at)s) "
        "ORDER BY {distance} LIMIT %(limit)s"
    ).format(distance=ix.distance("v"), predicate=ix.predicate("v"))
    return query, params


def event_vector_search_hnsw(ix: VectorIndex) -> sql.Composed:
    """Approximate cosine search of one actor's events through `ix`, with named parameters
    `tenant`, `actor`, `query`, `at` and `limit`. Not strictly ordered, as
    `vector_search_hnsw`."""
    return sql.SQL(
        "SELECT event_id AS id, time AS tie, 1 - (vec <=> %(query)s::vector) AS cosine "
        "FROM event_vectors "
        "WHERE tenant = %(tenant)s AND actor = %(actor)s AND {predicate} AND time <= %(at)s "
        "ORDER BY {distance} LIMIT %(limit)s"
    ).format(distance=ix.distance(), predicate=ix.predicate())


# Whether a valid index named `name` exists (a failed concurrent build leaves an invalid one).
VECTOR_INDEX_EXISTS = """
SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(%(name)s) AND indisvalid
"""
# one builder of an index at a time across every process sharing the database
VECTOR_INDEX_LOCK = "SELECT pg_advisory_xact_lock(1919249773, hashtext(%(name)s))"
INDEX_SIZE = """
SELECT coalesce(max(reltuples), 0) FROM pg_class WHERE oid = to_regclass(%(name)s)
"""
PGVECTOR_VERSION = "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
# pg_prewarm (contrib; `CREATE EXTENSION pg_prewarm` takes a superuser, once): whether it
# is there, and loading one index into PostgreSQL's buffers (the caller may read it:
# the app role owns the tables)
PREWARM_INSTALLED = "SELECT 1 FROM pg_extension WHERE extname = 'pg_prewarm'"
PREWARM = "SELECT pg_prewarm(%(name)s::regclass)"
# Only an ordered walk of the HNSW index answers without a sort, so with sorting
# disabled the planner takes it whatever it guesses about the scope's size; an
# iterative scan (pgvector 0.8) walks on until enough rows pass the scope filter.
# Then `ef_search`.
# Then `plan`, the plan cache's mode: `CUSTOM_PLAN` for a scope with an index of its own,
# since the bound tenant and actor are what prove its predicate (`ScopeIndex`), which a
# generic plan cannot see; else `GENERIC_PLAN`: the model index's predicate is written
# in the statement, so the generic plan walks it as a custom one would, and a statement
# psycopg has prepared is not planned again at each search (about 0.4 ms of the
# database's CPU of 0.8-1.3 at 100,000 vectors: docs/decisions/service-speed.md).
HNSW_SETTINGS = """
SELECT set_config('enable_sort', 'off', true), set_config('hnsw.ef_search', %(ef_search)s, true),
       set_config('plan_cache_mode', %(plan)s, true)
"""
CUSTOM_PLAN = "force_custom_plan"
GENERIC_PLAN = "force_generic_plan"
# the same with pgvector 0.8's iterative scan, in the same statement
HNSW_SETTINGS_ITERATIVE = (
    HNSW_SETTINGS.rstrip() + ",\n       set_config('hnsw.iterative_scan', 'relaxed_order', true)\n"
)
SET_INDEX_MEMORY = "SELECT set_config('maintenance_work_mem', %(memory)s, true)"
# the same for a session of its own (CREATE INDEX CONCURRENTLY runs outside transactions)
SET_SESSION_INDEX_MEMORY = "SELECT set_config('maintenance_work_mem', %(memory)s, false)"
ANALYZE_RECORDS = "ANALYZE records, record_vectors, record_terms, record_events"
# How many vectors of a model a scope holds, counted up to a bound; then `tenant`,
# `actor`, `model`, `bound`. The table is record_vectors or event_vectors.
SCOPE_VECTORS = """
SELECT count(*) FROM (
    SELECT 1 FROM {table}
    WHERE tenant = %(tenant)s AND actor = %(actor)s AND model = %(model)s LIMIT %(bound)s
) AS s
"""
# A scope's records or vectors changed (in the writing transaction): its version moves on.
BUMP_SCOPE = """
INSERT INTO scope_versions (tenant, actor, version) VALUES (%(tenant)s, %(actor)s, 1)
ON CONFLICT (tenant, actor) DO UPDATE SET version = scope_versions.version + 1
"""
SCOPE_VERSION = "SELECT version FROM scope_versions WHERE tenant = %(tenant)s AND actor = %(actor)s"
# The scopes holding at least `least` vectors of a model and dimension, with how many,
# and how many the model has in all.
SCOPE_VECTOR_COUNTS = """
SELECT tenant, actor, n, total FROM (
    SELECT tenant, actor, count(*) AS n, sum(count(*)) OVER () AS total FROM record_vectors
    WHERE model = %(model)s AND vector_dims(vec) = %(dims)s GROUP BY tenant, actor
) AS s WHERE n >= %(least)s
"""
# The planner's estimate of how many rows record_vectors holds (kept by autovacuum).
VECTORS_ESTIMATE = """
SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'record_vectors'::regclass
"""
# The database's one lock on making and dropping scope indexes (a session lock, taken by
# polling: see `PostgresSearch._scope_ddl`), then its release.
SCOPE_DDL_TRY_LOCK = "SELECT pg_try_advisory_lock(1919249774, 1) AS got"
SCOPE_DDL_UNLOCK = "SELECT pg_advisory_unlock(1919249774, 1)"
# The scope indexes of one scope, by the prefix of their names (`ScopeIndex.prefix`).
SCOPE_INDEXES_OF = """
SELECT c.relname AS name FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
WHERE i.indrelid = 'record_vectors'::regclass AND starts_with(c.relname, %(prefix)s)
"""
