"""`remem bench --http`: requests/s and latency through a real server on loopback.

`run_http_bench` creates a temporary database (or uses the one `db` names:
a new SQLite file, or an empty PostgreSQL database) and an API key, starts
`remem serve` on it in a child process on a free port of 127.0.0.1 (so the
server and the load generator do not share one interpreter), and sends a
bounded number of requests from `concurrency` threads, each on its own keep-alive
HTTP/1.1 connection of the standard library's `http.client` (a light client: it
shares the machine's cores with the server):

    add       POST /v1/events             one event per request
    retrieve  POST /v1/memories/retrieve  one recall per request, after the adds

The server runs as `remem serve` does by default: its extraction worker
drains the queue while the requests arrive. The server is stopped, and a
temporary database removed, before the function returns; a named one keeps
what the bench wrote.

`run_http_compare` puts the service beside the library on the same data: it
builds `records` synthetic records in one actor's scope (as `remem bench`
does), measures `Memory.recall` in process, then the same recalls through
`remem serve --workers N` at each concurrency, and the ratio of each HTTP p50
to the in-process p50.

Beside each latency: the CPU per request of the server's processes (read from /proc,
where there is one) and of the client (this process), and the load average, as the
machine may be shared: CPU per request moves far less with load than latency does.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np

from remem.embed.base import HashEmbedder
from remem.errors import InvalidInput, RememError
from remem.eval.bench import local, synthetic
from remem.eval.bench.local import LocalRecall, warm_query
from remem.eval.bench.pg import postmaster_pid
from remem.eval.bench.synthetic import QUERIES, synthetic_facts
from remem.memory.memory import Memory, is_server_url, open_store
from remem.service import keys as keyring

START_SECONDS = 60.0
ACTORS = 8

Progress = Callable[[str], None]


def run_http_bench(
    *,
    db: str | None = None,
    requests: int = 1000,
    concurrency: int = 8,
    lexical: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Measure add and retrieve through `remem serve` on loopback; return the figures.

    `db` None benches a temporary SQLite file; else a file that must not exist
    yet (`sqlite:///path` or a path) or a PostgreSQL URL of an empty database.
    `requests` of each kind are sent by `concurrency` threads; `lexical`
    starts the server without an embedding model.
    """
    if not 1 <= requests <= 1_000_000:
        raise InvalidInput(f"requests must be from 1 to 1000000; got {requests}")
    if not 1 <= concurrency <= 256:
        raise InvalidInput(f"concurrency must be from 1 to 256; got {concurrency}")
    say: Progress = (lambda m: print(m, file=sys.stderr)) if progress else (lambda m: None)
    with tempfile.TemporaryDirectory(prefix="remem-bench-http-") as tmp:
        target = db or str(Path(tmp) / "bench.db")
        if not is_server_url(target) and Path(target.removeprefix("sqlite:///")).exists():
            raise InvalidInput(f"{target} exists; bench builds a fresh database, name a new file")
        store = open_store(target)
        try:
            held = store.stats()
            if held["records"] or held["events"]:
                raise InvalidInput(
                    f"the database named by --db already holds {held['records']} records and "
                    f"{held['events']} events; bench builds its own data, name an empty database"
                )
            _, key = keyring.create_key(store.keys, tenant="bench")
        finally:
            store.close()
        server = BenchServer(target, lexical=lexical, log=Path(tmp) / "server.log")
        with server as url:
            say(f"server on {url} ({'lexical' if lexical else 'default embedder'})")
            figures: dict[str, Any] = {
                "requests": requests,
                "concurrency": concurrency,
                "lexical": lexical,
            }
            facts = synthetic_facts(min(requests, 2000), seed=5)
            add = _measure(url, key, requests, concurrency, lambda i: _event(i, facts), server)
            say(_line("add", add))
            figures.update(_figures("add", add))
            get = _measure(url, key, requests, concurrency, _retrieve, server)
            say(_line("retrieve", get))
            figures.update(_figures("retrieve", get))
            figures["errors"] = add["errors"] + get["errors"]
    return figures


