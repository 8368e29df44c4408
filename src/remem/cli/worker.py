"""`remem worker`, `remem jobs list|retry` and `remem config show`."""

from __future__ import annotations

import signal
import threading
from typing import Any

import click

from remem.cli.kit import Ctx, echo_counts, emit, json_option
from remem.config.config import load_config
from remem.pipeline.jobs import JOB_STATUSES
from remem.pipeline.worker import Worker


@click.command()
@click.option(
    "--interval",
    default=1.0,
    show_default=True,
    type=click.FloatRange(0.05, 3600),
    help="Seconds to wait when no job is ready.",
)
@click.option(
    "--max-jobs",
    default=None,
    type=click.IntRange(1, None),
    help="Stop after this many jobs (default: run until interrupted).",
)
@json_option
@click.pass_obj
def worker(ctx: Ctx, interval: float, max_jobs: int | None) -> None:
    """Run extraction jobs as they arrive, one thread per strategy (Ctrl-C stops it).

    Jobs are taken with a lease kept alive by a heartbeat: a worker killed
    mid-job leaves its jobs to be taken again once the lease runs out, and a
    job's records and its completion are written together, so nothing is lost
    or duplicated. Any number of workers can share one database. A failed
    model call is retried with backoff; see `remem jobs list`.
    """
    with ctx.open() as mem:
        runner = Worker(mem.pipeline, idle_seconds=interval, max_jobs=max_jobs)
        stopping = threading.Event()

        def on_term(_signum: int, _frame: object) -> None:
            stopping.set()

        previous = signal.signal(signal.SIGTERM, on_term)
        runner.start()
        try:
            # wait on an event, not on the threads: a Ctrl-C that lands inside
            # Thread.join can leave that thread unjoinable (CPython before 3.12)
            while runner.running and not stopping.wait(0.2):
                pass
        except KeyboardInterrupt:
            pass  # a clean stop: finished batches are committed, the one in hand is retaken
        finally:
            signal.signal(signal.SIGTERM, previous)
            total = runner.stop()
    data = total.as_dict()
    emit(ctx, data, lambda: echo_counts(data))


@click.group()
def jobs() -> None:
    """See and re-run extraction jobs: strategy, state, attempts, last error."""


@jobs.command("list")
@click.option("--status", type=click.Choice(JOB_STATUSES), default=None, help="Only this state.")
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 100_000))
@json_option
@click.pass_obj
def jobs_list(ctx: Ctx, status: str | None, limit: int) -> None:
    """List this tenant's extraction jobs, newest first, with counts by state."""
    with ctx.open(embedder=None) as mem:
        found = mem.jobs(status, limit)
        counts = mem.store.jobs.job_counts(mem.tenant)
        usage = mem.store.model_calls.llm_usage(mem.tenant)
    data = {"counts": counts, "llm_usage": usage, "jobs": [j.as_dict() for j in found]}

    def human() -> None:
        echo_counts(counts)
        for j in found:
            error = f"  {j.last_error}" if j.last_error else ""
            click.echo(
                f"{j.id}\t{j.strategy}\t{j.status}\t{j.attempts} attempt(s)\t{j.event_id}{error}"
            )

    emit(ctx, data, human)


@jobs.command("retry")
@click.option(
    "--failed",
    "failed_only",
    is_flag=True,
    default=False,
    help="Only jobs that failed for good (default: also those waiting out a backoff).",
)
@click.option("--run/--no-run", default=True, show_default=True, help="Run them now.")
@json_option
@click.pass_obj
def jobs_retry(ctx: Ctx, failed_only: bool, run: bool) -> None:
    """Put failed extraction jobs back with fresh attempts, and run them now."""
    with ctx.open() as mem:
        requeued = mem.retry_jobs(failed_only=failed_only)
        result = mem.process() if run else None
        counts = mem.store.jobs.job_counts(mem.tenant)
    data: dict[str, Any] = {"requeued": requeued, "counts": counts}
    if result is not None:
        data["processed"] = result.as_dict()

    def human() -> None:
        click.echo(f"requeued {requeued}")
        if result is not None:
            echo_counts(result.as_dict())
        echo_counts(counts)

    emit(ctx, data, human)


@click.group("config")
def config_group() -> None:
    """The memory configuration (TOML): strategies, model, prompts, retries."""


@config_group.command("show")
@json_option
@click.pass_obj
def config_show(ctx: Ctx) -> None:
    """Print the effective configuration (the API key only as set or not set)."""
    data = load_config(ctx.config).as_dict()

    def human() -> None:
        import json

        click.echo(json.dumps(data, indent=2))

    emit(ctx, data, human)
