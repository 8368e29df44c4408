"""`remem mcp` over stdio through the MCP SDK's own client: a session against a
database, and what a tool call returned."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from remem.memory.memory import open_store
from remem.service import keys as keyring
from tests.support.processes import child_env


def mcp_keys(db: str) -> dict[str, str]:
    store = open_store(db)
    try:
        return {
            "alice": keyring.create_key(store.keys, tenant="acme", actor="alice")[1],
            "admin": keyring.create_key(store.keys, tenant="acme", role="admin")[1],
            "globex": keyring.create_key(store.keys, tenant="globex", role="admin")[1],
        }
    finally:
        store.close()


def tool_data(result: CallToolResult) -> dict[str, Any]:
    assert not result.isError, tool_text(result)
    if result.structuredContent is not None:
        return dict(result.structuredContent)
    data: dict[str, Any] = json.loads(tool_text(result))
    return data


def tool_text(result: CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


def tool_error(result: CallToolResult) -> str:
    assert result.isError, f"expected an error, got {tool_text(result)}"
    text = tool_text(result)
    assert "Traceback" not in text
    return text


def stdio_server(db: str, key: str, errlog: Any, lexical: bool = True) -> Any:
    """`remem mcp` on `db` as `key`, lexical unless told (the default embedder then)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "remem.cli.main", "--db", db, "mcp", "--key", key]
        + (["--lexical"] if lexical else []),
        env=child_env() if lexical else {**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    return stdio_client(params, errlog=errlog)


def session_run(
    db: str,
    key: str,
    errlog: Any,
    body: Callable[[ClientSession], Awaitable[None]],
    lexical: bool = True,
) -> None:
    async def main() -> None:
        with anyio.fail_after(60 if not lexical else 20):
            async with stdio_server(db, key, errlog, lexical) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await body(session)

    anyio.run(main)