def run_http_compare(
    *,
    records: int,
    concurrencies: tuple[int, ...] = (1, 8, 32),
    workers: int = 1,
    db: str | None = None,
    backend: str = "sqlite",
    requests: int = 1000,
    progress: bool = True,
) -> dict[str, Any]:
    """In-process recall beside HTTP retrieve on the same `records` records in scope
    (`db` as for `run_http_bench`; without it, `backend` postgres starts a PostgreSQL
    server of its own, `remem.eval.bench.pg`); `requests` retrieves at each of
    `concurrencies`, through `workers` server processes. The in-process side runs in
    a fresh process, warmed up as the server is, and takes turns with HTTP at
    concurrency 1 on the same query texts (`remem.eval.bench.local`). Returns the
    figures and the p50 and CPU ratios."""
    _check(records, requests, concurrencies, backend)
    say: Progress = (lambda m: print(m, file=sys.stderr)) if progress else (lambda m: None)
    with (
        tempfile.TemporaryDirectory(prefix="remem-bench-http-") as tmp,
        _target(db, backend, tmp) as target,
    ):
        key, lexical, emb = _prepare(target, records, say)
        postmaster = postmaster_pid(target)
        figures: dict[str, Any] = {
            "records": records,
            "backend": "postgres" if is_server_url(target) else "sqlite",
            "workers": workers,
            "embedder": emb,
            "http": [],
        }
        log = Path(tmp) / "server.log"
        server = BenchServer(target, lexical=lexical, log=log, workers=workers, worker=False)
        with LocalRecall(target) as inproc, server as url:
            say(f"server on {url} ({workers} process{'es' if workers > 1 else ''})")
            warm = [warm_query(i) for i in range(local.WARM)]
            inproc.run(warm)
            # at the concurrency of every process, so that each one is warmed
            _measure(url, key, len(warm), 2 * workers, _each(warm))
            mine, first = _alternate(inproc, url, key, requests, server, postmaster)
            http1: dict[str, Any] | None = first
            figures.update(_local_figures(mine))
            say(
                f"in process, alternating with HTTP: p50 {figures['inprocess_recall_p50_ms']} ms,"
                f" p95 {figures['inprocess_recall_p95_ms']} ms,"
                f" {figures['inprocess_recall_cpu_ms']} ms CPU per recall"
            )
            for run, c in enumerate(concurrencies):
                if c == 1 and http1 is not None:
                    got, http1 = http1, None
                else:
                    got = _measure(url, key, requests, c, _texts(run + 1), server, postmaster)
                say(_line(f"retrieve at concurrency {c}", got))
                figures["http"].append(_row(c, got, figures))
    return figures


def _alternate(
    inproc: LocalRecall, url: str, key: str, requests: int, server: BenchServer,
    postmaster: int | None,
) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """The same `requests` query texts in process and over HTTP at concurrency 1, in
    alternating turns (`local.plan`); the runs of each side, merged."""
    sides: dict[str, list[dict[str, Any]]] = {"local": [], "http": []}
    for side, part in local.plan(requests):
        texts = [local.query(i) for i in part]
        if side == "http":
            make = _each(texts)
            sides[side].append(_measure(url, key, len(texts), 1, make, server, postmaster))
        else:
            db0 = _cpu(postmaster)
            got = inproc.run(texts)
            db1 = _cpu(postmaster)
            sides[side].append({"n": len(texts), "ms": got["ms"], "cpu_s": got["cpu_s"],
                                "db_cpu_s": None if db0 is None or db1 is None else db1 - db0,
                                "load": round(os.getloadavg()[0], 2)})  # fmt: skip
    return _merge(sides["local"]), _merge(sides["http"])


