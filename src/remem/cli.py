"""The `remem` command line: a thin layer over `remem.Memory`.

Every command takes `--json` and then prints exactly one JSON document on
stdout; errors exit non-zero with {"error": {"code", "message"}}.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from remem.clikit import Ctx, echo_counts, emit, json_option
from remem.errors import InvalidInput, RememError
from remem.eval.cli import eval_group
from remem.service.cli import keys, serve
from remem.service.mcp_cli import mcp
from remem.thread.cli import checkpoint, toolcall
from remem.worker_cli import config_group, jobs, worker

F = TypeVar("F", bound=Callable[..., Any])

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    envvar="REMEM_DB",
    default=None,
    help="Database: a file (or sqlite:///path) or a postgresql:// URL. "
    "Default: $REMEM_DB, else a file in the user data dir.",
)
@click.option("--tenant", default="default", show_default=True, help="Tenant to act in.")
@click.option(
    "--config",
    envvar="REMEM_CONFIG",
    default=None,
    type=click.Path(dir_okay=False),
    help="Memory configuration (TOML): strategies, model, prompts, retries. "
    "Default: $REMEM_CONFIG, else the offline extractor only.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.version_option(package_name="remem")
@click.pass_context
def cli(ctx: click.Context, db: str | None, tenant: str, config: str | None, as_json: bool) -> None:
    """remem: long-term memory for AI agents, on one SQLite file or on PostgreSQL."""
    ctx.obj = Ctx(db, tenant, as_json, config)


# -- events ---------------------------------------------------------------------------


@cli.group()
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
    numbered = list(_parse_jsonl(_read_lines(file), numbered=True))
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


def _read_lines(file: Path) -> list[str]:
    try:
        if str(file) == "-":
            return sys.stdin.read().splitlines()
        return file.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InvalidInput(f"no such file: {file}") from None
    except UnicodeDecodeError:
        raise InvalidInput(f"{file} is not UTF-8 text") from None


def _parse_jsonl(lines: list[str], numbered: bool = False) -> Iterator[Any]:
    """The JSON objects of a JSON-lines text (blank lines skipped), or (line, object) pairs."""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"line {n}: not valid JSON ({exc.msg})") from None
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


@cli.command()
@json_option
@click.pass_obj
def process(ctx: Ctx) -> None:
    """Run every pending extraction job now."""
    with ctx.open() as mem:
        result = mem.process()
    data = result.as_dict()
    emit(ctx, data, lambda: echo_counts(data))


# -- records ----------------------------------------------------------------------------


@cli.command()
@click.option("--actor", required=True)
@click.option("--text", required=True)
@click.option(
    "--kind",
    default="semantic",
    show_default=True,
    type=click.Choice(["semantic", "preference", "episodic"]),
)
@click.option("--valid-until", default=None, help="ISO 8601 time after which it no longer holds.")
@click.option(
    "--field",
    default=None,
    help="What it is about, e.g. 'home city' (synonyms such as 'home' or 'city' are one "
    "field; see README 'Exact facts'); it supersedes the field's current value.",
)
@click.option("--value", default=None, help="The field's value, e.g. 'Porto'.")
@json_option
@click.pass_obj
def remember(
    ctx: Ctx,
    actor: str,
    text: str,
    kind: str,
    valid_until: str | None,
    field: str | None,
    value: str | None,
) -> None:
    """Store an explicit statement as a confirmed record at once."""
    if value is not None and field is None:
        raise InvalidInput("--value needs --field")
    with ctx.open() as mem:
        rec = mem.remember(
            actor=actor, text=text, kind=kind, valid_until=valid_until, field=field, value=value
        )
    emit(
        ctx,
        {"record_id": rec.id, "status": rec.status.value},
        lambda: click.echo(f"{rec.id} {rec.status.value}"),
    )


_KNOWN_AT = click.option(
    "--known-at", default=None, help="What remem knew at this ISO 8601 time (default: --as-of)."
)
_VALID_AT = click.option(
    "--valid-at", default=None, help="What held at this ISO 8601 time (default: --as-of)."
)
_AS_OF = click.option(
    "--as-of", default=None, help="What was known and valid at this ISO 8601 time (default: now)."
)
EXIT_NOT_FOUND = 3
EXIT_CONFLICT = 4


@cli.group()
def fact() -> None:
    """Exact facts: one field's value by structured lookup, never by similarity."""


