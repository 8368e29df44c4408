"""The `remem` command line: a thin layer over `remem.Memory`.

Every command takes `--json` and then prints exactly one JSON document on
stdout; errors exit non-zero with {"error": {"code", "message"}}. The commands
live with what they act on: events (`remem.cli.events`), records, facts, recall
and procedures (`remem.cli.records`), erasure and export (`remem.cli.erasure`),
re-embedding (`remem.cli.reindex`), demo and bench (`remem.cli.bench`), the service and its keys
(`remem.cli.serve`, `remem.cli.mcp`), thread state (`remem.cli.thread`),
workers, jobs and configuration (`remem.cli.worker`), evaluation
(`remem.cli.eval`), migrations, backups and erasure replay (`remem.cli.ops`);
this module holds the root command and the entry point.
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
from collections.abc import Iterator, Mapping, MutableMapping

import click

from remem.cli.kit import Ctx
from remem.errors import InvalidInput, RememError
from remem.store.open import database_name

# Each command and where it is defined: a command's module is imported only when
# that command runs (or `--help` lists them all), so that `remem recall` loads
# neither the HTTP service, the MCP server nor the evaluation to answer one query.
COMMANDS = {
    "event": "remem.cli.events:event",
    "process": "remem.cli.events:process",
    "remember": "remem.cli.records:remember",
    "fact": "remem.cli.records:fact",
    "profile": "remem.cli.records:profile_cmd",
    "recall": "remem.cli.records:recall_cmd",
    "records": "remem.cli.records:records",
    "procedure": "remem.cli.records:procedure",
    "forget": "remem.cli.erasure:forget",
    "deletions": "remem.cli.erasure:deletions",
    "export": "remem.cli.erasure:export",
    "reindex": "remem.cli.reindex:reindex",
    "demo": "remem.cli.bench:demo",
    "bench": "remem.cli.bench:bench",
    "worker": "remem.cli.worker:worker",
    "jobs": "remem.cli.worker:jobs",
    "config": "remem.cli.worker:config_group",
    "checkpoint": "remem.cli.thread:checkpoint",
    "toolcall": "remem.cli.thread:toolcall",
    "serve": "remem.cli.serve:serve",
    "keys": "remem.cli.serve:keys",
    "mcp": "remem.cli.mcp:mcp",
    "eval": "remem.cli.eval:eval_group",
    "docs": "remem.cli.docs:docs",
    "migrate": "remem.cli.ops:migrate",
    "backup": "remem.cli.ops:backup",
    "restore": "remem.cli.ops:restore",
    "erasures": "remem.cli.ops:erasures",
}


class _Commands(MutableMapping[str, click.Command]):
    """The root command's subcommands by name, each imported when first looked up."""

    def __init__(self, where: Mapping[str, str]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            module, _, attr = self._where[name].partition(":")  # KeyError: no such command
            command = getattr(importlib.import_module(module), attr)
            assert isinstance(command, click.Command), self._where[name]
            self._loaded[name] = command
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._where.setdefault(name, "")
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._where[name]
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def _database(value: str | None) -> str | None:
    """--db as given; a usage error when it is empty (it would open the default database
    unasked) or holds a NUL (`remem.store.open.database_name`)."""
    if value is None:
        return None
    try:
        return database_name(value)
    except InvalidInput as exc:
        raise click.BadParameter(str(exc)) from None


@click.group(
    commands=_Commands(COMMANDS),
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--db",
    envvar="REMEM_DB",
    default=None,
    callback=lambda _ctx, _param, value: _database(value),
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
