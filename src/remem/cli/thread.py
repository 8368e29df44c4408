"""`remem checkpoint ...` and `remem toolcall ...`: thread state on the command line.

Thin over `remem.thread.api`. `remem.cli.main` imports the two groups and adds
them to the root command; the context object, `--json` and output come from
`remem.cli.kit`, which both share.
"""

from __future__ import annotations

import json
import math
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from remem.cli.kit import Ctx, emit, json_option
from remem.errors import InvalidInput
from remem.files import read_text
from remem.thread import api
from remem.thread.api import MAX_RETENTION
from remem.thread.checkpoints import MAX_STATE_BYTES, resume_state

_ACTOR = click.option("--actor", required=True, help="Whose workflow this is.")
_WORKFLOW = click.option("--workflow", required=True, help="The workflow id.")
_KEY = click.option(
    "--key", "idempotency_key", required=True, help="The side effect's idempotency key."
)
_RETENTION = click.option(
    "--retention-days",
    type=click.FloatRange(min=0, min_open=True, max=MAX_RETENTION.days),
    default=None,
    help=f"Expire this many days after the write, at most {MAX_RETENTION.days} (default: keep).",
)


# -- checkpoints ---------------------------------------------------------------------------


@click.group()
def checkpoint() -> None:
    """Save, load and list workflow checkpoints (exact state to resume from)."""


@checkpoint.command("save")
@_ACTOR
@_WORKFLOW
@click.option("--state", "state_json", default=None, help="The state as a JSON object.")
@click.option(
    "--state-file",
    type=click.Path(dir_okay=False, path_type=Path, allow_dash=True),
    default=None,
    help="Read the state JSON from this file ('-' for stdin).",
)
@click.option(
    "--expected-version",
    type=click.IntRange(min=1),
    default=None,
    help="The version you loaded; omit to create the checkpoint.",
)
@_RETENTION
@json_option
@click.pass_obj
def checkpoint_save(
    ctx: Ctx,
    actor: str,
    workflow: str,
    state_json: str | None,
    state_file: Path | None,
    expected_version: int | None,
    retention_days: float | None,
) -> None:
    """Save a checkpoint; a stale --expected-version is a conflict, not an overwrite."""
    if (state_json is None) == (state_file is None):
        raise click.UsageError("give the state with exactly one of --state or --state-file")
    text = state_json if state_json is not None else _read(state_file)
    state = _parse_json("--state", text)
    with ctx.open(embedder=None) as mem:
        cp = api.checkpoint_save(
            mem,
            actor=actor,
            workflow=workflow,
            state=state,
            expected_version=expected_version,
            retention=_days(retention_days),
        )
    emit(
        ctx,
        {"checkpoint": cp.as_dict()},
        lambda: click.echo(f"{cp.workflow} saved at version {cp.version}"),
    )


@checkpoint.command("load")
@_ACTOR
@_WORKFLOW
@json_option
@click.pass_obj
def checkpoint_load(ctx: Ctx, actor: str, workflow: str) -> None:
    """Show one workflow's checkpoint."""
    with ctx.open(embedder=None) as mem:
        cp = api.checkpoint_load(mem, actor=actor, workflow=workflow)
    data = cp.as_dict()
    emit(ctx, {"checkpoint": data}, lambda: click.echo(json.dumps(data, indent=2)))


@checkpoint.command("list")
@_ACTOR
@json_option
@click.pass_obj
def checkpoint_list(ctx: Ctx, actor: str) -> None:
    """List an actor's checkpoints, most recently saved first."""
    with ctx.open(embedder=None) as mem:
        cps = api.checkpoint_list(mem, actor=actor)

    def human() -> None:
        for cp in cps:
            waiting = "  [pending approval]" if cp.awaiting_approval else ""
            when = f"{cp.updated_at:%Y-%m-%d %H:%M}"
            click.echo(f"{cp.workflow} v{cp.version} step={cp.state.step or '-'} {when}{waiting}")

    emit(ctx, {"checkpoints": [cp.as_dict() for cp in cps]}, human)


@checkpoint.command("expire")
@json_option
@click.pass_obj
def checkpoint_expire(ctx: Ctx) -> None:
    """Run retention now; workflows awaiting approval or reconciliation are kept and listed."""
    with ctx.open(embedder=None) as mem:
        report = api.expire_thread_state(mem)

    def human() -> None:
        click.echo(
            f"expired {report.checkpoints_expired} checkpoint(s), "
            f"{report.tool_calls_expired} tool call(s)"
        )
        for h in report.held:
            key = f" key {h.idempotency_key}" if h.idempotency_key else ""
            click.echo(f"held: {h.actor}/{h.workflow}{key} ({h.reason})")

    emit(ctx, report.as_dict(), human)


# -- tool calls --------------------------------------------------------------------------------


@click.group()
def toolcall() -> None:
    """Begin and complete side effects exactly once; see what a resume may do."""


