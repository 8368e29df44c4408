"""A fresh process loads only what it uses (issue 15: a cold `remem recall` CLI process).

Each check runs a new interpreter and reads its `sys.modules` at exit: `import
remem` loads the errors and value types only, and a recall on SQLite, through
the CLI or the library, loads neither the write paths, extraction, erasure and
thread state, nor the HTTP service, the MCP server, the evaluation, asyncio,
pydantic (no configuration file is read) or the PostgreSQL driver. Speed itself
is measured by `remem bench`, not here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import remem

SRC = str(Path(remem.__file__).resolve().parents[1])

# what none of these processes needs: the modules made lazy for a cold recall
NEVER = (
    "asyncio",
    "fastapi",
    "httpx",
    "mcp",
    "openai",
    "psycopg",
    "pydantic",
    "remem.memory.aio",
    "remem.writes.batch",
    "remem.config.file",
    "remem.consolidate.step",
    "remem.documents.chunk",  # parsing and chunking: on ingest only
    "remem.documents.parse",
    "remem.eval",
    "remem.extract",
    "remem.pipeline.jobs",  # the extraction jobs' flows
    "remem.lifecycle",
    "remem.pipeline",
    "remem.service",
    "remem.thread",
    "remem.pipeline.worker",
    "remem.writes.events",
    "remem.writes.records",
    "starlette",
    "uvicorn",
)

# prints, at exit, every loaded module one of `prefixes` names (itself or a submodule)
_REPORT = """
import atexit, json, sys
def _report():
    found = sorted({m for m in sys.modules for p in PREFIXES if m == p or m.startswith(p + ".")})
    sys.__stderr__.write("LOADED " + json.dumps(found) + "\\n")
atexit.register(_report)
"""


def _loaded(code: str, prefixes: tuple[str, ...], tmp_path: Path, **env: str) -> list[str]:
    """Run `code` in a fresh interpreter; the modules under `prefixes` it had loaded."""
    script = f"PREFIXES = {prefixes!r}\n{_REPORT}\n{code}"
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": SRC, **env},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    line = [ln for ln in done.stderr.splitlines() if ln.startswith("LOADED ")][-1]
    return list(json.loads(line.removeprefix("LOADED ")))


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database with records (and their vectors, when a model is installed), and
    no extraction job pending."""
    path = tmp_path_factory.mktemp("cold") / "m.db"
    with remem.Memory.open(path) as mem:
        mem.remember(actor="alice", text="I prefer aisle seats on long flights")
        mem.remember(actor="alice", text="My sister lives in Porto")
        mem.add_event(actor="alice", session="s1", role="user", text="Book me a flight to Porto")
        mem.process()  # nothing pending: a recall with a backlog runs it (`memory.catch_up`)
    return path


def test_import_remem_loads_only_errors_and_values(tmp_path: Path) -> None:
    heavy = (*NEVER, "numpy", "click", "remem.memory.memory", "remem.store")
    assert _loaded("import remem", heavy, tmp_path) == []
    # what was made lazy is still there when named
    code = "import remem\nassert remem.Memory.__name__ == 'Memory'\nfrom remem import AsyncMemory"
    assert "remem.memory.memory" in _loaded(code, ("remem.memory.memory",), tmp_path)


def test_a_cli_recall_on_sqlite_loads_no_write_path_service_or_eval(
    db: Path, tmp_path: Path
) -> None:
    code = (
        "import sys\nfrom remem.cli.main import main\n"
        f"sys.exit(main(['--db', {str(db)!r}, 'recall', '--actor', 'alice', "
        "'--query', 'which seat should I book', '--json']))"
    )
    found = _loaded(code, (*NEVER, "remem.cli.records", "remem.recall"), tmp_path)
    assert [m for m in found if m.startswith(NEVER)] == []
    assert {"remem.cli.records", "remem.recall.engine"} <= set(found)  # it did recall
    # and a command that writes, or serves, still loads what it runs
    code = (
        "import sys\nfrom remem.cli.main import main\n"
        f"sys.exit(main(['--db', {str(db)!r}, 'remember', '--actor', 'bob', "
        "'--text', 'I live in Lima', '--json']))"
    )
    assert "remem.writes.records" in _loaded(code, ("remem.writes",), tmp_path)
    code = "import sys\nfrom remem.cli.main import main\nsys.exit(main(['mcp', '--help']))"
    assert "remem.cli.mcp" in _loaded(code, ("remem.cli.mcp",), tmp_path)


def test_a_library_recall_on_sqlite_loads_no_write_path_service_or_eval(
    db: Path, tmp_path: Path
) -> None:
    code = (
        "from remem import Memory\n"
        f"with Memory.open({str(db)!r}) as mem:\n"
        "    packet = mem.recall(actor='alice', query='where does my sister live')\n"
        "assert 'Porto' in packet.records[0].text, packet"
    )
    found = _loaded(code, (*NEVER, "remem.recall"), tmp_path)
    assert [m for m in found if m.startswith(NEVER)] == []
    assert "remem.recall.engine" in found


@pytest.mark.parametrize("endpoint", ["", "http://127.0.0.1:9/v1"])
def test_no_config_file_loads_no_pydantic_and_is_what_an_empty_file_gives(
    tmp_path: Path, endpoint: str
) -> None:
    (tmp_path / "empty.toml").write_text("", encoding="utf-8")
    code = (
        "import dataclasses, sys\nfrom remem.config.config import load_config\n"
        "none = load_config()\nassert 'pydantic' not in sys.modules\n"
        "empty = load_config('empty.toml')\n"
        "assert none == dataclasses.replace(empty, source='defaults'), (none, empty)\n"
        "print(none.strategy_names, file=sys.stderr)"
    )
    env = {"REMEM_LLM_BASE_URL": endpoint, "REMEM_LLM_MODEL": "m", "REMEM_CONFIG": ""}
    assert "pydantic" in _loaded(code, ("pydantic",), tmp_path, **env)  # read for the file