def _merge(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several runs of one side as one: latencies joined, times and CPU summed."""
    out: dict[str, Any] = {"n": sum(r["n"] for r in runs), "ms": [t for r in runs for t in r["ms"]],
                           "errors": sum(r.get("errors", 0) for r in runs),
                           "load": round(max(r["load"] for r in runs), 2)}  # fmt: skip
    for field in ("wall_s", "client_cpu_s", "server_cpu_s", "cpu_s", "db_cpu_s"):
        values = [r.get(field) for r in runs]
        if field in runs[0]:
            out[field] = None if None in values else sum(v for v in values if v is not None)
    if "wall_s" not in out:
        out["wall_s"] = sum(out["ms"]) / 1000
    return out


def _local_figures(run: dict[str, Any]) -> dict[str, Any]:
    ms = np.asarray(run["ms"])
    out = {
        "inprocess_recall_p50_ms": round(float(np.percentile(ms, 50)), 2),
        "inprocess_recall_p95_ms": round(float(np.percentile(ms, 95)), 2),
        "inprocess_recall_cpu_ms": round(run["cpu_s"] * 1000 / run["n"], 2),
        "inprocess_load_1m": run["load"],
    }
    if run.get("db_cpu_s") is not None:
        out["inprocess_db_cpu_ms"] = round(run["db_cpu_s"] * 1000 / run["n"], 2)
    return out


def _row(c: int, got: dict[str, Any], figures: dict[str, Any]) -> dict[str, Any]:
    row = {"concurrency": c, **_figures("retrieve", got), "errors": got["errors"]}
    row["p50_to_inprocess"] = round(row["retrieve_p50_ms"] / figures["inprocess_recall_p50_ms"], 2)
    if row.get("retrieve_server_cpu_ms") is not None:
        row["server_cpu_to_inprocess"] = round(
            row["retrieve_server_cpu_ms"] / max(figures["inprocess_recall_cpu_ms"], 1e-6), 2
        )
    return row


def _each(texts: list[str]) -> Callable[[int], Request]:
    return lambda i: _recall_request(texts[i])


def _texts(run: int) -> Callable[[int], Request]:
    return lambda i: _recall_request(local.query(i, run))


def _cpu(pid: int | None) -> float | None:
    return None if pid is None else local.tree_cpu_seconds(pid)


def run_http_mixed(
    *,
    records: int,
    seconds: float,
    concurrency: int = 16,
    workers: int = 1,
    db: str | None = None,
    backend: str = "sqlite",
    progress: bool = True,
) -> dict[str, Any]:
    """`records` synthetic records in scope, then `remem serve --workers N` (with its
    extraction worker) under adds, retrieves and forgets from `concurrency` threads for
    `seconds`, and the check that nothing was lost (`remem.eval.bench.mixed`)."""
    from remem.eval.bench.mixed import run_mixed

    _check(records, 10, (concurrency,), backend)
    if not 1 <= seconds <= 86_400:
        raise InvalidInput(f"seconds must be from 1 to 86400; got {seconds}")
    say: Progress = (lambda m: print(m, file=sys.stderr)) if progress else (lambda m: None)
    with (
        tempfile.TemporaryDirectory(prefix="remem-bench-http-") as tmp,
        _target(db, backend, tmp) as target,
    ):
        key, lexical, emb = _prepare(target, records, say)
        log = Path(tmp) / "server.log"
        with BenchServer(target, lexical=lexical, log=log, workers=workers) as url:
            say(f"server on {url}: mixed load for {seconds:g}s at concurrency {concurrency}")
            got = run_mixed(url, key, seconds=seconds, concurrency=concurrency, say=say)
    backend_name = "postgres" if is_server_url(target) else "sqlite"
    return {"records": records, "backend": backend_name, "workers": workers, "embedder": emb,
            **got}  # fmt: skip


BACKENDS = ("sqlite", "postgres")


def _check(records: int, requests: int, concurrencies: tuple[int, ...], backend: str) -> None:
    if not 100 <= records <= 10_000_000:
        raise InvalidInput(f"records must be from 100 to 10000000; got {records}")
    if not 1 <= requests <= 1_000_000:
        raise InvalidInput(f"requests must be from 1 to 1000000; got {requests}")
    if not concurrencies or not all(1 <= c <= 256 for c in concurrencies):
        raise InvalidInput(f"each concurrency must be from 1 to 256; got {list(concurrencies)}")
    if backend not in BACKENDS:
        raise InvalidInput(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")


@contextmanager
def _target(db: str | None, backend: str, tmp: str) -> Iterator[str]:
    """The database to bench: `db` as named, a PostgreSQL server of the bench's own
    (`backend` postgres), or a new SQLite file in `tmp`."""
    if db is not None:
        if backend == "postgres" and not is_server_url(db):
            raise InvalidInput("--backend postgres with --db needs a postgresql:// URL")
        if not is_server_url(db) and Path(db.removeprefix("sqlite:///")).exists():
            raise InvalidInput(f"{db} exists; bench builds a fresh database, name a new file")
        yield db
    elif backend == "postgres":
        from remem.eval.bench.pg import embedded_database

        with embedded_database() as url:
            yield url
    else:
        yield str(Path(tmp) / "bench.db")


def _prepare(target: str, records: int, say: Progress) -> tuple[str, bool, str]:
    """`records` synthetic records in one actor's scope, as `remem bench` builds them;
    the API key, whether lexical, and the embedder's name. Nothing is timed here: the
    process that built the records is not the one that recalls (`local.LocalRecall`).
    A PostgreSQL database is vacuumed after the load (`pg.settle`)."""
    with Memory.open(target) as mem:
        synthetic._refuse_used(mem)
        emb = mem.embedder or HashEmbedder()
        say(f"embedder: {emb.name}")
        synthetic._load(mem, emb, records, records, say, [])
        _, key = keyring.create_key(mem.store.keys, tenant=mem.tenant)
        lexical = mem.embedder is None
    if is_server_url(target):  # no autovacuum of the load beside the timed part
        from remem.eval.bench.pg import settle

        say("VACUUM (ANALYZE) after the load")
        settle(target)
    return key, lexical, emb.name


def _recall_request(query: str) -> Request:
    """The recall `remem bench` times in process (`synthetic._recall`), as a request."""
    body = {"actor_id": "bench-main", "query": query, "top_k": 10, "budget_tokens": 500}
    return "/v1/memories/retrieve", body


# -- the server ------------------------------------------------------------------------------


class BenchServer:
    """`remem serve` in a child process on a free loopback port; stopped on exit."""

    def __init__(
        self, db: str, *, lexical: bool, log: Path, workers: int = 1, worker: bool = True
    ) -> None:
        self.db = db
        self.lexical = lexical
        self.log = log
        self.workers = workers
        self.worker = worker
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> str:
        port = _free_port()
        # the database travels in the environment: a URL may hold a password, and a
        # command line is visible to every user of the machine
        cmd = [sys.executable, "-m", "remem.cli.main", "--json", "serve"]
        cmd += ["--host", "127.0.0.1", "--port", str(port)]
        if self.lexical:
            cmd.append("--lexical")
        if self.workers > 1:
            cmd += ["--workers", str(self.workers)]
        if not self.worker:
            cmd.append("--no-worker")
        env = {**os.environ, "REMEM_DB": self.db}
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )
        url = f"http://127.0.0.1:{port}"
        try:
            self._wait(url)
        except BaseException:
            self._stop()
            raise
        return url

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _wait(self, url: str) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + START_SECONDS
        while True:
            if self.proc.poll() is not None:
                raise RememError(f"the bench server exited: {self._tail()}")
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RememError(f"the bench server did not start in {START_SECONDS:.0f}s")
            time.sleep(0.05)

    def _stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def cpu_seconds(self) -> float | None:
        """The CPU time (user and system) the server's processes have spent so far: the
        one started and its children, read from /proc (None where there is none)."""
        return None if self.proc is None else local.tree_cpu_seconds(self.proc.pid)

    def _tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-2000:].strip() or "(no output)"
        except OSError:
            return "(no output)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- the load ------------------------------------------------------------------------------


Request = tuple[str, dict[str, Any]]


def _event(i: int, facts: list[str]) -> Request:
    body = {
        "actor_id": f"bench-{i % ACTORS}",
        "session_id": f"s{i % 3}",
        "role": "user",
        "text": facts[i % len(facts)],
        "event_id": f"bench-http-{i}",
    }
    return "/v1/events", body


def _retrieve(i: int) -> Request:
    body = {"actor_id": f"bench-{i % ACTORS}", "query": QUERIES[i % len(QUERIES)], "top_k": 10}
    return "/v1/memories/retrieve", body


def _measure(
    url: str,
    key: str,
    n: int,
    concurrency: int,
    make: Callable[[int], Request],
    server: BenchServer | None = None,
    postmaster: int | None = None,
) -> dict[str, Any]:
    """Send requests 0..n-1 from `concurrency` threads; latencies in ms, wall time, errors,
    and the CPU seconds the client (this process), the `server` and the PostgreSQL server
    whose `postmaster` pid is given spent meanwhile.

    Each thread holds one keep-alive HTTP/1.1 connection of the standard library's
    `http.client`: the client shares the machine's cores with the server, and costs a
    recall about 0.35 ms of CPU where httpx cost 1.0-1.5 ms (docs/benchmarks.md)."""
    workers = min(concurrency, n)
    where = urlsplit(url)
    host, port = where.hostname or "127.0.0.1", where.port or 80
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def worker(w: int) -> tuple[list[float], int]:
        times: list[float] = []
        errors = 0
        conn = http.client.HTTPConnection(host, port, timeout=60)
        try:
            for i in range(w, n, workers):
                path, body = make(i)
                data = json.dumps(body).encode()
                t0 = time.perf_counter()
                try:
                    conn.request("POST", path, body=data, headers=headers)
                    answer = conn.getresponse()
                    answer.read()
                    ok = answer.status < 300
                except (OSError, http.client.HTTPException):
                    ok = False
                    conn.close()  # the next request connects again
                times.append((time.perf_counter() - t0) * 1000)
                errors += not ok
        finally:
            conn.close()
        return times, errors

    client0, server0 = time.process_time(), server.cpu_seconds() if server else None
    db0 = None if postmaster is None else local.tree_cpu_seconds(postmaster)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bench-http") as pool:
        done = list(pool.map(worker, range(workers)))
    wall = time.perf_counter() - t0
    server1 = server.cpu_seconds() if server else None
    db1 = None if postmaster is None else local.tree_cpu_seconds(postmaster)
    latencies = [t for times, _ in done for t in times]
    return {"n": n, "wall_s": wall, "ms": latencies, "errors": sum(e for _, e in done),
            "client_cpu_s": time.process_time() - client0,
            "server_cpu_s": None if server0 is None or server1 is None else server1 - server0,
            "db_cpu_s": None if db0 is None or db1 is None else db1 - db0,
            "load": round(os.getloadavg()[0], 2)}  # fmt: skip


def _figures(name: str, run: dict[str, Any]) -> dict[str, Any]:
    ms = np.asarray(run["ms"])
    out = {
        f"{name}_per_s": round(run["n"] / run["wall_s"], 1),
        f"{name}_p50_ms": round(float(np.percentile(ms, 50)), 2),
        f"{name}_p95_ms": round(float(np.percentile(ms, 95)), 2),
        f"{name}_client_cpu_ms": round(run["client_cpu_s"] * 1000 / run["n"], 2),
        f"{name}_load_1m": run["load"],
    }
    if run.get("server_cpu_s") is not None:
        out[f"{name}_server_cpu_ms"] = round(run["server_cpu_s"] * 1000 / run["n"], 2)
    if run.get("db_cpu_s") is not None:
        out[f"{name}_db_cpu_ms"] = round(run["db_cpu_s"] * 1000 / run["n"], 2)
    return out


def _line(name: str, run: dict[str, Any]) -> str:
    f = _figures(name, run)
    return (
        f"{name}: {run['n']} requests in {run['wall_s']:.2f}s, {f[name + '_per_s']}/s, "
        f"p50 {f[name + '_p50_ms']} ms, p95 {f[name + '_p95_ms']} ms, {run['errors']} errors"
    )
