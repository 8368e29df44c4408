"""The tenant's actors, with their event and record counts and last activity.

`ActorIndex` is the actors role of both stores (`Store.actors`, the console's Actors
page, `remem.console`), composed over their backend:
one statement per dialect, bound to the tenant like every other read. An actor
with only proposed or replaced records is listed too (with no active record). The
tenant's shared records (`SHARED_ACTOR`) are no actor's and are left out; an
actor whose memory was forgotten has no rows left and so is not listed.
"""

from __future__ import annotations

from typing import ClassVar

from remem.policy.scope import SHARED_ACTOR
from remem.store.flows.backend import Backend
from remem.store.roles import ActorSummary

_UNION = """
    SELECT actor, count(*) AS events, 0 AS records, max(received_at) AS last_at
    FROM events WHERE tenant = {tenant} GROUP BY actor
    UNION ALL
    SELECT actor, 0 AS events, sum(CASE WHEN status = 'active' THEN 1 ELSE 0 END) AS records,
        max(updated_at) AS last_at
    FROM records WHERE tenant = {tenant} AND status <> 'deleted' GROUP BY actor
"""

_ACTORS = """
SELECT actor, sum(events) AS events, sum(records) AS records, max(last_at) AS last_at
FROM ({union}) AS counted
WHERE actor <> {shared} AND ({only} IS NULL OR actor = {only}) AND {contains}
GROUP BY actor ORDER BY max(last_at) DESC, actor LIMIT {limit}
"""


class ActorSQL:
    """The statement of `ActorIndex` in one dialect: tenant, shared, only, needle, limit."""

    LIST_ACTORS: ClassVar[str]


class SQLiteActorSQL(ActorSQL):
    """SQLite's (named `:marks`; `instr` matches the name literally)."""

    LIST_ACTORS = _ACTORS.format(
        union=_UNION.format(tenant=":tenant"),
        shared=":shared",
        only=":only",
        contains="instr(lower(actor), lower(:needle)) > 0",
        limit=":limit",
    )


class PostgresActorSQL(ActorSQL):
    """PostgreSQL's (named `%(marks)s`; `strpos` matches the name literally)."""

    LIST_ACTORS = _ACTORS.format(
        union=_UNION.format(tenant="%(tenant)s"),
        shared="%(shared)s",
        only="%(only)s::text",
        contains="strpos(lower(actor), lower(%(needle)s)) > 0",
        limit="%(limit)s",
    )


class ActorIndex:
    """The actor listing of a store (`Store.actors`), written once over its `backend` and
    its dialect's statement (`sql`)."""

    def __init__(self, backend: Backend, sql: type[ActorSQL]) -> None:
        self.backend, self.sql = backend, sql

    def summaries(
        self,
        tenant: str,
        *,
        only: str | None = None,
        contains: str = "",
        limit: int = 200,
    ) -> list[ActorSummary]:
        """The tenant's actors (only `only`, when given) whose name contains `contains`
        (case-insensitive), most recently active first: events, active records, and the
        latest time an event arrived or a record changed."""
        params = {
            "tenant": tenant,
            "shared": SHARED_ACTOR,
            "only": only,
            "needle": contains,
            "limit": limit,
        }
        rows = self.backend.read(tenant, self.sql.LIST_ACTORS, params)
        return [
            ActorSummary(
                r["actor"],
                int(r["events"]),
                int(r["records"]),
                self.backend.time(r["last_at"]) if r["last_at"] is not None else None,
            )
            for r in rows
        ]
