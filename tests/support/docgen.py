"""The generated reference pages of the docs site, from the code itself: the CLI (click),
the HTTP API (the service's OpenAPI document) and the MCP tools (the server's tool list).

`tests/hygiene/test_docs.py` renders each page again and compares it with the committed
file, so a changed command, route or tool fails the suite until the pages are
regenerated (offline; no server is started):

    PYTHONPATH=src python -m tests.support.docgen
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from tests.support import ROOT

REFERENCE = ROOT / "docs" / "reference"
REGENERATE = "PYTHONPATH=src python -m tests.support.docgen"
_WIDTH = 88  # the help text's width, fixed so the page does not depend on the terminal


# --- the command line -----------------------------------------------------------------


def command_paths(group: click.Group, prefix: str = "remem") -> list[tuple[str, click.Command]]:
    """Every leaf command under `group` as ("remem a b", command), in registration order."""
    out: list[tuple[str, click.Command]] = []
    for name, cmd in group.commands.items():
        path = f"{prefix} {name}"
        if isinstance(cmd, click.Group):
            out.extend(command_paths(cmd, path))
        else:
            out.append((path, cmd))
    return out


def cli_page() -> str:
    from remem.cli.main import cli

    # the group's own settings (`-h`), as `remem` itself makes its context
    root = click.Context(
        cli,
        info_name="remem",
        terminal_width=_WIDTH,
        max_content_width=_WIDTH,
        **cli.context_settings,
    )
    lines = [
        "# CLI reference",
        "",
        "Generated from the commands' own help (`remem COMMAND --help`); "
        f"regenerate with `{REGENERATE}`. What each command prints with `--json` is in",
        "[The command line](../guide/command-line.md).",
        "",
        "## remem",
        "",
        "```text",
        cli.get_help(root).rstrip(),
        "```",
        "",
    ]
    for path, cmd in command_paths(cli):
        ctx = root
        for part in path.split()[1:-1]:
            group = ctx.command
            assert isinstance(group, click.Group)
            ctx = click.Context(group.commands[part], info_name=part, parent=ctx)
        leaf = click.Context(cmd, info_name=path.split()[-1], parent=ctx)
        lines += [f"## {path}", "", "```text", cmd.get_help(leaf).rstrip(), "```", ""]
    return "\n".join(lines)


# --- the HTTP API ---------------------------------------------------------------------


def openapi() -> dict[str, Any]:
    """The service's OpenAPI document, from an app over a throwaway database."""
    from remem.service.http import create_app

    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(Path(tmp) / "openapi.db", worker=False, metrics=False)
        return app.openapi()


def _type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "anyOf" in schema:
        return " or ".join(_type(s) for s in schema["anyOf"])
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if schema.get("type") == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if schema.get("type") == "object" and "additionalProperties" in schema:
        extra = schema["additionalProperties"]
        return f"object of {_type(extra)}" if isinstance(extra, dict) else "object"
    return str(schema.get("type", "any"))


