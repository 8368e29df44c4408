"""The TypeScript client (clients/typescript, npm package `remem`) under node 20: built
with its own TypeScript, its ROUTES checked against this service's OpenAPI document,
and scripts that remember, recall and forget against a real `remem serve`: with the
client, and with its Vercel AI SDK tools (`remem/ai`) in the `ai` package's
`generateText`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from remem.service.http import create_app
from tests.support import ROOT
from tests.support.servers import running_server

PACKAGE = ROOT / "clients" / "typescript"


@pytest.fixture(scope="module")
def built() -> Path:
    """The package, built (ESM and CommonJS) by the TypeScript `.ci/run` installs."""
    node = shutil.which("node")
    assert node is not None, "node (20 or later) is needed for the TypeScript client's tests"
    assert (PACKAGE / "node_modules" / "typescript").is_dir(), (
        "run `npm ci --prefix clients/typescript` first (.ci/run does)"
    )
    done = subprocess.run(["npm", "run", "--silent", "build"], cwd=PACKAGE,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return PACKAGE


def _node_test(package: Path, test: str, env: dict[str, str]) -> None:
    done = subprocess.run(
        ["node", "--test", f"test/{test}"],
        cwd=package, env={**os.environ, **env}, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout and "# pass 0" not in done.stdout, done.stdout


def test_its_routes_are_the_openapi_documents(built: Path, tmp_path: Path) -> None:
    doc = create_app(str(tmp_path / "doc.db")).openapi()
    (tmp_path / "openapi.json").write_text(json.dumps(doc))
    _node_test(built, "routes.test.mjs", {"REMEM_OPENAPI": str(tmp_path / "openapi.json")})


def test_a_node_script_remembers_recalls_and_forgets(built: Path, tmp_path: Path) -> None:
    with running_server(str(tmp_path / "service.db")) as server:
        env = {"REMEM_URL": server.url, "REMEM_KEY": server.keys["admin"]}
        _node_test(built, "live.test.mjs", env)


def test_vercel_ai_sdk_tools_remember_recall_and_forget(built: Path, tmp_path: Path) -> None:
    """generateText of the `ai` package with remem/ai's tools, its model a scripted
    OpenAI-compatible server the node test starts on loopback."""
    with running_server(str(tmp_path / "service.db")) as server:
        env = {"REMEM_URL": server.url, "REMEM_KEY": server.keys["admin"]}
        _node_test(built, "ai.test.mjs", env)