@fact.command("get")
@click.option("--actor", required=True)
@click.option("--field", required=True, help="The field, or any synonym of it ('home', 'tz').")
@_AS_OF
@_KNOWN_AT
@_VALID_AT
@json_option
@click.pass_obj
def fact_get(
    ctx: Ctx,
    actor: str,
    field: str,
    as_of: str | None,
    known_at: str | None,
    valid_at: str | None,
) -> None:
    """Print one field's value with its provenance.

    Exit 0 when found, 3 when nothing is known (not_found), 4 when values
    conflict (conflict: every candidate is listed); the JSON's "status" says
    the same.
    """
    with ctx.open(embedder=None) as mem:
        found = mem.fact(
            actor=actor, field=field, as_of=as_of, known_at=known_at, valid_at=valid_at
        )

    def human() -> None:
        click.echo(found.line())
        for c in found.candidates:
            click.echo(f"  {c.value}  ({c.record_id}, {c.authority}, {c.source_date:%Y-%m-%d})")

    emit(ctx, {"fact": found.as_dict()}, human)
    if found.status != "found":
        click.get_current_context().exit(
            EXIT_NOT_FOUND if found.status == "not_found" else EXIT_CONFLICT
        )


@cli.command("profile")
@click.option("--actor", required=True)
@_AS_OF
@_KNOWN_AT
@_VALID_AT
@click.option(
    "--max-sensitivity",
    type=click.Choice(["normal", "personal", "sensitive"]),
    default=None,
    help="Leave out facts more sensitive than this.",
)
@click.option(
    "--budget", default=None, type=click.IntRange(1, 1_000_000), help="At most this many tokens."
)
@json_option
@click.pass_obj
def profile_cmd(
    ctx: Ctx,
    actor: str,
    as_of: str | None,
    known_at: str | None,
    valid_at: str | None,
    max_sensitivity: str | None,
    budget: int | None,
) -> None:
    """Print every current field of an actor, highest authority then newest first."""
    with ctx.open(embedder=None) as mem:
        prof = mem.profile(
            actor=actor,
            as_of=as_of,
            known_at=known_at,
            valid_at=valid_at,
            max_sensitivity=max_sensitivity,
            budget=budget,
        )

    def human() -> None:
        for f in prof.facts:
            click.echo(f"{f.line()}  ({', '.join(c.record_id for c in f.candidates)})")
        left = f", {prof.dropped} left out" if prof.dropped else ""
        click.echo(f"{prof.tokens} tokens{left}")

    emit(ctx, prof.as_dict(), human)


@cli.command("recall")
@click.option("--actor", required=True)
@click.option("--query", required=True)
@click.option("--k", default=10, show_default=True, type=click.IntRange(1, 1000))
@click.option("--budget", default=1000, show_default=True, type=click.IntRange(1, 1_000_000))
@_AS_OF
@_KNOWN_AT
@_VALID_AT
@click.option("--explain", is_flag=True, help="Show candidates and why each was dropped.")
@click.option("--no-events", is_flag=True, help="Records only; leave raw events out.")
@click.option(
    "--max-sensitivity",
    type=click.Choice(["normal", "personal", "sensitive"]),
    default=None,
    help="Leave out records more sensitive than this.",
)
@click.option(
    "--pin",
    multiple=True,
    help="A field looked up exactly and put first, inside the budget (repeatable; "
    "default: the configuration's [recall] pin).",
)
@json_option
@click.pass_obj
def recall_cmd(
    ctx: Ctx,
    actor: str,
    query: str,
    k: int,
    budget: int,
    as_of: str | None,
    known_at: str | None,
    valid_at: str | None,
    explain: bool,
    no_events: bool,
    max_sensitivity: str | None,
    pin: tuple[str, ...],
) -> None:
    """Hand back the memories of an actor that matter for a query.

    --as-of T answers from what was known and valid at T (nothing written after
    T); --valid-at T alone asks what is known now about T.
    """
    with ctx.open() as mem:
        packet = mem.recall(
            actor=actor,
            query=query,
            k=k,
            budget=budget,
            as_of=as_of,
            known_at=known_at,
            valid_at=valid_at,
            explain=explain,
            include_events=not no_events,
            max_sensitivity=max_sensitivity,
            pin=list(pin) if pin else None,
        )
    data = packet.as_dict()

    def human() -> None:
        for note in packet.notes:
            click.echo(f"note: {note}", err=True)
        for it in packet.pinned:
            click.echo(f"[pinned] {it.text}  ({it.id}, {it.source_date:%Y-%m-%d})")
        for it in packet.records:
            click.echo(f"[{it.kind}] {it.text}  ({it.id}, {it.source_date:%Y-%m-%d})")
        for c in packet.conflicts:
            click.echo(f"conflict: {c['question']} {c['record_ids']}")
        click.echo(f"{packet.tokens}/{packet.budget} tokens")
        if packet.explain:
            click.echo(json.dumps(packet.explain, indent=2, default=str))

    emit(ctx, data, human)


