"""Deploy-time migrations: what a database lacks (`plan`), and applying it (`migrate`).

Every store applies its pending migrations when it opens (one migrator at a time:
SQLite's write lock, PostgreSQL's advisory lock `MIGRATION_LOCK`), so a single
process needs nothing else. A deploy of several processes runs `remem migrate`
once, then starts the new version with `remem serve --no-migrate`, which refuses
to start on a database that still lacks a migration instead of applying it.

Mixed versions. Migrations only add (tables, columns, indexes); a database is
numbered by the newest migration applied (SQLite `PRAGMA user_version`, PostgreSQL
`schema_version`). The rule:

- a remem **as new as or newer than** the database opens it (a newer one first
  applies what the database lacks), so processes of the old version keep running
  while the new one migrates, as long as the old version's code does not mind
  the added columns and tables (true of every migration so far);
- a remem **older** than the database refuses to open it (`SchemaTooNew`, "upgrade
  remem to open it"): it never writes a schema it does not know. So upgrade every
  process before the next migration you deploy, and roll back only to a version
  that knows the database's schema (or restore a backup taken before the upgrade).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from remem.store.open import is_server_url, open_store
from remem.store.text import migration_names


@dataclass(frozen=True, slots=True)
class Plan:
    """A database's migrations: the newest applied, the newest this remem knows, and the
    ones it lacks (file names, in order)."""

    backend: str
    applied: int
    known: int
    pending: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data."""
        return {
            "backend": self.backend,
            "applied": self.applied,
            "known": self.known,
            "pending": list(self.pending),
        }


def plan(target: str) -> Plan:
    """What `target` (a file or a PostgreSQL URL, as `open_store` takes) lacks; applies
    nothing and creates no file. `SchemaTooNew` when the database is newer than this
    remem, `StoreCorrupt` when the file is not a remem database."""
    backend = "postgres" if is_server_url(target) else "sqlite"
    names = migration_names(f"{backend}/migrations")
    path = target.removeprefix("sqlite:///")
    if backend == "sqlite" and path != ":memory:" and not os.path.exists(Path(path).expanduser()):
        applied = 0  # opening would create it, with every migration
    else:
        store = open_store(target, migrate=False)
        try:
            applied = store.schema_version()
        finally:
            store.close()
    pending = tuple(names[n] for n in sorted(names) if n > applied)
    return Plan(backend, applied, max(names), pending)


def migrate(target: str) -> Plan:
    """Apply what `target` lacks (by opening it) and return the plan that was carried out."""
    before = plan(target)
    open_store(target).close()
    return before