@toolcall.command("begin")
@_ACTOR
@_WORKFLOW
@_KEY
@click.option("--id", "tool_call_id", default=None, help="The tool-call id (default: new).")
@click.option("--request", "request_json", default="null", help="The request as JSON.")
@_RETENTION
@json_option
@click.pass_obj
def toolcall_begin(
    ctx: Ctx,
    actor: str,
    workflow: str,
    idempotency_key: str,
    tool_call_id: str | None,
    request_json: str,
    retention_days: float | None,
) -> None:
    """Claim a side effect; perform it only if the decision is `perform`."""
    request = _parse_json("--request", request_json)
    with ctx.open(embedder=None) as mem:
        begun = api.begin_tool_call(
            mem,
            actor=actor,
            workflow=workflow,
            idempotency_key=idempotency_key,
            request=request,
            tool_call_id=tool_call_id,
            retention=_days(retention_days),
        )
    emit(ctx, begun.as_dict(), lambda: click.echo(begun.decision))


@toolcall.command("complete")
@_ACTOR
@_WORKFLOW
@_KEY
@click.option("--result", "result_json", required=True, help="The verified result as JSON.")
@json_option
@click.pass_obj
def toolcall_complete(
    ctx: Ctx, actor: str, workflow: str, idempotency_key: str, result_json: str
) -> None:
    """Record a side effect's result (also how a reconciler closes an unknown one)."""
    result = _parse_json("--result", result_json)
    with ctx.open(embedder=None) as mem:
        call = api.complete_tool_call(
            mem, actor=actor, workflow=workflow, idempotency_key=idempotency_key, result=result
        )
    emit(ctx, {"tool_call": call.as_dict()}, lambda: click.echo(call.status.value))


@toolcall.command("status")
@_ACTOR
@_WORKFLOW
@_KEY
@json_option
@click.pass_obj
def toolcall_status(ctx: Ctx, actor: str, workflow: str, idempotency_key: str) -> None:
    """Say whether a side effect is done, never started, or of unknown outcome."""
    with ctx.open(embedder=None) as mem:
        call = api.tool_call_status(
            mem, actor=actor, workflow=workflow, idempotency_key=idempotency_key
        )
    state = resume_state(call)
    data = {"state": state, "tool_call": call.as_dict() if call else None}
    emit(ctx, data, lambda: click.echo(state))


@toolcall.command("list")
@_ACTOR
@click.option("--workflow", default=None, help="Only this workflow.")
@click.option("--unresolved", is_flag=True, help="Only calls awaiting reconciliation.")
@json_option
@click.pass_obj
def toolcall_list(ctx: Ctx, actor: str, workflow: str | None, unresolved: bool) -> None:
    """List an actor's tool calls, oldest first."""
    with ctx.open(embedder=None) as mem:
        calls = api.tool_calls(mem, actor=actor, workflow=workflow, unresolved=unresolved)

    def human() -> None:
        for c in calls:
            click.echo(f"{c.workflow} {c.idempotency_key} {c.status.value} ({resume_state(c)})")

    emit(ctx, {"tool_calls": [c.as_dict() for c in calls]}, human)


@toolcall.command("release")
@_ACTOR
@_WORKFLOW
@_KEY
@json_option
@click.pass_obj
def toolcall_release(ctx: Ctx, actor: str, workflow: str, idempotency_key: str) -> None:
    """Reopen a key whose side effect was verified NOT to have happened."""
    with ctx.open(embedder=None) as mem:
        call = api.release_tool_call(
            mem, actor=actor, workflow=workflow, idempotency_key=idempotency_key
        )
    emit(ctx, {"released": call.as_dict()}, lambda: click.echo(f"released {idempotency_key}"))


MAX_STATE_FILE_BYTES = 4 * MAX_STATE_BYTES  # read of a --state-file, then refused

# -- helpers -----------------------------------------------------------------------------------


def _read(path: Path | None) -> str:
    """The state file's text (`-`: stdin), read up to `MAX_STATE_FILE_BYTES`: four times a
    checkpoint's `MAX_STATE_BYTES` of canonical JSON, room for indentation."""
    return read_text(
        str(path), MAX_STATE_FILE_BYTES, "a checkpoint's --state-file",
        f"a checkpoint's state is at most {MAX_STATE_BYTES} bytes of JSON; keep large "
        "artifacts elsewhere and store references to them",
    )  # fmt: skip


def _parse_json(option: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{option} is not valid JSON ({exc.msg} at {exc.pos})") from None
    except RecursionError:  # a traceback before
        raise InvalidInput(f"{option} nests too deep to read; flatten it") from None
    except ValueError:  # a number of more than 4,300 digits (a traceback before)
        raise InvalidInput(
            f"{option} holds a number too long to read (over 4,300 digits)"
        ) from None


def _days(value: float | None) -> timedelta | None:
    if value is not None and not math.isfinite(value):  # NaN passes click's FloatRange
        raise InvalidInput(f"--retention-days must be a number of days; got {value}")
    return None if value is None else timedelta(days=value)
