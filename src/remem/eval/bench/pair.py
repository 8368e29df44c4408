"""`remem bench --http --records N --backend both`: PostgreSQL beside SQLite, same minutes.

The service's targets compare PostgreSQL's retrieve with SQLite's, but one run of
`remem bench --http` measures one backend, and two runs a minute apart can differ twofold
on a shared machine (docs/decisions/service-speed.md, "PostgreSQL beside SQLite in the
same minutes"). `run_http_pair` builds the same `records` synthetic records in one
actor's scope in a new SQLite file and in a PostgreSQL database (its own server, as
`--backend postgres` starts one, unless `postgres_db` names an empty database), starts
`remem serve --workers N` on each, warms both, and then, at each concurrency, sends
`requests` retrieves to each in turns of `BLOCK_MIN` (or ten per client thread, if more)
on the same query texts, the backend that goes first alternating. Each backend's row is
`remem bench --http`'s (latencies, retrieves/s, CPU per retrieve), and beside them
PostgreSQL's p50, p95 and throughput as ratios to SQLite's.
"""

from __future__ import annotations

import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from remem.eval.bench import local
from remem.eval.bench.http import (
    BenchServer,
    Progress,
    _check,
    _each,
    _figures,
    _measure,
    _merge,
    _prepare,
    _target,
)
from remem.eval.bench.pg import postmaster_pid

BLOCK_MIN = 60  # retrieves in one backend's turn, at least
SIDES = ("sqlite", "postgres")


def run_http_pair(
    *,
    records: int,
    concurrencies: tuple[int, ...] = (1, 8),
    workers: int = 1,
    requests: int = 1000,
    sqlite_db: str | None = None,
    postgres_db: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Retrieve over HTTP on both backends in alternating turns (see the module);
    `sqlite_db` a new file and `postgres_db` an empty database, or None for the bench's
    own. Returns a row per concurrency, each backend's figures and the ratios."""
    _check(records, requests, concurrencies, "postgres")
    say: Progress = (lambda m: print(m, file=sys.stderr)) if progress else (lambda m: None)
    with tempfile.TemporaryDirectory(prefix="remem-bench-pair-") as tmp, ExitStack() as stack:
        targets = {
            "sqlite": stack.enter_context(_target(sqlite_db, "sqlite", tmp)),
            "postgres": stack.enter_context(_target(postgres_db, "postgres", tmp)),
        }
        keys: dict[str, str] = {}
        names: set[str] = set()
        lexical = False
        for side in SIDES:
            say(f"{side}: {records} records")
            keys[side], lexical, emb = _prepare(targets[side], records, say)
            names.add(emb)
        urls: dict[str, str] = {}
        servers: dict[str, BenchServer] = {}
        for side in SIDES:
            log = Path(tmp) / f"server-{side}.log"
            servers[side] = BenchServer(
                targets[side], lexical=lexical, log=log, workers=workers, worker=False
            )
            urls[side] = stack.enter_context(servers[side])
        postmaster = postmaster_pid(targets["postgres"])
        warm = [local.warm_query(i) for i in range(local.WARM)]
        for side in SIDES:  # at the concurrency of every process, so each one is warmed
            _measure(urls[side], keys[side], len(warm), 2 * workers, _each(warm))
        rows = []
        errors = 0
        for run, c in enumerate(concurrencies):
            block = max(BLOCK_MIN, 10 * c)
            turns: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
            for b, start in enumerate(range(0, requests, block)):
                end = min(start + block, requests)
                texts = [local.query(i, run + 1) for i in range(start, end)]
                for side in SIDES if b % 2 == 0 else SIDES[::-1]:
                    pid = postmaster if side == "postgres" else None
                    got = _measure(urls[side], keys[side], len(texts), c, _each(texts),
                                   servers[side], pid)  # fmt: skip
                    turns[side].append(got)
            row: dict[str, Any] = {"concurrency": c}
            for side in SIDES:
                merged = _merge(turns[side])
                row[side] = {**_figures("retrieve", merged), "errors": merged["errors"]}
                errors += merged["errors"]
            sq, pg = row["sqlite"], row["postgres"]
            row["postgres_to_sqlite_p50"] = round(pg["retrieve_p50_ms"] / sq["retrieve_p50_ms"], 2)
            row["postgres_to_sqlite_p95"] = round(pg["retrieve_p95_ms"] / sq["retrieve_p95_ms"], 2)
            row["postgres_to_sqlite_per_s"] = round(pg["retrieve_per_s"] / sq["retrieve_per_s"], 2)
            say(
                f"concurrency {c}: SQLite p50 {sq['retrieve_p50_ms']} ms, "
                f"{sq['retrieve_per_s']}/s; PostgreSQL p50 {pg['retrieve_p50_ms']} ms, "
                f"{pg['retrieve_per_s']}/s; p50 ratio {row['postgres_to_sqlite_p50']}"
            )
            rows.append(row)
    return {"records": records, "backend": "both", "workers": workers,
            "embedder": ", ".join(sorted(names)), "http": rows, "errors": errors}  # fmt: skip
