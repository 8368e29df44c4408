"""The server backend: PostgreSQL with pgvector, full-text search and a pool.

Any number of stateless API servers and workers share one database: jobs are
taken with `FOR UPDATE SKIP LOCKED`, migrations are serialised by an advisory
lock, and every transaction names its tenant (`remem.tenant`, set with
`set_config(..., true)`) so row-level security confines it to that tenant's
rows even if a query forgot its `WHERE tenant = ...`. The few operations that
span tenants by design (claiming, extending and failing jobs, for workers that
serve every tenant; counting for `stats`; finding an API key by its hash, which is
how a request's tenant is found) say so with `remem.all_tenants`.

`PostgresStore` is a composition root: it makes the pool (`PostgresBackend`, in
`remem.store.postgres.backend`: transactions bound to a tenant, how values travel,
driver errors translated), migrates the database, and builds each role over that
backend with PostgreSQL's statements (`remem.store.postgres.sql`, the vector ones in
`remem.store.postgres.vectors.sql`): `events`, `records`, `backfill`, `jobs`,
`ledger`, `model_calls`, `erasure` (with PostgreSQL's parts,
`remem.store.postgres.erasure`), `audit`, `keys` and `actors` are written once in
`remem.store.flows`; what PostgreSQL keeps beside its rows (term and vector rows,
scope versions) is `remem.store.postgres.upkeep`; `search`, with the vectors'
HNSW indexes, is PostgreSQL's own (`remem.store.postgres.search`), its value conversions
`remem.store.postgres.rows`.
psycopg is imported only by these modules, so remem's core never needs it.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from datetime import datetime

import psycopg
from psycopg import sql as pg_sql
from psycopg.rows import DictRow

from remem.errors import SchemaTooNew
from remem.store.flows.actors import ActorIndex, PostgresActorSQL
from remem.store.flows.audit import AuditTrail
from remem.store.flows.backfill import Backfill
from remem.store.flows.erasure import Erasures
from remem.store.flows.events import Events
from remem.store.flows.jobs import Jobs, Ledger, ModelCalls
from remem.store.flows.keys import ApiKeys
from remem.store.flows.records import Records
from remem.store.postgres import audit_sql
from remem.store.postgres import backfill_sql as backfill_q
from remem.store.postgres import sql as q
from remem.store.postgres.backend import PostgresBackend
from remem.store.postgres.backend import redact_dsn as redact_dsn  # re-exported
from remem.store.postgres.documents import PostgresDocuments
from remem.store.postgres.erasure import PostgresErasure
from remem.store.postgres.reindex import PostgresReindex
from remem.store.postgres.rows import ALL_TENANTS, value
from remem.store.postgres.search import SCOPE_INDEX_MIN, PostgresSearch
from remem.store.postgres.upkeep import HeldRecords, PostgresUpkeep
from remem.store.roles import Clock, ThreadHost
from remem.timeutil import utcnow

SCHEMA_VERSION = 19  # the newest migration this code knows; checked by a test

Cursor = psycopg.Cursor[DictRow]
Query = str | pg_sql.Composed
log = logging.getLogger(__name__)


class PostgresStore:
    """`Store` on a PostgreSQL database (with pgvector). Safe to share between threads."""

    backend: PostgresBackend  # the connection the roles share (`remem.store.flows.backend.Backend`)

    # the roles (`remem.store.roles.ROLES`) this backend does not offer: none
    lacks: frozenset[str] = frozenset()

    def __init__(
        self,
        dsn: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        exact_scan_max: int | None = None,
        scope_index_min: int = SCOPE_INDEX_MIN,
        clock: Clock | None = None,
        migrate: bool = True,
    ) -> None:
        """Connect to (and migrate) the database at `dsn` through a pool of `min_size` to
        `max_size` connections; `clock` stamps what the store writes (default: UTC now);
        a scope of `scope_index_min` vectors of a model gets an HNSW index of its own.
        `migrate=False` applies nothing (a newer database is still refused): `remem
        migrate --plan` reads what is pending."""
        self.dsn = dsn
        self._clock: Clock = clock or utcnow
        self.backend = PostgresBackend(dsn, min_size=min_size, max_size=max_size,
                                       clock=self._clock)  # fmt: skip
        self.search = PostgresSearch(
            self.backend, exact_scan_max=exact_scan_max, scope_index_min=scope_index_min
        )
        # the roles, each composed over the backend (`remem.store.roles`)
        self.keys = ApiKeys(self.backend, q)
        self.actors = ActorIndex(self.backend, PostgresActorSQL)
        self.audit = AuditTrail(self.backend, audit_sql)
        self.jobs = Jobs(self.backend, q)
        self.ledger = Ledger(self.backend, q)
        self.model_calls = ModelCalls(self.backend, q)
        self.upkeep = PostgresUpkeep(self.backend, indexes=self.search)
        self.events = Events(self.backend, q, self.upkeep)
        self.held = HeldRecords(self.backend)
        self.records = Records(self.backend, q, self.upkeep, self.held)
        self.backfill = Backfill(self.backend, backfill_q, self.upkeep, self.records, self.events)
        self.erasure = Erasures(
            self.backend,
            q,
            PostgresErasure(self.backend, self.search, (self.held, self.search.terms)),
            self.upkeep,
        )
        self._migrate(apply=migrate)
        self.backend.open()
        try:
            self._rls_bypass = self._row_security_bypass()
        except BaseException:
            self.backend.close()
            raise

    # -- the second tenant wall ---------------------------------------------

    row_security = True

    @property
    def rls_bypassed(self) -> bool:
        """Whether row-level security does not bind the role remem connected as."""
        return bool(self._rls_bypass)

    def warnings(self) -> list[str]:
        """One line when row-level security does not bind this role (why, and what to do)."""
        if not self._rls_bypass:
            return []
        return [
            f"the PostgreSQL role {self._rls_bypass}, so row-level security does not bind "
            "it and the database's tenant wall is off (remem's own tenant filters still "
            "apply); connect as an ordinary role that owns the tables (docs/postgresql.md)"
        ]

    @property
    def documents(self) -> PostgresDocuments:
        """Documents in this database (`Store.documents`, `remem.store.postgres.documents`)."""
        return PostgresDocuments(self.backend)

    @property
    def reindexing(self) -> PostgresReindex:
        """Re-embedding with another embedder (`Store.reindexing`,
        `remem.store.postgres.reindex`)."""
        return PostgresReindex(self.backend, self.search)

    @property
    def thread(self) -> ThreadHost:
        """Thread state in this database (`Store.thread`), in transactions bound to a tenant
        (None: `ALL_TENANTS`, for retention) like every other."""
        return ThreadHost(
            dialect="postgres",
            tx=self.backend.tx,
            rows=self.backend.rows,
            at=_same_time,
            clock=self._clock,
        )

    def _row_security_bypass(self) -> str:
        """Why row-level security does not bind the connected role, or '' when it does."""
        row = self.backend.rows(ALL_TENANTS, q.ROW_SECURITY)[0]
        if row["rolsuper"]:
            return "is a superuser"
        if row["rolbypassrls"]:
            return "has BYPASSRLS"
        if row["open_tables"]:
            tables = ", ".join(row["open_tables"])
            return f"owns tables without FORCE ROW LEVEL SECURITY ({tables})"
        return ""

    # -- plumbing -----------------------------------------------------------

    def _migrate(self, *, apply: bool = True) -> None:
        """Apply the migrations this database lacks, in order (none: `apply=False`);
        refuse a newer database."""
        with self.backend.connect() as conn:
            try:
                with conn.transaction():
                    conn.execute(q.MIGRATION_LOCK)
                    if apply:
                        conn.execute(q.SCHEMA_TABLE)
                    version = _version(conn)
                    if version > SCHEMA_VERSION:
                        raise SchemaTooNew(
                            f"the database at {self.backend.where} was written by a newer remem "
                            f"(schema {version}, this remem knows up to {SCHEMA_VERSION}); "
                            "upgrade remem to open it"
                        )
                    for number, sql in q.migrations():
                        if apply and number > version:
                            for statement in q.split_sql(sql):
                                conn.execute(statement)
                            conn.execute(q.SET_VERSION, {"version": number})
                    row = conn.execute(q.PGVECTOR_VERSION).fetchone()
                    found = str(row["extversion"]) if row else "0"
                    self.search._iterative = tuple(int(p) for p in found.split(".")[:2]) >= (0, 8)
                    self.search._prewarm = conn.execute(q.PREWARM_INSTALLED).fetchone() is not None
            except psycopg.Error as exc:
                raise self.backend.translate(exc, opening=True) from exc

    @property
    def schema_known(self) -> int:
        """The newest migration this code knows."""
        return SCHEMA_VERSION

    def schema_version(self) -> int:
        """The newest migration applied to this database (0: none, not even the table)."""
        if not value(self.backend.rows(ALL_TENANTS, q.SCHEMA_EXISTS)):
            return 0
        return int(value(self.backend.rows(ALL_TENANTS, q.SCHEMA_VERSION)))

    def close(self) -> None:
        """Close every pooled connection; the store cannot be used afterwards."""
        self.backend.close()

    # -- what is PostgreSQL's own ---------------------------------------------

    def bulk_load(self) -> AbstractContextManager[None]:
        """Load many vectors, then build their HNSW indexes once (`PostgresSearch.bulk_load`)."""
        return self.search.bulk_load()

    def ping(self) -> None:
        """Return if the database answers (`Store.ping`, the service's liveness probe)."""
        self.backend.read(None, q.PING, {})

    def stats(self) -> dict[str, int]:
        """Row counts over every tenant, for `remem bench` and diagnostics."""
        with self.backend.tx(ALL_TENANTS) as cur:
            return {name: int(value(cur.execute(sql).fetchall())) for name, sql in q.STATS.items()}

    def database_size(self) -> int:
        """The bytes the database takes on the server (tables, indexes, TOAST), for bench."""
        return int(value(self.backend.rows(ALL_TENANTS, q.DATABASE_SIZE)))


# -- helpers ----------------------------------------------------------------------


def _same_time(t: datetime | None) -> datetime | None:
    """A time as psycopg takes it: as it is."""
    return t


def _version(conn: psycopg.Connection[DictRow]) -> int:
    """The newest migration applied (0: none, not even the table)."""
    row = conn.execute(q.SCHEMA_EXISTS).fetchone()
    if row is None or not row["found"]:
        return 0
    row = conn.execute(q.SCHEMA_VERSION).fetchone()
    return int(row["coalesce"]) if row else 0
