"""`remem serve` and `remem keys ...`: run the HTTP service and manage its API keys.

`remem.cli.main` adds the command and the group to the root command; the context
object, `--json` and output come from `remem.cli.kit`. FastAPI and uvicorn are
imported only when `serve` runs. The database is named as for every command
(`--db`, `$REMEM_DB`: a file, `sqlite:///path` or a PostgreSQL URL) and opened
by `remem.memory.memory.open_store`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from remem.cli.kit import Ctx, emit, json_option, warn_store
from remem.memory.memory import default_db_path, is_server_url, open_store
from remem.service import audit
from remem.service import keys as keyring
from remem.store.roles import Store, refuse_rls_bypass


def _db_path(ctx: Ctx) -> str:
    """The database named by --db or $REMEM_DB, else the default file (as `Memory.open`):
    a file path (`sqlite:///` removed) or a PostgreSQL URL, as given."""
    if ctx.db is not None:  # an empty one is refused by --db's callback (`cli.main`)
        raw = ctx.db
        return raw[len("sqlite:///") :] if raw.startswith("sqlite:///") else raw
    path = default_db_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    return str(path)


def _where(target: str) -> str:
    """`target` to show a person: a file path as it is, a server URL without its password."""
    if not is_server_url(target):
        return target
    from remem.store.postgres.store import redact_dsn  # opened already, so psycopg is installed

    return redact_dsn(target)


def _open(ctx: Ctx) -> Store:
    store = open_store(_db_path(ctx))
    warn_store(store)
    return store


def refuse_pending(target: str) -> None:
    """`--no-migrate`: refuse a database that lacks migrations (naming them), and one
    newer than this remem (`remem.store.schema`)."""
    from remem.store.schema import plan

    found = plan(target)
    if found.pending:
        raise click.ClickException(
            f"the database at {_where(target)} lacks {len(found.pending)} migration(s) "
            f"({', '.join(found.pending)}); run `remem migrate` first, or serve without "
            "--no-migrate"
        )


def body_options(command: Callable[..., None]) -> Callable[..., None]:
    """--max-body, --body-timeout and --max-pending-bodies: the request-body bounds of
    `remem serve` and `remem mcp --transport http` (`remem.service.bodies`)."""
    options = [
        click.option(
            "--max-body",
            default=1_048_576,
            show_default=True,
            type=click.IntRange(min=1),
            help=(
                "Refuse request bodies over this many bytes (413); for `remem mcp` over "
                "stdio, a message line over this many characters (JSON-RPC -32600)."
            ),
        ),
        click.option(
            "--body-timeout",
            default=10.0,
            show_default=True,
            type=click.FloatRange(min=0, min_open=True),
            help="Answer 408 and close when a request body has not arrived in this many seconds.",
        ),
        click.option(
            "--max-pending-bodies",
            default=16,
            show_default=True,
            type=click.IntRange(min=1),
            help="Bodies received at once (at most this many x --max-body bytes); beyond: 503.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def recall_threads_option(what: str, default: str) -> Callable[..., Any]:
    """--recall-threads, the size of a server process's recall lane
    (`remem.service.lane`); its help says `what` runs at once and the `default`."""
    return click.option(
        "--recall-threads",
        default=None,
        type=click.IntRange(1, 256),
        help=f"{what} at once; more wait in arrival order [default: {default}].",
    )


allow_rls_bypass_option = click.option(
    "--allow-rls-bypass",
    is_flag=True,
    help="Serve over HTTP even though the PostgreSQL role bypasses row-level security (a "
    "superuser or BYPASSRLS), which turns the database's tenant wall off; refused without it.",
)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535))
@body_options
@click.option(
    "--max-connections",
    default=1000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Open connections and requests at once; beyond: 503 (uvicorn's limit_concurrency).",
)
@click.option(
    "--keep-alive",
    default=5,
    show_default=True,
    type=click.IntRange(min=1),
    help="Close an idle keep-alive connection after this many seconds.",
)
@click.option(
    "--no-worker",
    is_flag=True,
    help="Do not run extraction in this process (separate workers drain the queue).",
)
@click.option("--lexical", is_flag=True, help="No embedding model: lexical recall only.")
@click.option(
    "--no-migrate",
    is_flag=True,
    help="Refuse to start on a database that lacks a migration instead of applying it "
    "(deploys run `remem migrate` once, first).",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Server processes (e.g. one per core); extraction still runs once, in the "
    "supervising process, and metrics count every process's requests.",
)
@recall_threads_option(
    "Recalls each server process runs", "the cores, shared among --workers, at least 1"
)
@click.option(
    "--metrics-port",
    default=None,
    type=click.IntRange(1, 65535),
    help="Also serve the whole process's Prometheus metrics on this port, without a key "
    "(/metrics on the API port needs a tenant-wide admin key and shows that tenant's).",
)
@click.option(
    "--metrics-host",
    default=None,
    help="Interface of the --metrics-port listener (default: --host's).",
)
@allow_rls_bypass_option
@json_option
@click.pass_obj
def serve(
    ctx: Ctx,
    host: str,
    port: int,
    max_body: int,
    body_timeout: float,
    max_pending_bodies: int,
    max_connections: int,
    keep_alive: int,
    no_worker: bool,
    lexical: bool,
    no_migrate: bool,
    workers: int,
    recall_threads: int | None,
    metrics_port: int | None,
    metrics_host: str | None,
    allow_rls_bypass: bool,
) -> None:
    """Run the HTTP API (OpenAPI at /openapi.json); requests need a key from `remem keys`."""
    if no_migrate:
        refuse_pending(_db_path(ctx))
    try:
        import uvicorn

        from remem.service.http import create_app
        from remem.service.lane import default_recall_threads
    except ImportError as exc:
        raise click.ClickException(
            f"the HTTP service needs its extra ({exc.name} is missing): pip install 'remem[server]'"
        ) from None
    from remem.embed.choose import for_config

    path = _db_path(ctx)
    settings: dict[str, Any] = dict(
        max_body_bytes=max_body, body_timeout=body_timeout,
        max_pending_bodies=max_pending_bodies, config=ctx.config,
        allow_rls_bypass=allow_rls_bypass,
        recall_threads=recall_threads or default_recall_threads(workers),
    )  # fmt: skip
    server: dict[str, Any] = dict(
        host=host, port=port, log_level="warning", limit_concurrency=max_connections,
        timeout_keep_alive=keep_alive, access_log=False,  # one log line per request: off
    )  # fmt: skip
    if workers > 1:
        metrics = (metrics_host or host, metrics_port)
        _serve_processes(ctx, path, workers, lexical, no_worker, settings, server, metrics)
        return
    embedder = None if lexical else for_config(ctx.config)  # [embed], else the default
    app = create_app(
        path,
        embedder=embedder,
        worker=not no_worker,
        metrics_host=metrics_host or host,
        metrics_port=metrics_port,
        **settings,
    )
    if not ctx.as_json:
        where = _where(path)
        click.echo(
            f"remem: serving {where} on http://{host}:{port} (docs at /docs, console at /console)",
            err=True,
        )
        if metrics_port is not None:
            click.echo(f"remem: metrics on http://{metrics_host or host}:{metrics_port}/", err=True)
    uvicorn.run(app, **server)


def _serve_processes(
    ctx: Ctx,
    path: str,
    workers: int,
    lexical: bool,
    no_worker: bool,
    settings: dict[str, Any],
    server: dict[str, Any],
    metrics: tuple[str, int | None],
) -> None:
    """`remem serve --workers N`: N uvicorn processes on one port, each building its app
    from `$REMEM_SERVE` (`remem.service.http.app_from_environment`); in this process the
    one extraction worker (unless --no-worker) and the --metrics-port listener. Metrics
    go to a directory made for this run (prometheus_client's multiprocess mode, named
    before anything imports it) and removed when the server stops."""
    import contextlib
    import importlib.util
    import os
    import shutil
    import tempfile

    import uvicorn

    from remem.embed.choose import for_config
    from remem.service.accept import ENV as ACCEPT_SLOTS
    from remem.service.accept import LOOP as TAKE_TURNS
    from remem.service.accept import make_slots
    from remem.service.http import serve_environment, supervising
    from remem.telemetry.core import METRICS_DIR_ENV

    store = _open(ctx)  # refuse before starting any process
    try:
        refuse_rls_bypass(store, allowed=bool(settings["allow_rls_bypass"]))
    finally:
        store.close()
    made = None  # a directory named by the caller's environment is theirs to keep
    if importlib.util.find_spec("prometheus_client") and not os.environ.get(METRICS_DIR_ENV):
        made = os.environ[METRICS_DIR_ENV] = tempfile.mkdtemp(prefix="remem-metrics-")
    # the processes' open connections, so that they share them evenly (remem.service.accept);
    # without the file they still serve, each accepting one connection at a time
    slots = None
    try:
        shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        handle, slots = tempfile.mkstemp(prefix="remem-accept-", dir=shm)
        os.close(handle)
        make_slots(slots)
        os.environ[ACCEPT_SLOTS] = slots
    except OSError as exc:
        click.echo(f"remem: warning: connections not shared evenly ({exc})", err=True)
    os.environ.update(serve_environment(path, lexical=lexical, **settings))
    if not ctx.as_json:
        click.echo(
            f"remem: serving {_where(path)} on http://{server['host']}:{server['port']} "
            f"with {workers} processes (docs at /docs, console at /console)",
            err=True,
        )
    host, port = metrics
    try:
        with supervising(
            path,
            embedder=None if (lexical or no_worker) else for_config(ctx.config),
            config=ctx.config,
            worker=not no_worker,
            metrics_host=host,
            metrics_port=port,
        ):
            if port is not None and not ctx.as_json:
                click.echo(f"remem: metrics on http://{host}:{port}/", err=True)
            uvicorn.run(
                "remem.service.http:app_from_environment",
                factory=True,
                workers=workers,
                loop=TAKE_TURNS,  # the processes take turns accepting connections
                **server,
            )
    finally:
        os.environ.pop(ACCEPT_SLOTS, None)
        if slots is not None:
            with contextlib.suppress(OSError):
                os.unlink(slots)
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)


@click.group()
def keys() -> None:
    """Create, list and revoke the API keys of the HTTP service."""


@keys.command("create")
@click.option("--tenant", "key_tenant", required=True, help="The tenant the key acts in.")
@click.option("--actor", default=None, help="Limit the key to one actor (default: all).")
@click.option(
    "--role",
    type=click.Choice(list(keyring.ROLES)),
    default="agent",
    show_default=True,
    help="agent: read and write; reviewer: also approve; admin: also erase, export, keys.",
)
@click.option(
    "--name",
    default=None,
    help="Whose key it is, for people (at most 100 characters): shown in the console's "
    "key list, in erasure receipts and in audit rows.",
)
@json_option
@click.pass_obj
def keys_create(ctx: Ctx, key_tenant: str, actor: str | None, role: str, name: str | None) -> None:
    """Create a key; its secret is printed once and only its hash is stored. The
    tenant's audit log gets a row naming the OS user (`remem.service.audit.by_operator`)."""
    store = _open(ctx)
    try:
        key, secret = keyring.create_key(
            store.keys, tenant=key_tenant, actor=actor, role=role, name=name
        )
        audit.by_operator(store.audit, key.tenant, "key_create", actor=key.actor, target=key.id)
    finally:
        store.close()
    emit(
        ctx,
        {**key.as_dict(), "key": secret},
        lambda: click.echo(
            f"{secret}\n(key {key.id}{f' {key.name!r}' if key.name else ''}: tenant {key.tenant}, "
            f"actor {key.actor or '*'}, "
            f"role {key.role}; shown once, store it now)"
        ),
    )


