"""`remem serve --workers 2`: two server processes on one database (SQLite file or
PostgreSQL), under concurrent writes and recalls.

Both processes answer (each spends CPU on requests); every record written through
either is listed afterwards, and found by recall (its vectors, written by one
process, are read by the other); the same query answers the same packet from
whichever process takes it; events are extracted by the one worker of the
supervising process, though no server process runs one."""

from __future__ import annotations

import contextlib
import http.client
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import httpx
import pytest

from remem.embed.base import default_embedder
from remem.service import accept
from remem.service.accept import ENV
from tests.support.metrics import parse_samples, sample
from tests.support.processes import free_port
from tests.support.servers import event_body, key_for, serve_processes

# how long a request may wait: what is tested here is that nothing is lost and the
# answers agree, not speed; on two cores shared by busy test workers a batch-create
# waited past httpx's default of 5 s (httpx.ReadTimeout)
WAIT = 60.0
_post = partial(httpx.post, timeout=WAIT)
_get = partial(httpx.get, timeout=WAIT)
WRITERS = 6
RECORDS_EACH = 12
PEOPLE = ["Sam", "Priya", "Tomás", "Mei", "Olu", "Anna", "Kenji", "Rosa", "Luca", "Ivo", "Noor"]
THINGS = ["violin", "kayak", "telescope", "sourdough starter", "chess set", "bonsai tree",
          "typewriter", "drone", "sewing machine", "espresso grinder", "canoe", "harp"]  # fmt: skip
PLACES = ["Lisbon", "Kyoto", "Oslo", "Lima", "Hanoi", "Nairobi", "Quito", "Tbilisi"]


def _note(w: int, i: int) -> str:
    """A statement of its own for every (writer, item): no two alike enough to merge."""
    n = w * RECORDS_EACH + i
    return (
        f"{PEOPLE[n % len(PEOPLE)]} lent me a {THINGS[(n // 2) % len(THINGS)]} "
        f"in {PLACES[(n // 3) % len(PLACES)]}, in year {1900 + n}"
    )


pytestmark = pytest.mark.skipif(default_embedder() is None, reason="needs the MiniLM model")


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _servers(pid: int) -> list[int]:
    """The server processes of a supervising `remem serve` (uvicorn's spawned children;
    the multiprocessing resource tracker is not one)."""
    kids = _children(pid)
    return [k for k in kids if b"spawn_main" in Path(f"/proc/{k}/cmdline").read_bytes()]


def _ids(packet: dict[str, object]) -> list[str]:
    return [r["id"] for r in packet["records"]]  # type: ignore[index,union-attr]


def test_two_processes_lose_nothing_and_answer_alike(db: str, tmp_path: Path) -> None:
    key = key_for(db, role="agent")
    headers = {"Authorization": f"Bearer {key}"}
    with serve_processes(db, 2, log=tmp_path / "serve.log") as (url, pid):
        servers = _servers(pid)
        assert len(servers) == 2, servers
        before = {k: _cpu_ticks(k) for k in servers}

        def write(w: int) -> list[str]:
            made = []
            for i in range(RECORDS_EACH):  # a new connection each: either process may take it
                item = {"actor_id": f"a{w % 2}", "text": _note(w, i), "kind": "episodic"}
                body = {"records": [item]}
                r = _post(f"{url}/v1/memories/batch-create", json=body, headers=headers)
                assert r.status_code == 200, r.text
                made += [item["record"]["id"] for item in r.json()["results"]]
                got = _post(
                    f"{url}/v1/memories/retrieve",
                    json={"actor_id": f"a{w % 2}", "query": "who lent me something"},
                    headers=headers,
                )
                assert got.status_code == 200, got.text
            return made

        with ThreadPoolExecutor(WRITERS) as pool:
            written = [rid for ids in pool.map(write, range(WRITERS)) for rid in ids]
        assert len(set(written)) == WRITERS * RECORDS_EACH

        listed: set[str] = set()
        for actor in ("a0", "a1"):
            r = _get(f"{url}/v1/memories", params={"actor_id": actor}, headers=headers)
            listed |= {rec["id"] for rec in r.json()["records"]}
        assert set(written) <= listed, "records written through the two processes were lost"

        def ask(_: int) -> list[str]:
            body = {"actor_id": "a0", "query": "who lent me a telescope", "top_k": 5}
            r = _post(f"{url}/v1/memories/retrieve", json=body, headers=headers)
            assert r.status_code == 200, r.text
            return _ids(r.json())

        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(ask, range(40)))
        assert answers[0] and all(a == answers[0] for a in answers), answers
        assert all(_cpu_ticks(k) > before[k] for k in servers), "one process answered alone"

        # extraction: the supervising process's worker; the server processes run none
        event = event_body("a1", "I live in Faro.")
        r = _post(f"{url}/v1/events", json=event, headers=headers)
        assert r.status_code in (200, 201), r.text
        deadline = time.monotonic() + 60
        while True:
            jobs = _get(f"{url}/v1/jobs", headers=headers).json()
            if jobs.get("done") and not jobs.get("pending") and not jobs.get("running"):
                break
            assert time.monotonic() < deadline, jobs
            time.sleep(0.2)