@cli.group()
def records() -> None:
    """List records and read their history."""


@records.command("list")
@click.option("--actor", required=True)
@click.option("--all", "all_", is_flag=True, help="Include invalid and proposed records.")
@click.option(
    "--as-of", default=None, help="Only the records known and valid at this ISO 8601 time."
)
@json_option
@click.pass_obj
def records_list(ctx: Ctx, actor: str, all_: bool, as_of: str | None) -> None:
    """List an actor's records, newest first."""
    with ctx.open(embedder=None) as mem:
        recs = mem.records(actor=actor, all=all_, as_of=as_of)
    keys = (
        "id",
        "text",
        "kind",
        "namespace",
        "status",
        "superseded_by",
        "supersedes",
        "valid_from",
        "valid_until",
        "source",
        "authority",
        "field",
        "value",
        "flags",
    )
    data = {"records": [{k: r.as_dict()[k] for k in keys} for r in recs]}

    def human() -> None:
        for r in recs:
            extra = f" -> {r.superseded_by}" if r.superseded_by else ""
            click.echo(f"{r.id} [{r.status.value}] {r.text}{extra}")

    emit(ctx, data, human)


@records.command("get")
@click.argument("record_id")
@json_option
@click.pass_obj
def records_get(ctx: Ctx, record_id: str) -> None:
    """Show one record with its provenance."""
    with ctx.open(embedder=None) as mem:
        rec = mem.get(record_id)
    emit(ctx, {"record": rec.as_dict()}, lambda: click.echo(json.dumps(rec.as_dict(), indent=2)))


@records.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path, allow_dash=True))
@json_option
@click.pass_obj
def records_import(ctx: Ctx, file: Path) -> None:
    """Write records a self-managed strategy extracted: one JSON object per line.

    Each line is {"op": "create"|"update"|"delete", "request_id", "actor",
    "record_id", "text", "kind", "field", "value", "valid_until",
    "sensitivity", "strategy"}. The whole file is validated before anything is
    written; a request id seen before returns its first outcome.
    """
    rows = list(_parse_jsonl(_read_lines(file)))
    with ctx.open() as mem:
        results = mem.write_records(rows)
    ok = sum(1 for r in results if r["status"] != "error")
    data = {"results": results, "succeeded": ok, "failed": len(results) - ok}

    def human() -> None:
        for r in results:
            error = r.get("error", {}).get("message", "")
            click.echo(f"{r['op']}\t{r['status']}\t{r.get('record_id', '')}\t{error}".rstrip())
        click.echo(f"succeeded {ok}, failed {len(results) - ok}")

    emit(ctx, data, human)


@records.command("history")
@click.argument("record_id")
@json_option
@click.pass_obj
def records_history(ctx: Ctx, record_id: str) -> None:
    """Show every change of a record, oldest first."""
    with ctx.open(embedder=None) as mem:
        entries = mem.history(record_id)
    data = {"history": [h.as_dict() for h in entries]}

    def human() -> None:
        for h in entries:
            rel = f" ({h.related_id})" if h.related_id else ""
            click.echo(f"{h.at:%Y-%m-%d %H:%M:%S} {h.action}{rel} {h.text or ''} {h.reason}")

    emit(ctx, data, human)


@records.command("approve")
@click.argument("record_id")
@click.option("--by", "reviewer", required=True, help="Who approves (recorded in history).")
@json_option
@click.pass_obj
def records_approve(ctx: Ctx, record_id: str, reviewer: str) -> None:
    """Approve a proposed procedure; it becomes active and supersedes its old version."""
    with ctx.open() as mem:
        rec = mem.approve(record_id, reviewer=reviewer)
    data = {"record_id": rec.id, "status": rec.status.value}
    emit(ctx, data, lambda: click.echo(f"{rec.id} {rec.status.value}"))


