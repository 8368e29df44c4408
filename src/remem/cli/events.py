"""`remem event ...` and `remem process`: append and list events, run extraction once.

`remem.cli.main` adds them to the root command; `read_lines` and `parse_jsonl` read
the JSON-lines files `event import` and `records import` take."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from remem.cli.kit import Ctx, echo_counts, emit, json_option
from remem.errors import InvalidInput
from remem.files import read_text

# -- events ---------------------------------------------------------------------------


@click.group()
def event() -> None:
    """Append, import and list events (the thread log)."""


@event.command("add")
@click.option("--actor", required=True, help="Whose event this is.")
@click.option("--session", required=True, help="The conversation or thread.")
@click.option("--role", required=True, type=click.Choice(["user", "assistant", "tool", "system"]))
@click.option("--text", required=True, help="What was said or observed.")
@click.option("--time", "time_", default=None, help="ISO 8601 time of the event (default: now).")
@click.option(
    "--id",
    "event_id",
    default=None,
    help="Client event id, unique per tenant: the same event again is not re-added; "
    "a different event with a used id is a conflict.",
)
@json_option
@click.pass_obj
def event_add(
    ctx: Ctx,
    actor: str,
    session: str,
    role: str,
    text: str,
    time_: str | None,
    event_id: str | None,
) -> None:
    """Append one event and enqueue its extraction."""
    with ctx.open(embedder=None) as mem:
        eid = mem.add_event(
            actor=actor, session=session, role=role, text=text, time=time_, event_id=event_id
        )
        fresh = mem.fresh_start(actor)
    data: dict[str, Any] = {"event_id": eid}
    if fresh is not None:  # the actor was erased: this event is part of a new memory
        data["fresh_start"] = fresh

    def human() -> None:
        click.echo(eid)
        if fresh is not None:
            click.echo(f"remem: {fresh['message']}", err=True)

    emit(ctx, data, human)


@event.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path, allow_dash=True))
@json_option
@click.pass_obj
def event_import(ctx: Ctx, file: Path) -> None:
    """Import events from a JSON-lines file (one event per line; times are kept).

    It can be run again after an interruption or a fix: lines already stored
    are skipped (a line without an id is known by its content)."""
    numbered = list(parse_jsonl(read_lines(file), numbered=True))
    lines = [n for n, _ in numbered]
    rows = [row for _, row in numbered]
    for row in rows:
        if "id" in row and "event_id" not in row:
            row["event_id"] = row.pop("id")
    with ctx.open(embedder=None) as mem:
        if sys.stderr.isatty() and not ctx.as_json:
            from rich.progress import Progress

            with Progress(transient=True) as bar:
                task = bar.add_task("importing", total=len(rows))
                result = mem.import_events(
                    rows, progress=lambda n: bar.advance(task, n), lines=lines
                )
        else:
            result = mem.import_events(rows, lines=lines)
    data = {"imported": result.imported, "skipped": result.skipped}
    emit(ctx, data, lambda: click.echo(f"imported {result.imported}, skipped {result.skipped}"))


# an import file (or stdin) is read up to this many bytes, then refused: it is held
# whole (and validated whole) before anything is written
MAX_IMPORT_BYTES = 64 * 1024 * 1024


def read_lines(file: Path) -> list[str]:
    """The lines of `file` (`-`: standard input); InvalidInput if it is not UTF-8 text
    or over `MAX_IMPORT_BYTES` (64 MiB, of which no more is read). A line ends at "\n"
    (a "\r" before it dropped), never at U+2028, U+2029 or U+0085, which a JSON string
    may hold raw (`remem export` writes them so) and `str.splitlines` would cut at."""
    text = read_text(
        file, MAX_IMPORT_BYTES, "an import file",
        "split it into parts (e.g. `split -l 10000`) and import each; a line already "
        "stored is skipped when a part is imported again",
    )  # fmt: skip
    return [line.removesuffix("\r") for line in text.split("\n")]


def parse_jsonl(lines: list[str], numbered: bool = False) -> Iterator[Any]:
    """The JSON objects of a JSON-lines text (blank lines skipped), or (line, object) pairs
    with `numbered`. InvalidInput naming the line for one that is no JSON object, or
    that nests too deep for the parser (which was a RecursionError traceback)."""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"line {n}: not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise InvalidInput(f"line {n}: the JSON nests too deep to read; flatten it") from None
        except ValueError:  # a number of more than 4,300 digits (was a traceback)
            raise InvalidInput(f"line {n}: a number too long to read (over 4,300 digits)") from None
        if not isinstance(row, dict):
            raise InvalidInput(f"line {n}: expected a JSON object")
        yield (n, row) if numbered else row


@event.command("list")
@click.option("--actor", required=True)
@click.option("--session", default=None)
@click.option("--limit", default=1000, show_default=True, type=click.IntRange(1, 100_000))
@json_option
@click.pass_obj
def event_list(ctx: Ctx, actor: str, session: str | None, limit: int) -> None:
    """List an actor's events in the order they happened."""
    with ctx.open(embedder=None) as mem:
        events = mem.events(actor=actor, session=session, limit=limit)
    data = {
        "events": [
            {
                "id": e.id,
                "actor": e.actor,
                "session": e.session,
                "role": e.role.value,
                "text": e.text,
                "time": e.time.isoformat(),
            }
            for e in events
        ]
    }

    def human() -> None:
        for e in events:
            click.echo(f"{e.time:%Y-%m-%d %H:%M} {e.session} {e.role.value}: {e.text}")

    emit(ctx, data, human)


# -- extraction -------------------------------------------------------------------------


@click.command()
@json_option
@click.pass_obj
def process(ctx: Ctx) -> None:
    """Run every pending extraction job now."""
    with ctx.open() as mem:
        result = mem.process()
    data = result.as_dict()
    emit(ctx, data, lambda: echo_counts(data))
