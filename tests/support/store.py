"""Values a store test writes (events, records, vectors at fixed times), and the faults
it makes: a file nothing may write, a server that must answer again, a database's bytes."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from remem.errors import StoreUnavailable
from remem.model import (
    Authority,
    Event,
    HistoryEntry,
    Kind,
    Record,
    Role,
    Sensitivity,
    Source,
)
from remem.store.roles import Store, Write

CLOCK_TIME = datetime(2031, 1, 2, 3, 4, 5, tzinfo=UTC)  # what `clocked_store`'s clock says


T = datetime(2026, 3, 1, tzinfo=UTC)


NOW = datetime(2026, 6, 1, tzinfo=UTC)


def ev(i: int, actor: str = "alice", text: str = "I like tea", tenant: str = "t1") -> Event:
    return Event(f"e{i}", tenant, actor, "s1", Role.USER, text, T + timedelta(minutes=i))


def rec(rid: str, text: str, actor: str = "alice", tenant: str = "t1", **kw: object) -> Record:
    fields: dict[str, object] = dict(
        id=rid, tenant=tenant, actor=actor, namespace=f"/tenants/{tenant}/actors/{actor}/facts",
        kind=Kind.SEMANTIC, text=text, source=Source("event", (f"src-{rid}",), "offline", "v1"),
        authority=Authority.INFERRED, sensitivity=Sensitivity.NORMAL, valid_from=T,
        created_at=NOW, updated_at=NOW,
    )  # fmt: skip
    fields.update(kw)
    return Record(**fields)  # type: ignore[arg-type]


def vec(seed: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def put(store: Store, *records: Record, vectors: bool = True) -> None:
    store.records.apply(
        Write(
            tenant=records[0].tenant,
            inserts=records,
            vectors=tuple(vec(i) for i in range(len(records))) if vectors else (),
            vector_model="test-8",
            history=tuple(HistoryEntry(r.id, "ADD", NOW, r.text, r.status) for r in records),
        )
    )


def immutable(path: Path) -> Callable[[], None]:
    """Make a file unwritable even to root (`chattr +i`), or by mode for anyone else;
    return how to undo it."""
    if os.geteuid() != 0:
        path.chmod(0o444)

        def writable() -> None:
            path.chmod(0o644)

        return writable
    if shutil.which("chattr") is None:  # pragma: no cover - every test machine has it
        pytest.skip("root cannot be kept from writing a file without chattr")
    subprocess.run(["chattr", "+i", str(path)], check=True)

    def mutable() -> None:
        subprocess.run(["chattr", "-i", str(path)], check=True)

    return mutable


def answering(store: Store) -> None:
    """Wait until the store answers again (a pool replaces connections the server cut);
    each failure on the way must already be remem's."""
    for _ in range(10):
        try:
            store.ping()
            return
        except StoreUnavailable:
            continue
    store.ping()


def files_bytes(db: str) -> bytes:
    """Every byte of a SQLite database: its file, WAL and shared memory (not vectors)."""
    return b"".join(
        p.read_bytes() for p in Path(db).parent.glob(Path(db).name + "*") if p.is_file()
    )