@records.command("reject")
@click.argument("record_id")
@click.option("--by", "reviewer", required=True, help="Who rejects (recorded in history).")
@click.option("--reason", default="", help="Why, for the proposer.")
@json_option
@click.pass_obj
def records_reject(ctx: Ctx, record_id: str, reviewer: str, reason: str) -> None:
    """Reject a proposed procedure; it stays inactive, with the reason."""
    with ctx.open() as mem:
        rec = mem.reject(record_id, reviewer=reviewer, reason=reason)
    data = {"record_id": rec.id, "status": rec.status.value}
    emit(ctx, data, lambda: click.echo(f"{rec.id} {rec.status.value}"))


@cli.group()
def procedure() -> None:
    """Propose and list procedures (active only once a reviewer approves them)."""


@procedure.command("propose")
@click.option("--text", required=True, help="The procedure.")
@click.option("--name", default=None, help="A name; a new version supersedes the old one.")
@click.option("--actor", default=None, help="Only for this actor (default: the whole tenant).")
@click.option("--by", "proposed_by", default="agent", show_default=True, help="Who proposes.")
@json_option
@click.pass_obj
def procedure_propose(
    ctx: Ctx, text: str, name: str | None, actor: str | None, proposed_by: str
) -> None:
    """Propose a procedure; it is never recalled until approved."""
    with ctx.open() as mem:
        rec = mem.propose_procedure(text=text, name=name, actor=actor, proposed_by=proposed_by)
    data = {"record_id": rec.id, "status": rec.status.value}
    emit(ctx, data, lambda: click.echo(f"{rec.id} {rec.status.value}"))


@procedure.command("list")
@click.option("--actor", default=None, help="One actor's procedures (default: shared ones).")
@click.option("--all", "all_", is_flag=True, help="Include proposed, rejected and old versions.")
@json_option
@click.pass_obj
def procedure_list(ctx: Ctx, actor: str | None, all_: bool) -> None:
    """List procedures."""
    with ctx.open(embedder=None) as mem:
        recs = mem.procedures(actor=actor, all=all_)
    data = {"records": [r.as_dict() for r in recs]}

    def human() -> None:
        for r in recs:
            click.echo(f"{r.id} [{r.status.value}] {r.field or ''} {r.text}")

    emit(ctx, data, human)


@cli.command()
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


@cli.command()
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


@cli.command()
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
        with tmp.open("w", encoding="utf-8") as f:
            for row in rows:
                counts[row["type"] + "s"] = counts.get(row["type"] + "s", 0) + 1
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        tmp.replace(out)  # a reader never sees half an export
    data = {"path": str(out), **counts}
    emit(ctx, data, lambda: click.echo(f"wrote {counts} to {out}"))


# -- demo and bench ----------------------------------------------------------------------


@cli.command()
@json_option
@click.pass_obj
def demo(ctx: Ctx) -> None:
    """Ingest a multi-session conversation, process it, and recall from it."""
    from remem.demo import run_demo

    run_demo(ctx.db, as_json=ctx.as_json)


