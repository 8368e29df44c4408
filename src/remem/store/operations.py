"""The operator's role of a store: its tenant wall, health and bulk loads
(`Operations`, one of the roles `remem.store.roles.Store` is made of), and the
refusal to serve when the database's row-level security does not bind remem."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from remem.errors import RlsBypassed


class Operations(Protocol):
    """What an operator asks of the database itself: its tenant wall, health, bulk loads."""

    # the second tenant wall: the database's own row-level security under remem's queries.
    # `row_security` says whether the backend has one (PostgreSQL; SQLite has none, its
    # tenant wall is remem's queries alone); `rls_bypassed`, whether it is off for the
    # role remem connected as (a superuser, BYPASSRLS, an owner of an unforced table).
    @property
    def row_security(self) -> bool: ...

    @property
    def rls_bypassed(self) -> bool: ...

    def warnings(self) -> list[str]:
        """What an operator must know about this database before trusting it (one line
        each, no connection details); empty when nothing."""
        ...

    def ping(self) -> None:
        """Return if the database answers, else raise (the service's liveness probe)."""
        ...

    def schema_version(self) -> int:
        """The newest migration applied to this database."""
        ...

    @property
    def schema_known(self) -> int:
        """The newest migration this code knows (the readiness probe compares the two)."""
        ...

    def bulk_load(self) -> AbstractContextManager[None]:
        """A block of writes loading many records at once.

        Derived indexes that would be made on a first write are made once when
        the block ends instead, which is far faster than row by row; reads
        inside the block stay correct (exact) meanwhile. When it ends, SQLite
        writes the vector files of the scopes it filled and PostgreSQL builds
        its HNSW indexes (the model's, and a large scope's own), so the first
        search after a load is as fast as the rest.
        """
        ...

    def stats(self) -> dict[str, int]: ...

    def close(self) -> None: ...


def refuse_rls_bypass(store: Operations, *, allowed: bool) -> None:
    """Raise `RlsBypassed` when row-level security does not bind `store`'s role, unless
    the operator `allowed` it (`remem serve --allow-rls-bypass`)."""
    if store.rls_bypassed and not allowed:
        raise RlsBypassed(
            "; ".join(store.warnings())
            + "; refusing to serve: connect as an ordinary role (docs/postgresql.md), "
            "or pass --allow-rls-bypass to accept it"
        )
