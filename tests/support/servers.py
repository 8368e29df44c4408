"""The HTTP service on a real uvicorn on loopback: `running_server` with keys of three
tenants, an app served for one key, API keys made straight in the store, and
`serve_processes`: a real `remem serve --workers N` in a child process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import uvicorn
from fastapi import FastAPI

from remem.embed import HashEmbedder
from remem.embed.base import Embedder
from remem.memory.memory import open_store
from remem.service import keys as keyring
from remem.service.client import Client
from remem.service.http import create_app
from remem.store.sqlite.store import SQLiteStore
from tests.support.processes import free_port, stop

MAX_BODY = 64 * 1024


@dataclass
class Server:
    url: str
    db: str  # the database's file path or PostgreSQL URL
    keys: dict[str, str]
    clients: dict[str, Client] = field(default_factory=dict)

    def http(self, key: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[key]}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def client(self, key: str) -> Client:
        """One Client per key, closed when the server stops."""
        if key not in self.clients:
            self.clients[key] = Client(self.url, self.keys[key])
        return self.clients[key]


@contextmanager
def running_server(db: str, embedder: Embedder | None = None) -> Iterator[Server]:
    """`create_app` on the database `db` names, served by uvicorn on a free loopback port,
    with keys of three tenants (one of them revoked); `embedder` (default a `HashEmbedder`)
    is the server's."""
    store = open_store(db)
    made = {
        "admin": keyring.create_key(store.keys, tenant="acme", role="admin"),
        "agent": keyring.create_key(store.keys, tenant="acme"),
        "alice": keyring.create_key(store.keys, tenant="acme", actor="alice"),
        "reviewer": keyring.create_key(store.keys, tenant="acme", role="reviewer"),
        "globex": keyring.create_key(store.keys, tenant="globex", role="admin"),
        "revoked": keyring.create_key(store.keys, tenant="acme", role="admin"),
        "fuzz": keyring.create_key(store.keys, tenant="fuzz", role="admin"),
    }
    keyring.revoke_key(store.keys, made["revoked"][0].id)
    store.close()
    embedder = HashEmbedder() if embedder is None else embedder
    app = create_app(db, max_body_bytes=MAX_BODY, embedder=embedder)
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", ws="none", http="h11"
    )
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    running = Server(f"http://127.0.0.1:{port}", db, {k: v[1] for k, v in made.items()})
    try:
        yield running
    finally:
        for c in running.clients.values():
            c.close()
        srv.should_exit = True
        thread.join(timeout=30)


def event_body(actor: str, text: str, **kw: object) -> dict[str, object]:
    return {"actor_id": actor, "session_id": "s1", "role": "user", "text": text, **kw}


ANA_EVENT = {"actor_id": "ana", "session_id": "s1", "role": "user", "text": "I live in Faro."}


def ana_keys(db: Path) -> dict[str, str]:
    store = SQLiteStore(db)
    made = {
        "admin": keyring.create_key(store.keys, tenant="acme", role="admin")[1],
        "agent": keyring.create_key(store.keys, tenant="acme")[1],
        "ana": keyring.create_key(store.keys, tenant="acme", actor="ana", role="admin")[1],
    }
    store.close()
    return made


@contextmanager
def serving(app: FastAPI, key: str) -> Iterator[httpx.Client]:
    srv = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning")
    )
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not srv.started:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        port = srv.config.port
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers) as h:
            yield h
    finally:
        srv.should_exit = True
        thread.join(timeout=30)


def key_for(db: str, tenant: str = "acme", **kw: str) -> str:
    """A new API key's secret (an admin key for the whole tenant unless `kw` says else)."""
    store = open_store(db)
    try:
        return keyring.create_key(store.keys, tenant=tenant, **({"role": "admin"} | kw))[1]
    finally:
        store.close()


@contextmanager
def serve_processes(
    db: str, workers: int, *, log: Path, args: Sequence[str] = ()
) -> Iterator[tuple[str, int]]:
    """`remem serve --workers N` on the database `db` names (with the default embedder),
    on a free loopback port, with more `args`: its URL and the supervising process's pid,
    once it answers /healthz; stopped on exit. Its output goes to `log`."""
    port = free_port()
    cmd = [sys.executable, "-m", "remem.cli.main", "serve", "--port", str(port)]
    cmd += ["--workers", str(workers), *args]
    env = {**os.environ, "REMEM_DB": db, "HF_HUB_OFFLINE": "1"}
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "remem serve --workers did not start"
            time.sleep(0.1)
        yield url, proc.pid
    finally:
        stop(proc)
