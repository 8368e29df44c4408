"""What every `remem` command group shares: the context object, `--json`, output.

Kept apart from `remem.cli.main` so that command groups defined in other modules
(thread state, evaluation) can use it without importing the root command.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

from remem.memory.memory import Memory
from remem.store.roles import Store

F = TypeVar("F", bound=Callable[..., Any])


class Ctx:
    """What the root command's options set up for every command."""

    def __init__(
        self, db: str | None, tenant: str, as_json: bool, config: str | None = None
    ) -> None:
        self.db = db
        self.tenant = tenant
        self.as_json = as_json
        self.config = config

    def open(self, **kwargs: Any) -> Memory:
        """Open the database named by --db (or REMEM_DB) for --tenant, with --config."""
        kwargs.setdefault("config", self.config)
        mem = Memory.open(self.db, tenant=self.tenant, **kwargs)
        warn_store(mem.store)
        return mem


def warn_store(store: Store) -> None:
    """Print what the operator must know about the database (`Store.warnings`) on stderr,
    one line each, whatever --json says: e.g. a PostgreSQL role that bypasses row-level
    security."""
    for line in store.warnings():
        click.echo(f"remem: warning: {line}", err=True)


def json_option(f: F) -> F:
    """`--json` on a command (it may also be given before the command)."""

    def mark(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
        if value:
            ctx.find_object(Ctx).as_json = True  # type: ignore[union-attr]
        return value

    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        expose_value=False,
        callback=mark,
        help="Print one JSON document on stdout.",
    )(f)


def emit(ctx: Ctx, data: dict[str, Any], human: Callable[[], None]) -> None:
    """Print `data` as JSON under --json, else call `human` to print for a person."""
    if ctx.as_json:
        click.echo(json.dumps(data, ensure_ascii=False, default=str))
    else:
        human()


def echo_counts(data: dict[str, Any]) -> None:
    """Print counts on one line for a person: "jobs_done 3, records_added 2"."""
    click.echo(", ".join(f"{k} {v}" for k, v in data.items()))
