"""`remem reindex`: re-embed the store's vectors with the embedder now in use.

`remem.cli.main` adds it to the root command; the work is `Memory.reindex`
(`remem.lifecycle.reindex`). Progress goes to stderr (at most a line a second), so
`--json` still prints one document on stdout.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import click

from remem.cli.kit import Ctx, emit, json_option
from remem.embed.base import DEFAULT_EMBEDDER, DefaultEmbedder, Embedder, HashEmbedder
from remem.lifecycle.reindex import DEFAULT_BATCH, MAX_BATCH, ReindexProgress

EMBEDDERS = ("default", "minilm", "minilm-int8", "hash")


def _embedder(name: str) -> Embedder | DefaultEmbedder:
    """The embedder named by --embedder: `default` is what `Memory.open` picks."""
    if name == "hash":
        return HashEmbedder()
    if name == "minilm":  # float32: its weights' package or $REMEM_MINILM_DIR
        from remem.embed.minilm.embedder import MiniLMEmbedder

        return MiniLMEmbedder()
    if name == "minilm-int8":  # remem[embed]'s int8 model
        from remem.embed.minilm.packaged import PackagedMiniLM

        return PackagedMiniLM()
    return DEFAULT_EMBEDDER


PROGRESS_EVERY_S = 1.0  # at most one progress line a second (and each kind's last)


def _progress() -> Callable[[ReindexProgress], None]:
    """A progress hook printing to stderr: the first batch, then at most one line every
    `PROGRESS_EVERY_S`, and the last batch of each kind."""
    last = -math.inf

    def say(p: ReindexProgress) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= PROGRESS_EVERY_S or p.embedded >= p.total:
            last = now
            click.echo(f"remem: reindex: {p.kind} {p.embedded}/{p.total} (batch {p.batches})",
                       err=True)  # fmt: skip

    return say


@click.command()
@click.option("--dry-run", is_flag=True, help="Count what would be re-embedded; change nothing.")
@click.option(
    "--batch",
    default=DEFAULT_BATCH,
    show_default=True,
    type=click.IntRange(1, MAX_BATCH),
    help="Texts embedded and stored per batch (a killed run loses at most one batch).",
)
@click.option(
    "--max-batches",
    default=None,
    type=click.IntRange(1),
    help="Stop after this many batches; run again to go on (recall is lexical meanwhile).",
)
@click.option(
    "--embedder",
    "embedder_name",
    type=click.Choice(EMBEDDERS),
    default="default",
    show_default=True,
    help="The embedder to re-embed with: the one the store will be opened with from now on.",
)
@click.option(
    "--cancel",
    is_flag=True,
    help="Drop the pending reindex and the vectors it stored; the old vectors stay the index.",
)
@json_option
@click.pass_obj
def reindex(
    ctx: Ctx, dry_run: bool, batch: int, max_batches: int | None, embedder_name: str, cancel: bool
) -> None:
    """Re-embed records, events and document chunks made by another embedder, in batches,
    resumably; then make the new vectors the index in one transaction."""
    if cancel:
        with ctx.open(embedder=None) as mem:
            dropped = mem.cancel_reindex()
        text = "the pending reindex was dropped" if dropped else "no reindex was pending"
        emit(ctx, {"cancelled": dropped}, lambda: click.echo(text))
        return
    with ctx.open(embedder=_embedder(embedder_name)) as mem:
        report = mem.reindex(
            batch=batch, dry_run=dry_run, max_batches=max_batches, progress=_progress()
        )
    emit(ctx, report.as_dict(), lambda: click.echo(report.message()))
