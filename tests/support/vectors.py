"""Large scopes of vectors: written straight to a SQLite store (`write_ann`), a scope
above `APPROX_MIN` built once per module and copied per test (the `built` and `db`
fixtures, imported where used), and random unit vectors loaded into PostgreSQL."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.model import Authority, Kind, Record, Sensitivity, Source, Status
from remem.policy.scope import namespace_for
from remem.store.postgres.store import PostgresStore
from remem.store.roles import Scope, Write
from remem.store.sqlite.store import SQLiteStore
from remem.store.sqlite.vectors.index import APPROX_MIN
from tests.support.store import NOW, rec


def write_ann(mem: Memory, emb: HashEmbedder, texts: list[str]) -> None:
    """Store `texts` as ann's records `rec_big000000`, ... with their vectors, 5,000 a
    write (a scope large enough for the coarse pass, written without extraction)."""
    when = datetime(2026, 1, 1, tzinfo=UTC)
    for start in range(0, len(texts), 5000):
        chunk = texts[start : start + 5000]
        records = tuple(
            Record(
                id=f"rec_big{start + j:06d}", tenant=mem.tenant, actor="ann",
                namespace=namespace_for(mem.tenant, "ann", Kind.SEMANTIC),
                kind=Kind.SEMANTIC, text=t, source=Source("explicit", (), "t", "t"),
                authority=Authority.CONFIRMED, sensitivity=Sensitivity.NORMAL,
                valid_from=when, created_at=when, updated_at=when, status=Status.ACTIVE,
            )
            for j, t in enumerate(chunk)
        )  # fmt: skip
        vectors = tuple(emb.embed(chunk))
        mem.store.records.apply(
            Write(tenant=mem.tenant, inserts=records, vectors=vectors, vector_model=emb.name)
        )


TOTAL = APPROX_MIN + 300


SCOPE = Scope("default", "ann")


WORDS = ["rake", "hoe", "spade", "trowel", "ladder", "hose", "shears", "sieve"]


PICKS = [7, 4321, 12_345, TOTAL - 1]


def text_of(i: int) -> str:
    return f"{WORDS[i % 8]} {WORDS[i // 8 % 8]} {WORDS[i // 64 % 8]} item{i}"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database whose scope holds TOTAL records, bulk-loaded (its files written)."""
    db = tmp_path_factory.mktemp("codes") / "m.db"
    emb = HashEmbedder()
    with Memory.open(db, embedder=emb) as mem, mem.store.bulk_load():
        write_ann(mem, emb, [text_of(i) for i in range(TOTAL)])
    return db


@pytest.fixture
def db(built: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy of the built database (and its files) of this test's own."""
    for path in built.parent.iterdir():
        copy = tmp_path / path.name
        (shutil.copytree if path.is_dir() else shutil.copy2)(path, copy)
    yield tmp_path / built.name


def files(db: Path, suffix: str) -> list[Path]:
    return sorted(Path(str(db) + ".vectors").glob(f"*.{suffix}"))


def nearest(mem: Memory) -> list[list[tuple[str, float]]]:
    emb = HashEmbedder()
    return [mem.store.search.vector_search(SCOPE, emb.name, emb.embed([text_of(i)])[0], 5, NOW)
            for i in PICKS]  # fmt: skip


def held(mem: Memory) -> Any:
    assert isinstance(mem.store, SQLiteStore)
    return mem.store.search._vec_cache[("default", "ann", "records")].vectors


DIM = 32


MODEL = "test-32"


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def load(store: PostgresStore, actor: str, vectors: np.ndarray, batch: int = 500) -> list[str]:
    records = [rec(f"{actor}-{i}", f"fact {i}", actor=actor) for i in range(len(vectors))]
    for i in range(0, len(records), batch):
        store.records.apply(
            Write(tenant="t1", inserts=tuple(records[i : i + batch]),
                  vectors=tuple(vectors[i : i + batch]), vector_model=MODEL)
        )  # fmt: skip
    return [r.id for r in records]


def index_defs(dsn: str) -> dict[str, str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT indexname, indexdef FROM pg_indexes").fetchall()
    return {r[0]: r[1] for r in rows}
