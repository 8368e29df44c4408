"""`remem forget`, `remem deletions` and `remem export`: erase, audit and export a subject.

`remem.cli` adds them to the root command."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TextIO

import click

from remem.clikit import Ctx, emit, json_option
from remem.errors import InvalidInput


@click.command()
@click.option("--record", "record_id", default=None, help="Forget one record.")
@click.option("--actor", default=None, help="Forget everything of one actor.")
@click.option(
    "--vacuum",
    is_flag=True,
    help="PostgreSQL: VACUUM the tables the erasure touched afterwards (reads each whole "
    "table). SQLite needs none: its erasures always reach the file.",
)
@json_option
@click.pass_obj
def forget(ctx: Ctx, record_id: str | None, actor: str | None, vacuum: bool) -> None:
    """Erase a record or a whole actor from every surface, and verify."""
    with ctx.open(embedder=None) as mem:
        report = mem.forget(record_id=record_id, actor=actor, vacuum=vacuum)
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
    tool calls) as JSON lines."""
    counts = {"events": 0, "records": 0}
    with ctx.open(embedder=None) as mem:
        rows = mem.export(actor=actor)
        if out is None and not ctx.as_json:
            for row in rows:
                counts[row["type"] + "s"] = counts.get(row["type"] + "s", 0) + 1
                click.echo(json.dumps(row, ensure_ascii=False))
            return
        if out is None:
            raise InvalidInput("--json prints a summary; name a file with --out for the rows")
        tmp = out.with_name(out.name + ".partial")
        try:
            with _private(tmp) as f:
                for row in rows:
                    counts[row["type"] + "s"] = counts.get(row["type"] + "s", 0) + 1
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
            tmp.replace(out)  # a reader never sees half an export
        except OSError as exc:
            raise InvalidInput(f"cannot write the export to {out}: {exc.strerror}") from None
        finally:
            tmp.unlink(missing_ok=True)  # a failed export leaves no copy of the subject
    data = {"path": str(out), **counts}
    emit(ctx, data, lambda: click.echo(f"wrote {counts} to {out}"))


def _private(path: Path) -> TextIO:
    """`path` opened for writing, readable by its owner only: an export holds a subject's
    personal data. An existing file is truncated."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8")
