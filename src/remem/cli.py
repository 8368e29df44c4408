"""The `remem` command line: a thin layer over `remem.Memory`.

Every command takes `--json` and then prints exactly one JSON document on
stdout; errors exit non-zero with {"error": {"code", "message"}}. The commands
live with what they act on: events (`remem.events_cli`), records, facts, recall
and procedures (`remem.records_cli`), erasure and export (`remem.erasure_cli`),
demo and bench (`remem.bench_cli`), the service and its keys
(`remem.service.cli`, `remem.service.mcp_cli`), thread state (`remem.thread.cli`),
workers, jobs and configuration (`remem.worker_cli`), evaluation
(`remem.eval.cli`); this module holds the root command and the entry point.
"""

from __future__ import annotations

import json
import logging
import sys

import click

from remem.bench_cli import bench, demo
from remem.clikit import Ctx
from remem.docs_cli import docs
from remem.erasure_cli import deletions, export, forget
from remem.errors import RememError
from remem.eval.cli import eval_group
from remem.events_cli import event, process
from remem.records_cli import fact, procedure, profile_cmd, recall_cmd, records, remember
from remem.service.cli import keys, serve
from remem.service.mcp_cli import mcp
from remem.thread.cli import checkpoint, toolcall
from remem.worker_cli import config_group, jobs, worker

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


cli.add_command(event)
cli.add_command(process)
cli.add_command(remember)
cli.add_command(fact)
cli.add_command(profile_cmd)
cli.add_command(recall_cmd)
cli.add_command(records)
cli.add_command(procedure)
cli.add_command(forget)
cli.add_command(deletions)
cli.add_command(export)
cli.add_command(demo)
cli.add_command(bench)
cli.add_command(worker)
cli.add_command(jobs)
cli.add_command(config_group)
cli.add_command(checkpoint)
cli.add_command(toolcall)
cli.add_command(serve)
cli.add_command(keys)
cli.add_command(mcp)
cli.add_command(eval_group)
cli.add_command(docs)


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