@cli.command()
@click.option(
    "--records",
    "n_records",
    default=100_000,
    show_default=True,
    type=click.IntRange(100, 10_000_000),
    help="Records in the database.",
)
@click.option(
    "--scope",
    "scope_records",
    default=None,
    type=click.IntRange(10, 10_000_000),
    help="Records in the queried actor's scope (default: min(records, 100000)).",
)
@click.option("--queries", default=200, show_default=True, type=click.IntRange(10, 100_000))
@click.option(
    "--events",
    "n_events",
    default=20_000,
    show_default=True,
    type=click.IntRange(100, 10_000_000),
    help="Events for the add_event figure.",
)
@click.option(
    "--http",
    "over_http",
    is_flag=True,
    help="Measure add and retrieve requests through `remem serve` on loopback instead.",
)
@click.option(
    "--requests",
    "n_requests",
    default=1000,
    show_default=True,
    type=click.IntRange(1, 1_000_000),
    help="Requests of each kind (with --http).",
)
@click.option(
    "--concurrency",
    default=8,
    show_default=True,
    type=click.IntRange(1, 256),
    help="Client threads (with --http).",
)
@click.option("--lexical", is_flag=True, help="Serve without an embedding model (with --http).")
@click.option(
    "--compare",
    is_flag=True,
    help="Also measure the raw parts on the same data (embedder alone, numpy scan, BM25 "
    "alone), recall as a ratio to them, and a fresh process's first recall.",
)
@click.option(
    "--sizes",
    default=None,
    metavar="N,N,...",
    help="Run once per record count (a fresh database each, e.g. 10000,100000); "
    'the output is {"sizes": [figures, ...]}.',
)
@click.option(
    "--llm-fake",
    is_flag=True,
    help="Measure the LLM pipeline (calls, tokens and overhead per event) against a "
    "scripted model server on loopback; --events defaults to 600 here.",
)
@json_option
@click.pass_context
def bench(
    click_ctx: click.Context,
    n_records: int,
    scope_records: int | None,
    queries: int,
    n_events: int,
    over_http: bool,
    n_requests: int,
    concurrency: int,
    lexical: bool,
    compare: bool,
    sizes: str | None,
    llm_fake: bool,
) -> None:
    """Measure recall latency, ingest and extraction speed on synthetic records."""
    ctx: Ctx = click_ctx.obj
    if llm_fake:
        from remem.bench_llm import run_llm_bench

        if click_ctx.get_parameter_source("n_events") is click.core.ParameterSource.DEFAULT:
            n_events = 600
        figures = run_llm_bench(events=n_events, progress=not ctx.as_json)
        emit(ctx, figures, lambda: click.echo(json.dumps(figures, indent=2)))
        return
    if over_http:
        try:
            from remem.service.bench_http import run_http_bench
        except ImportError as exc:
            raise click.ClickException(
                f"--http needs the server extra ({exc.name} is missing): "
                "pip install 'remem[server]'"
            ) from None
        figures = run_http_bench(
            db=ctx.db,
            requests=n_requests,
            concurrency=concurrency,
            lexical=lexical,
            progress=not ctx.as_json,
        )
        emit(ctx, figures, lambda: click.echo(json.dumps(figures, indent=2)))
        return
    from remem.bench import run_bench, run_sizes

    common: dict[str, Any] = dict(
        scope=scope_records, queries=queries, events=n_events, progress=not ctx.as_json,
        compare=compare,
    )  # fmt: skip
    if sizes is not None:
        try:
            counts = [int(part) for part in sizes.split(",") if part.strip()]
        except ValueError:
            raise InvalidInput(
                f"--sizes takes record counts like 10000,100000, not {sizes!r}"
            ) from None
        result = run_sizes(counts, db=ctx.db, **common)
    else:
        result = run_bench(db=ctx.db, records=n_records, **common)
    emit(ctx, result, lambda: click.echo(json.dumps(result, indent=2)))


cli.add_command(worker)
cli.add_command(jobs)
cli.add_command(config_group)
cli.add_command(checkpoint)
cli.add_command(toolcall)
cli.add_command(serve)
cli.add_command(keys)
cli.add_command(mcp)
cli.add_command(eval_group)


# -- entry point ---------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (errors become one clear line or JSON)."""
    args = sys.argv[1:] if argv is None else argv
    as_json = "--json" in args
    logging.basicConfig(level=logging.WARNING, format="remem: %(message)s")
    try:
        code = cli.main(args=args, prog_name="remem", standalone_mode=False)
    except RememError as exc:
        return _fail(as_json, exc.code, str(exc), EXIT_ERROR)
    except click.UsageError as exc:
        return _fail(as_json, "usage", exc.format_message(), EXIT_USAGE)
    except click.ClickException as exc:
        return _fail(as_json, "error", exc.format_message(), EXIT_ERROR)
    except (KeyboardInterrupt, click.Abort):
        return _fail(
            as_json, "interrupted", "interrupted; nothing half-written was kept", EXIT_INTERRUPTED
        )
    except BrokenPipeError:
        return EXIT_ERROR
    return code if isinstance(code, int) else 0  # a command's ctx.exit(code)


def _fail(as_json: bool, code: str, message: str, status: int) -> int:
    if as_json:
        click.echo(json.dumps({"error": {"code": code, "message": message}}))
    else:
        click.echo(f"remem: error: {message}", err=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