@keys.command("list")
@click.option("--tenant", "key_tenant", default=None, help="Only this tenant's keys.")
@json_option
@click.pass_obj
def keys_list(ctx: Ctx, key_tenant: str | None) -> None:
    """List keys (never their secrets), revoked ones included."""
    store = _open(ctx)
    try:
        found = keyring.list_keys(store.keys, key_tenant)
    finally:
        store.close()

    def human() -> None:
        for k in found:
            state = f"revoked {k.revoked_at}" if k.revoked_at else "active"
            named = f"  {k.name}" if k.name else ""
            click.echo(f"{k.id}  {k.tenant}  {k.actor or '*'}  {k.role}  {state}{named}")
        if not found:
            click.echo("no keys; create one with: remem keys create --tenant T")

    emit(ctx, {"keys": [k.as_dict() for k in found]}, human)


@keys.command("revoke")
@click.argument("key_id")
@json_option
@click.pass_obj
def keys_revoke(ctx: Ctx, key_id: str) -> None:
    """Revoke a key; requests with it are refused (401) from now on. Its tenant's audit
    log gets a row naming the OS user."""
    store = _open(ctx)
    try:
        key = keyring.revoke_key(store.keys, key_id)
        audit.by_operator(store.audit, key.tenant, "key_revoke", actor=key.actor, target=key.id)
    finally:
        store.close()
    emit(ctx, key.as_dict(), lambda: click.echo(f"revoked {key.id} at {key.revoked_at}"))
