"""`remem docs`: add, list, show, search and remove documents (thin over `Memory`)."""

from __future__ import annotations

from typing import Any

import click

from remem.cli.kit import Ctx, emit, json_option
from remem.documents.flows import where_of
from remem.documents.scope import SCOPE_HELP, parse_scope
from remem.errors import RememError
from remem.service import audit


@click.group("docs")
def docs() -> None:
    """Documents beside memory: a corpus recalled with --sources documents, cited."""


@docs.command("add")
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--scope", "scope", default="tenant", show_default=True, help=f"{SCOPE_HELP}.")
@click.option("--title", default=None, help="The title (default: the file name).")
@click.option(
    "--source-uri",
    default=None,
    help="What the document is known by (default: the file's file:// URI); adding it "
    "again with changed content makes a new version.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "html", "pdf"]),
    default=None,
    help="The format (default: by the file's suffix, else text).",
)
@click.option(
    "--sensitivity",
    type=click.Choice(["normal", "personal", "sensitive"]),
    default="normal",
    show_default=True,
)
@json_option
@click.pass_obj
def add_cmd(
    ctx: Ctx,
    paths: tuple[str, ...],
    scope: str,
    title: str | None,
    source_uri: str | None,
    fmt: str | None,
    sensitivity: str,
) -> None:
    """Add documents (text, Markdown, HTML, PDF): the same content again is a no-op."""
    if len(paths) > 1 and (title or source_uri):
        raise click.UsageError("--title and --source-uri name one document; give one PATH")
    results: list[dict[str, Any]] = []
    with ctx.open() as mem:
        for path in paths:
            try:
                got = mem.add_document(path, title=title, source_uri=source_uri, scope=scope,
                                       format=fmt, sensitivity=sensitivity)  # fmt: skip
            except RememError as exc:
                if len(paths) == 1:
                    raise
                # each document is stored whole or not at all, one after another: say
                # which were stored before this one, so a failed run is not taken for none
                done = ", ".join(repr(r["path"]) for r in results) or "none"
                raise type(exc)(
                    f"{path!r}: {exc} (stored before it: {done}; not tried after it: "
                    f"{len(paths) - len(results) - 1})"
                ) from None
            results.append({"path": path, **got.as_dict()})

    def human() -> None:
        for r in results:
            d, c = r["document"], r["chunks"]
            click.echo(
                f"{r['status']}: {d['id']} {d['title']!r} v{d['version']} ({d['chunks']} chunks; "
                f"{c['added']} new, {c['kept']} kept, {c['removed']} removed)"
            )

    emit(ctx, {"documents": results}, human)


@docs.command("list")
@click.option("--scope", "scope", default=None, help=f"Only this scope: {SCOPE_HELP}.")
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 10_000))
@json_option
@click.pass_obj
def list_cmd(ctx: Ctx, scope: str | None, limit: int) -> None:
    """The tenant's documents, most recently changed first."""
    with ctx.open(embedder=None) as mem:
        found = mem.list_documents(scope=scope, limit=limit)

    def human() -> None:
        for d in found:
            click.echo(f"{d.id}  {d.scope_key}  v{d.version}  {d.chunks} chunks  {d.title}")

    emit(ctx, {"documents": [d.as_dict() for d in found]}, human)


@docs.command("show")
@click.argument("document_id")
@json_option
@click.pass_obj
def show_cmd(ctx: Ctx, document_id: str) -> None:
    """One document, its versions and its chunks (position and span)."""
    with ctx.open(embedder=None) as mem:
        doc, chunks = mem.get_document(document_id)

    def human() -> None:
        click.echo(f"{doc.title} ({doc.id}, {doc.scope_key}, v{doc.version}, {doc.format})")
        for h in doc.history:
            click.echo(f"  earlier: v{h['version']} {h['version_id']} {h['updated_at']}")
        for c in chunks:
            click.echo(f"[{where_of(c.position)}; {c.start}-{c.end}] {c.text}")

    emit(ctx, {"document": doc.as_dict(), "chunks": [c.as_dict() for c in chunks]}, human)


@docs.command("search")
@click.option("--query", required=True)
@click.option("--actor", default=None, help="Also read this actor's own documents.")
@click.option("--namespace", "namespaces", multiple=True, help="Also read this namespace's.")
@click.option("--k", default=10, show_default=True, type=click.IntRange(1, 1000))
@json_option
@click.pass_obj
def search_cmd(
    ctx: Ctx, query: str, actor: str | None, namespaces: tuple[str, ...], k: int
) -> None:
    """The chunks best matching a query, each citing its document, position and span."""
    with ctx.open() as mem:
        items = mem.search_documents(query=query, actor=actor, k=k, namespaces=namespaces)

    def human() -> None:
        for it in items:
            click.echo(f"[{it.title}, {where_of(it.position)}] {it.text}  ({it.id})")

    emit(ctx, {"documents": [it.as_dict() for it in items]}, human)


@docs.command("remove")
@click.argument("document_id")
@json_option
@click.pass_obj
def remove_cmd(ctx: Ctx, document_id: str) -> None:
    """Remove a document from every index, tombstone it, and verify by reading back.
    The tenant's audit log gets a row naming the OS user."""
    with ctx.open(embedder=None) as mem:
        doc, _ = mem.get_document(document_id)
        report = mem.remove_document(document_id)
        where = parse_scope(doc.scope_key)
        audit.by_operator(mem.store.audit, mem.tenant, "document_remove", target=document_id,
                          actor=where.name if where.kind == "actor" else None,
                          job=report.job_id or 0, verified=report.verified)  # fmt: skip
    data = {"document_id": document_id, **report.outcome(), "job_id": report.job_id}

    def human() -> None:
        state = "verified" if report.verified else "NOT verified"
        click.echo(f"removed {document_id}: {report.deleted} ({state})")

    emit(ctx, data, human)
