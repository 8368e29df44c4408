"""`remem mcp`: serve remem's tools to an MCP client, acting as one API key.

`remem.cli.main` adds the command to the root command. The `mcp` package is
imported only when the command runs.
"""

from __future__ import annotations

import click

from remem.cli.kit import Ctx, json_option, warn_store
from remem.cli.serve import (
    _db_path,
    allow_rls_bypass_option,
    body_options,
    recall_threads_option,
)


@click.command()
@click.option(
    "--key",
    envvar="REMEM_API_KEY",
    required=True,
    help="API key the server acts as (from `remem keys create`); default $REMEM_API_KEY.",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a spawning client; http for streamable HTTP at /mcp.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface (http only).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@body_options
@click.option("--lexical", is_flag=True, help="No embedding model: lexical recall only.")
@recall_threads_option("Recalls and document searches run", "the cores, at least 1")
@allow_rls_bypass_option
@json_option
@click.pass_obj
def mcp(
    ctx: Ctx,
    key: str,
    transport: str,
    host: str,
    port: int,
    max_body: int,
    body_timeout: float,
    max_pending_bodies: int,
    lexical: bool,
    recall_threads: int | None,
    allow_rls_bypass: bool,
) -> None:
    """Serve memory to an MCP client, scoped to one API key.

    \b
    Tools: remember, recall, search_documents, get_fact, get_profile,
    list_memories, forget.

    Over http, clients send the same key as `Authorization: Bearer KEY`.
    """
    try:
        from remem.service.mcp import McpServer
    except ImportError as exc:
        raise click.ClickException(
            f"the MCP server needs its extra ({exc.name} is missing): pip install 'remem[server]'"
        ) from None
    from remem.embed.choose import for_config
    from remem.service.bodies import BodyLimits
    from remem.store.roles import refuse_rls_bypass

    path = _db_path(ctx)
    embedder = None if lexical else for_config(ctx.config)  # [embed], else the default
    limits = BodyLimits(max_body, body_timeout, max_pending_bodies)
    server = McpServer.open(path, key, embedder=embedder, host=host, port=port,
                            body_limits=limits, recall_threads=recall_threads)  # fmt: skip
    try:
        warn_store(server.store)  # stderr: stdout is the stdio transport's
        if transport == "http":
            refuse_rls_bypass(server.store, allowed=allow_rls_bypass)  # before saying "on"
        if transport == "http" and not ctx.as_json:
            click.echo(
                f"remem: MCP for tenant {server.principal.tenant} on http://{host}:{port}/mcp",
                err=True,
            )
        server.run("http" if transport == "http" else "stdio", allow_rls_bypass=allow_rls_bypass)
    finally:
        server.close()