def _cell(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def http_page() -> str:
    spec = openapi()
    lines = [
        "# HTTP API reference",
        "",
        f"Rendered from the service's OpenAPI document ({spec['info']['title']} "
        f"{spec['info']['version']}), which `remem serve` also serves at `/openapi.json`; "
        f"regenerate with `{REGENERATE}`. Every route but `/healthz` and `/readyz` needs "
        "`Authorization: Bearer KEY` (a key from `remem keys create`); every error is an "
        "[ErrorBody](#errorbody). The guide is [The HTTP service](../guide/http.md); "
        "to generate a typed client from this document (`openapi-python-client generate "
        "--path openapi.json --output-path remem-client`), see its "
        "[Generating a client](../guide/http.md#generating-a-client).",
        "",
        "## Operations",
        "",
    ]
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            lines += [f"### `{method.upper()} {path}`", ""]
            lines += [f"`{op.get('operationId', '')}`: {_cell(op.get('description'))}", ""]
            params = op.get("parameters", [])
            if params:
                lines += [
                    "| parameter | in | type | required | description |",
                    "|---|---|---|---|---|",
                ]
                for p in params:
                    lines.append(
                        f"| `{p['name']}` | {p['in']} | {_type(p.get('schema', {}))} | "
                        f"{'yes' if p.get('required') else ''} | {_cell(p.get('description'))} |"
                    )
                lines.append("")
            body = op.get("requestBody", {}).get("content", {})
            for media, content in body.items():
                lines += [f"Body ({media}): {_type(content.get('schema', {}))}", ""]
            lines += ["| status | answer | when |", "|---|---|---|"]
            for status, answer in sorted(op.get("responses", {}).items()):
                schema = next(iter(answer.get("content", {}).values()), {}).get("schema", {})
                shown = _type(schema) if schema else ""
                lines.append(f"| {status} | {shown} | {_cell(answer.get('description'))} |")
            lines.append("")
    lines += ["## Schemas", ""]
    for name, schema in sorted(spec["components"]["schemas"].items()):
        lines += [f"### {name}", ""]
        if schema.get("description"):
            lines += [_cell(schema["description"]), ""]
        props = schema.get("properties", {})
        if props:
            required = set(schema.get("required", []))
            lines += ["| field | type | required | description |", "|---|---|---|---|"]
            for field, sub in props.items():
                lines.append(
                    f"| `{field}` | {_type(sub)} | {'yes' if field in required else ''} | "
                    f"{_cell(sub.get('description'))} |"
                )
            lines.append("")
    return "\n".join(lines)


# --- the MCP tools --------------------------------------------------------------------


def mcp_tools() -> list[Any]:
    """The MCP server's tools as a client lists them (a key on a throwaway database)."""
    import anyio

    from remem.memory.memory import open_store
    from remem.service import keys as keyring
    from remem.service.mcp import McpServer

    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "mcp.db")
        try:
            key = keyring.create_key(store.keys, tenant="docs", role="admin")[1]
            server = McpServer(store, key)
            return list(anyio.run(server.mcp.list_tools))
        finally:
            store.close()


def mcp_page() -> str:
    from remem.service.mcp import INSTRUCTIONS

    lines = [
        "# MCP tools reference",
        "",
        f"The tools `remem mcp` lists, as an MCP client sees them; regenerate with "
        f"`{REGENERATE}`. How to connect a client is on the [MCP](../mcp.md) page.",
        "",
        "The server's instructions to the model:",
        "",
        f"> {INSTRUCTIONS}",
        "",
    ]
    for tool in mcp_tools():
        hints = tool.annotations
        kind = []
        if hints is not None and hints.readOnlyHint:
            kind.append("read-only")
        if hints is not None and hints.destructiveHint:
            kind.append("destructive")
        title = hints.title if hints is not None and hints.title else tool.name
        lines += [
            f"## {tool.name}",
            "",
            f"**{title}**" + (f" ({', '.join(kind)})" if kind else ""),
            "",
        ]
        lines += [" ".join((tool.description or "").split()), ""]
        props = tool.inputSchema.get("properties", {})
        required = set(tool.inputSchema.get("required", []))
        lines += ["| argument | type | default | description |", "|---|---|---|---|"]
        for name, sub in props.items():
            default = "required" if name in required else f"`{json.dumps(sub.get('default'))}`"
            lines.append(
                f"| `{name}` | {_type(sub)} | {default} | {_cell(sub.get('description'))} |"
            )
        lines.append("")
    return "\n".join(lines)


PAGES: dict[str, Callable[[], str]] = {
    "cli.md": cli_page,
    "http.md": http_page,
    "mcp-tools.md": mcp_page,
}


def main() -> None:
    for name, render in PAGES.items():
        (REFERENCE / name).write_text(render())
        print(f"wrote docs/reference/{name}")


if __name__ == "__main__":
    main()
