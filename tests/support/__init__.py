"""What the tests share, and no test: servers, MCP sessions, clocks, PostgreSQL, the CLI,
store values, and where the repository's files are. A test module imports from here,
never from another test module; fixtures stay in the conftest.py files."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout: pyproject.toml, README.md, src/
SRC = ROOT / "src"
DATA = ROOT / "tests" / "data"  # the small data sets the tests read