def test_metrics_count_the_requests_of_every_process(db: str, tmp_path: Path) -> None:
    """Each scrape, whichever process answers it, counts every process's requests; the
    --metrics-port listener (the supervising process) too, and the extraction its worker
    ran. A tenant's scrape shows no other tenant's requests."""
    admin = {"Authorization": f"Bearer {key_for(db, role='admin')}"}
    other = {"Authorization": f"Bearer {key_for(db, tenant='globex', role='admin')}"}
    port = free_port()
    args = ["--metrics-port", str(port)]
    asks = 30
    with serve_processes(db, 2, log=tmp_path / "serve.log", args=args) as (url, pid):
        servers = _servers(pid)
        before = {k: _cpu_ticks(k) for k in servers}

        def ask(i: int) -> int:  # a new connection each: either process may take it
            body = {"actor_id": "a0", "query": f"who lent me a kayak {i}"}
            return _post(f"{url}/v1/memories/retrieve", json=body, headers=admin).status_code

        with ThreadPoolExecutor(4) as pool:
            assert set(pool.map(ask, range(asks))) == {200}
        assert _post(f"{url}/v1/events", json=event_body("a1", "I live in Faro."),
                          headers=admin).status_code == 201  # fmt: skip
        deadline = time.monotonic() + 60
        # done, not only taken: a job the worker is running is no longer pending, and
        # its count is made when it ends
        while not _get(f"{url}/v1/jobs", headers=admin).json().get("done"):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert all(_cpu_ticks(k) > before[k] for k in servers), "one process answered alone"

        retrieved = {"method": "POST", "route": "/v1/memories/retrieve", "status": "200"}
        counts = []
        for _ in range(6):  # new connections: both processes answer some scrapes
            got = _get(f"{url}/metrics", headers=admin)
            assert got.status_code == 200, got.text
            counts.append(sample(parse_samples(got.text), "remem_http_requests_total", **retrieved))
        assert counts == [asks] * 6, counts
        theirs = parse_samples(_get(f"{url}/metrics", headers=other).text)
        assert sample(theirs, "remem_http_requests_total", **retrieved) == 0
        whole = parse_samples(_get(f"http://127.0.0.1:{port}/").text)
        assert sample(whole, "remem_http_requests_total", **retrieved) == asks
        assert "remem_tenant" not in _get(f"http://127.0.0.1:{port}/").text
        done = [
            v for (name, labels), v in whole.items()
            if name == "remem_extraction_jobs_processed_total" and ("outcome", "done") in labels
        ]  # fmt: skip
        assert sum(done) >= 1, "the supervising process's extraction was not counted"


def _established(pid: int, port: int) -> int:
    """How many established TCP connections to `port` process `pid` holds open."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    held = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                if local_port == port and fields[3] == "01" and fields[9] in inodes:
                    held += 1
    return held


def _wait_until_each_beats(servers: list[int]) -> None:
    """Wait until every server process's loop runs: each has a fresh heartbeat in the
    connection-count file its environment names (`remem.service.accept`)."""
    env = dict(
        item.split(b"=", 1)
        for item in Path(f"/proc/{servers[0]}/environ").read_bytes().split(b"\0")
        if b"=" in item
    )
    slots = Path(env[ENV.encode()].decode())  # read, never claimed: this is no server
    deadline = time.monotonic() + WAIT
    while True:
        fresh = accept._now_ms() - int(accept.STALE * 1000)
        table = accept._SLOT.iter_unpack(slots.read_bytes())
        beating = {pid for pid, _, beat in table if beat > fresh}
        if set(servers) <= beating:
            return
        assert time.monotonic() < deadline, "a server process never started its loop"
        time.sleep(0.05)


def test_keep_alive_connections_opened_at_once_are_shared_evenly(db: str, tmp_path: Path) -> None:
    """A client that opens 8 keep-alive connections at once gets 4 on each process, not
    most on whichever woke first (8/0 and 7/1 were common): a process is bound by its
    interpreter lock, so an uneven share leaves a core idle (`remem.service.accept`)."""
    connections = 8
    with serve_processes(db, 2, log=tmp_path / "serve.log") as (url, pid):
        servers = _servers(pid)
        port = int(url.rsplit(":", 1)[1])
        _wait_until_each_beats(servers)  # a process still starting takes no connection
        opened = threading.Barrier(connections + 1)
        counted = threading.Event()

        def hold(_: int) -> int:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
            try:
                conn.request("GET", "/healthz")
                status = conn.getresponse()
                status.read()
                opened.wait(WAIT)
                counted.wait(WAIT)
                return status.status
            finally:
                conn.close()

        with ThreadPoolExecutor(connections) as pool:
            answered = pool.map(hold, range(connections))
            opened.wait(WAIT)
            shares = sorted(_established(k, port) for k in servers)
            counted.set()
            assert set(answered) == {200}
    assert sum(shares) == connections, shares
    assert shares[-1] - shares[0] <= 2, f"connections per process: {shares}"
