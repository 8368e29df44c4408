"""`remem migrate`, `remem backup`, `remem restore` and `remem erasures`: running a
deployment (docs/operations.md).

`migrate` applies the migrations a database lacks once per deploy (`--plan` lists
them, applying nothing; `remem.store.schema` states the rule for mixed versions).
`backup` and `restore` copy a SQLite database with SQLite's online backup API
(`remem.store.backup`); a restore replays the erasures that happened after
the backup, read from the database it replaces and from `--erasures` files
(`remem.lifecycle.restore`). On PostgreSQL, pg_dump and pg_restore do the copying,
and `remem erasures export` before and `remem erasures replay` after do the rest.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import click

from remem.cli.kit import Ctx, emit, json_option
from remem.cli.serve import _db_path
from remem.errors import InvalidInput
from remem.store.open import is_server_url, open_store
from remem.store.values import Tombstone
from remem.timeutil import parse_time

KINDS = ("actor", "record", "event", "document")
_PG_COPY = (
    "on PostgreSQL, copy with pg_dump and pg_restore: run `remem erasures export FILE` "
    "before the restore and `remem erasures replay FILE` after it (docs/operations.md)"
)


@click.command()
@click.option("--plan", is_flag=True, help="List the pending migrations; apply nothing.")
@json_option
@click.pass_obj
def migrate(ctx: Ctx, plan: bool) -> None:
    """Apply the migrations the database lacks, then exit (deploys: once, before
    `remem serve --no-migrate`); a database newer than this remem is refused."""
    from remem.store import schema

    path = _db_path(ctx)
    found = schema.plan(path) if plan else schema.migrate(path)
    data = found.as_dict()
    if not plan:  # what it is now: every migration applied, this run's named
        data |= {"applied": found.known, "pending": [], "applied_now": list(found.pending)}

    def human() -> None:
        verb = "pending" if plan else "applied"
        if not found.pending:
            click.echo(f"schema {found.applied} of {found.known}: up to date")
        for name in found.pending:
            click.echo(f"{verb}: {name}")
        if found.pending and plan:
            click.echo(f"schema {found.applied} of {found.known}; run `remem migrate` to apply")

    emit(ctx, data, human)


@click.command()
@click.argument("path", type=click.Path(dir_okay=False))
@json_option
@click.pass_obj
def backup(ctx: Ctx, path: str) -> None:
    """Copy the SQLite database into the new file PATH while it is in use (SQLite's
    online backup API); PostgreSQL: use pg_dump."""
    from remem.store import backup as copy

    db = _db_path(ctx)
    if is_server_url(db):
        raise InvalidInput(f"remem backup copies a SQLite file; {_PG_COPY}")
    done = copy.backup(db, path)
    emit(ctx, done, lambda: click.echo(f"backed up {db} to {path} ({done['bytes']} bytes)"))


@click.command()
@click.argument("path", type=click.Path(dir_okay=False, exists=True))
@click.option(
    "--erasures",
    "files",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True),
    help="Also replay the tombstones of this file (`remem erasures export`); repeatable.",
)
@json_option
@click.pass_obj
def restore(ctx: Ctx, path: str, files: tuple[str, ...]) -> None:
    """Replace the SQLite database with the backup PATH, then erase again what was
    erased after the backup (the tombstones of the database replaced, and of
    --erasures files). Stop the processes using the database first."""
    from remem.store import backup as copy

    db = _db_path(ctx)
    if is_server_url(db):
        raise InvalidInput(f"remem restore writes a SQLite file; {_PG_COPY}")
    copy.header(path)  # refuse a file that is not a remem backup before reading anything
    marks: list[Tombstone] = []
    live = Path(db).expanduser().exists()
    if live:
        store = open_store(db, migrate=False)
        try:
            marks.extend(store.erasure.tombstones())
        finally:
            store.close()
    for name in files:
        marks.extend(read_marks(name))
    version = copy.restore(path, db)
    replayed = _replay(ctx, db, marks)
    data = {
        "restored": path,
        "schema": version,
        "tombstones_read": len(marks),
        "replayed": replayed,
    }

    def human() -> None:
        click.echo(f"restored {db} from {path} (schema {version})")
        if not live and not files:
            click.echo(
                "remem: warning: no database was replaced and no --erasures file given: "
                "erasures made after the backup could not be replayed",
                err=True,
            )
        click.echo("replayed erasures: " + ", ".join(f"{k} {v}" for k, v in replayed.items()))

    emit(ctx, data, human)


@click.group()
def erasures() -> None:
    """Export the erasure tombstones, and replay them after a restore (PostgreSQL)."""


@erasures.command("export")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True))
@json_option
@click.pass_obj
def erasures_export(ctx: Ctx, path: str) -> None:
    """Write every tenant's tombstones (tenant, kind, key, time; no content) to PATH as
    JSON lines (`-`: stdout), to replay after restoring an older copy."""
    store = open_store(_db_path(ctx))
    try:
        marks = store.erasure.tombstones()
    finally:
        store.close()
    lines = "".join(json.dumps(m.as_dict()) + "\n" for m in marks)
    if path == "-":
        sys.stdout.write(lines)
        return
    target = Path(path)
    if target.exists():
        raise InvalidInput(f"{path} exists; name a new file")
    target.write_text(lines, encoding="utf-8")
    data = {"path": path, "tombstones": len(marks)}
    emit(ctx, data, lambda: click.echo(f"wrote {len(marks)} tombstones to {path}"))


@erasures.command("replay")
@click.argument("path", type=click.Path(dir_okay=False, exists=True))
@json_option
@click.pass_obj
def erasures_replay(ctx: Ctx, path: str) -> None:
    """Erase again, in this database, what the tombstones of PATH erased and it still
    holds (after pg_restore of an older dump, or a copy from before an erasure)."""
    marks = read_marks(path)
    replayed = _replay(ctx, _db_path(ctx), marks)
    data = {"tombstones_read": len(marks), "replayed": replayed}
    emit(ctx, data, lambda: click.echo(", ".join(f"{k} {v}" for k, v in replayed.items())))


def read_marks(path: str) -> list[Tombstone]:
    """The tombstones of a `remem erasures export` file; InvalidInput naming a bad line."""
    out = []
    with open(path, "rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw.decode("utf-8"))  # not UTF-8: a ValueError too
                if not isinstance(row, dict) or row.get("kind") not in KINDS:
                    raise ValueError("expected {tenant, kind, key, created_at}")
                mark = Tombstone(
                    str(row["tenant"]), row["kind"], str(row["key"]),
                    parse_time(row["created_at"], "created_at"),
                )  # fmt: skip
            except RecursionError:
                raise InvalidInput(
                    f"{path} line {number}: the JSON nests too deep to read; not a tombstone"
                ) from None
            except (ValueError, KeyError, InvalidInput) as exc:
                raise InvalidInput(
                    f"{path} line {number}: not a tombstone of `remem erasures export` ({exc})"
                ) from None
            out.append(mark)
    return out


def _replay(ctx: Ctx, db: str, marks: Iterable[Tombstone]) -> dict[str, int]:
    """Replay `marks` in every tenant they name; the totals."""
    from remem.lifecycle.restore import replay
    from remem.memory.memory import Memory

    by_tenant: dict[str, list[Tombstone]] = {}
    for m in marks:
        by_tenant.setdefault(m.tenant, []).append(m)
    total: Counter[str] = Counter({"actors": 0, "records": 0, "documents": 0, "events": 0})
    for tenant, mine in sorted(by_tenant.items()):
        with Memory.open(db, tenant=tenant, embedder=None, config=ctx.config) as mem:
            total.update(replay(mem.deps, mine))
    return dict(total)
