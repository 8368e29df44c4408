"""`remem remember`, `fact`, `profile`, `recall`, `records ...` and `procedure ...`:
write, look up and review memory records.

`remem.cli.main` adds them to the root command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from remem.cli.kit import Ctx, emit, json_option
from remem.documents.flows import where_of
from remem.errors import InvalidInput
from remem.facts.request import FactAsk, ProfileAsk, RecordsAsk
from remem.recall.request import RecallAsk
from remem.store.values import ForgetReport
from remem.writes.request import RememberAsk

# -- records ----------------------------------------------------------------------------


@click.command()
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
    "field; see the docs' Exact facts guide); it supersedes the field's current value.",
)
@click.option("--value", default=None, help="The field's value, e.g. 'Porto'.")
@click.option(
    "--metadata",
    default=None,
    help='A JSON object kept with the record, e.g. \'{"topic": "travel"}\' (at most 8 KB).',
)
@json_option
@click.pass_obj
def remember(ctx: Ctx, /, metadata: str | None, **statement: Any) -> None:
    """Store an explicit statement as a confirmed record at once."""
    # the other options are named as a `RememberAsk`'s fields (`Memory.remember`'s keywords)
    if statement["value"] is not None and statement["field"] is None:
        raise InvalidInput("--value needs --field")
    request = RememberAsk(**statement, metadata=json_object("--metadata", metadata))
    with ctx.open() as mem:
        rec = mem.ask_remember(request)
    emit(
        ctx,
        {"record_id": rec.id, "status": rec.status.value},
        lambda: click.echo(f"{rec.id} {rec.status.value}"),
    )


_METADATA_FILTER = click.option(
    "--metadata",
    default=None,
    help="Only the records whose metadata has these values: a JSON object such as "
    '\'{"topic": "travel"}\' (top-level keys).',
)


def json_object(option: str, text: str | None) -> dict[str, object] | None:
    """An option's JSON object, or None when it was not given."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except RecursionError:  # a traceback before
        raise InvalidInput(f"{option} nests too deep to read; flatten it") from None
    except ValueError:
        raise InvalidInput(
            f'{option} must be a JSON object, e.g. \'{{"topic": "travel"}}\''
        ) from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{option} must be a JSON object; got {type(value).__name__}")
    return value


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


@click.group()
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
def fact_get(ctx: Ctx, /, **asked: Any) -> None:
    """Print one field's value with its provenance.

    Exit 0 when found, 3 when nothing is known (not_found), 4 when values
    conflict (conflict: every candidate is listed); the JSON's "status" says
    the same.
    """
    request = FactAsk(**asked)  # the options are named as a FactAsk's fields
    with ctx.open(embedder=None) as mem:
        found = mem.ask_fact(request)

    def human() -> None:
        click.echo(found.line())
        for c in found.candidates:
            said = c.value if c.field in ("", found.field) else f"{c.field}: {c.value}"
            click.echo(f"  {said}  ({c.record_id}, {c.authority}, {c.source_date:%Y-%m-%d})")

    emit(ctx, {"fact": found.as_dict()}, human)
    if found.status != "found":
        click.get_current_context().exit(
            EXIT_NOT_FOUND if found.status == "not_found" else EXIT_CONFLICT
        )


@click.command("profile")
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
def profile_cmd(ctx: Ctx, /, **asked: Any) -> None:
    """Print every current field of an actor, highest authority then newest first."""
    request = ProfileAsk(**asked)  # the options are named as a ProfileAsk's fields
    with ctx.open(embedder=None) as mem:
        prof = mem.ask_profile(request)

    def human() -> None:
        for f in prof.facts:
            click.echo(f"{f.line()}  ({', '.join(c.record_id for c in f.candidates)})")
        left = f", {prof.dropped} left out" if prof.dropped else ""
        click.echo(f"{prof.tokens} tokens{left}")
        if prof.note:
            click.echo(f"note: {prof.note}")

    emit(ctx, prof.as_dict(), human)


@click.command("recall")
@click.option("--actor", required=True)
@click.option("--query", required=True)
@click.option("--k", default=10, show_default=True, type=click.IntRange(1, 1000))
@click.option("--budget", default=1000, show_default=True, type=click.IntRange(1, 1_000_000))
@_AS_OF
@_KNOWN_AT
@_VALID_AT
@click.option("--explain", is_flag=True, help="Show candidates and why each was dropped.")
@click.option(
    "--no-events",
    "include_events",
    flag_value=False,
    default=True,
    help="Records only; leave raw events out.",
)
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
@click.option(
    "--sources",
    default="memory",
    show_default=True,
    help="What the packet draws on: memory, documents, or memory,documents (document "
    "chunks come after the memories, inside the same budget).",
)
@click.option(
    "--document-namespace",
    "document_namespaces",
    multiple=True,
    help="Also read the documents of this namespace (repeatable).",
)
@_METADATA_FILTER
@json_option
@click.pass_obj
def recall_cmd(ctx: Ctx, /, pin: tuple[str, ...], metadata: str | None, **asked: Any) -> None:
    """Hand back the memories of an actor that matter for a query.

    --as-of T answers from what was known and valid at T (nothing written after
    T); --valid-at T alone asks what is known now about T.
    """
    # the other options are named as a RecallAsk's fields
    request = RecallAsk(
        **asked, pin=list(pin) if pin else None, metadata=json_object("--metadata", metadata)
    )
    with ctx.open() as mem:
        packet = mem.ask(request)
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
        for d in packet.documents or ():
            click.echo(f"[document] {d.text}  ({d.title}, {where_of(d.position)}, {d.id})")
        click.echo(f"{packet.tokens}/{packet.budget} tokens")
        if packet.explain:
            click.echo(json.dumps(packet.explain, indent=2, default=str))

    emit(ctx, data, human)


@click.group()
def records() -> None:
    """List records and read their history."""


@records.command("list")
@click.option("--actor", required=True)
@click.option("--all", "all", is_flag=True, help="Include invalid and proposed records.")
@click.option(
    "--as-of", default=None, help="Only the records known and valid at this ISO 8601 time."
)
@_METADATA_FILTER
@json_option
@click.pass_obj
def records_list(ctx: Ctx, /, metadata: str | None, **asked: Any) -> None:
    """List an actor's records, newest first."""
    # the other options are named as a RecordsAsk's fields
    request = RecordsAsk(**asked, metadata=json_object("--metadata", metadata))
    with ctx.open(embedder=None) as mem:
        recs = mem.ask_records(request)
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
        "metadata",
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
    "sensitivity", "strategy", "metadata"} (metadata: a JSON object kept with a
    created record, and "reason" a delete's ticket reference). The whole file is
    validated before anything is written; a request id seen before returns its first
    outcome, or a conflict when the line asks for something else under it. A delete's
    deletion job names "cli: <os user>" and is audited.
    """
    from remem.cli.events import parse_jsonl, read_lines  # a recall does not need them
    from remem.service import audit
    from remem.writes.batch import write_records

    rows = list(parse_jsonl(read_lines(file)))
    with ctx.open() as mem:

        def audited(actor: str, report: ForgetReport) -> None:
            audit.by_operator(mem.store.audit, mem.tenant, "erase", actor=actor,
                              target=str(report.job_id), verified=report.verified)  # fmt: skip

        asked = audit.cli_asked(None)
        results = write_records(mem.deps, rows, asked=asked, on_erase=audited)
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


@click.group()
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
