"""The order xdist's workers take the test files in: the longest first.

With `--dist loadfile --no-loadscope-reorder` (pyproject's addopts) a worker takes the
next file in collection order when it is free. The files below hold a few tests that
each take long (a type check of the whole package, servers in child processes, a
browser, a Node build), so they start first; the many quick files, tests/unit last of
all, then fill the gaps and no worker is left alone with a long one at the end. Seconds
on one of two workers, 2026-12-05, load 9-15 (x2 of the suite-speed runs; mypy: 130-250 s).
"""

from __future__ import annotations

LONGEST_FIRST = (
    "tests/hygiene/test_hygiene.py",  # mypy --strict of src/remem, ruff
    "tests/surfaces/http/test_bench_http.py",  # 91 s: benchmarks on two processes
    "tests/surfaces/http/test_serve_workers.py",  # 90 s: remem serve --workers 2
    "tests/hostile/test_hostile_adapters.py",  # 85 s: ten thousand records, three backends
    "tests/surfaces/test_stored_strings.py",  # 81 s
    "tests/surfaces/http/test_service.py",  # 80 s: schemathesis
    "tests/surfaces/mcp/test_mcp.py",  # 78 s: stdio and HTTP MCP servers
    "tests/integrations/test_typescript_client.py",  # the client's npm build and node
    "tests/surfaces/console/test_console_browser.py",  # 48 s: Chromium
    "tests/integrations/test_crewai.py",  # 44 s: CrewAI's own environment
    "tests/surfaces/http/test_openapi.py",  # 38 s
)


def rank(nodeid: str) -> int:
    """Where a test's file comes: its place in `LONGEST_FIRST`, or after them all."""
    path = nodeid.split("::")[0]
    return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)
