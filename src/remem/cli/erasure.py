"""`remem forget`, `remem deletions` and `remem export`: erase, audit and export a subject.

`remem.cli.main` adds them to the root command."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

from remem.cli.kit import Ctx, emit, json_option
from remem.errors import InvalidInput
from remem.service import audit

if TYPE_CHECKING:
    from remem.memory.memory import Memory


@click.command()
@click.option("--record", "record_id", default=None, help="Forget one record.")
@click.option("--actor", default=None, help="Forget everything of one actor.")
@click.option(
    "--vacuum",
    is_flag=True,
    help="PostgreSQL: VACUUM the tables the erasure touched afterwards (reads each whole "
    "table). SQLite needs none: its erasures always reach the file.",
)
@click.option(
    "--reason",
    default=None,
    help="Why: a reason or ticket reference, kept in the deletion job for its receipt.",
)
@json_option
@click.pass_obj
def forget(
    ctx: Ctx, record_id: str | None, actor: str | None, vacuum: bool, reason: str | None
) -> None:
    """Erase a record or a whole actor from every surface, and verify.

    The deletion job names who asked ("cli: <os user>", no key) and `--reason`;
    the audit log gets a row for the erasure (`remem.service.audit.by_operator`)."""
    asked = audit.cli_asked(reason)
    with ctx.open(embedder=None) as mem:
        owner = actor if record_id is None or actor is not None else mem.get(record_id).actor
        report = mem.forget(record_id=record_id, actor=actor, vacuum=vacuum, asked=asked)
        audit.by_operator(mem.store.audit, mem.tenant, "erase", actor=owner,
                          target=str(report.job_id), verified=report.verified)  # fmt: skip
    data = {
        "deleted": report.deleted,
        "verified": report.verified,
        "remaining": report.remaining,
        "job_id": report.job_id,
        "attempts": report.attempts,
    }
    emit(ctx, data, lambda: click.echo(f"deleted {report.deleted}; verified: {report.verified}"))


@click.command()
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 100_000))
@json_option
@click.pass_obj
def deletions(ctx: Ctx, limit: int) -> None:
    """List deletion jobs: what each erased, its status and whether it was verified."""
    with ctx.open(embedder=None) as mem:
        jobs = mem.deletions(limit)

    def human() -> None:
        for j in jobs:
            verified = j["result"].get("verified")
            click.echo(f"{j['id']} {j['target']} {j['key']} {j['status']} verified={verified}")

    emit(ctx, {"deletions": jobs}, human)


@click.command()
@click.option("--actor", required=True, help="The subject to export.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the JSON lines here (default: stdout).",
)
@json_option
@click.pass_obj
def export(ctx: Ctx, actor: str, out: Path | None) -> None:
    """Export everything of a subject (events, records with history, checkpoints and
    tool calls) as JSON lines. The tenant's audit log gets a row naming the OS user
    and the counts, once the rows are written."""
    counts = {"events": 0, "records": 0}
    with ctx.open(embedder=None) as mem:
        rows = mem.export(actor=actor)
        if out is None and not ctx.as_json:
            for row in rows:
                counts[row["type"] + "s"] = counts.get(row["type"] + "s", 0) + 1
                click.echo(json.dumps(row, ensure_ascii=False))
            _audit_export(mem, actor, counts)
            return
        if out is None:
            raise InvalidInput("--json prints a summary; name a file with --out for the rows")
        try:
            with _private_export(out) as f:
                for row in rows:
                    counts[row["type"] + "s"] = counts.get(row["type"] + "s", 0) + 1
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
        except OSError as exc:
            raise InvalidInput(f"cannot write the export to {out}: {exc.strerror}") from None
        _audit_export(mem, actor, counts)
    data = {"path": str(out), **counts}
    emit(ctx, data, lambda: click.echo(f"wrote {counts} to {out}"))


def _audit_export(mem: Memory, actor: str, counts: dict[str, int]) -> None:
    """The export's audit row: the operator, the actor and how many rows of each kind."""
    written: dict[str, Any] = dict(counts)
    audit.by_operator(mem.store.audit, mem.tenant, "export", actor=actor, **written)


def _leftover(out: Path) -> Path:
    """The one name an export to `out` ever gives its unfinished file (only where the
    file system lacks O_TMPFILE, or for an instant before it takes `out`'s place)."""
    return out.with_name(f".{out.name}.remem-export")


@contextmanager
def _private_export(out: Path) -> Iterator[TextIO]:
    """A file to write an export to, that becomes `out` (readable by its owner only: it
    holds a subject's personal data) when the block ends without an error.

    On Linux the file is made with O_TMPFILE: it has no name until it is complete, so
    nobody reaches it while it is written and a crash (even SIGKILL) leaves nothing;
    it is then linked in beside `out` and renamed over it. Elsewhere it is a 0600
    file under `_leftover`'s fixed name, removed on failure; one a crash left is
    removed by the next export to `out` (as is `out.partial`, the unfinished file of
    earlier versions). A reader never sees half an export."""
    leftover = _leftover(out)
    for stale in (leftover, out.with_name(out.name + ".partial")):
        stale.unlink(missing_ok=True)
    try:
        fd = os.open(out.parent, os.O_TMPFILE | os.O_WRONLY, 0o600)
        anonymous = True
    except AttributeError:  # not Linux
        fd, anonymous = _named(leftover), False
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            raise  # a missing or unwritable folder: the caller's clear error
        fd, anonymous = _named(leftover), False
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", closefd=False) as f:
            yield f
            f.flush()
            os.fsync(fd)
        if anonymous:  # linkat(AT_SYMLINK_FOLLOW) of the fd's /proc link: a dir fd asks for it
            folder = os.open(out.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.link(f"/proc/self/fd/{fd}", leftover.name, dst_dir_fd=folder)
            finally:
                os.close(folder)
        os.replace(leftover, out)
    finally:
        os.close(fd)
        leftover.unlink(missing_ok=True)  # a failed export leaves no copy of the subject


def _named(path: Path) -> int:
    """`path` made afresh for writing, its owner's only."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
