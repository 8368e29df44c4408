"""`remem bench`: speed and scale on synthetic personal facts.

Records are short first-person facts made from templates and fillers. To keep
a million-record run within minutes, a pool of distinct facts is embedded
for real with the installed embedder and every record takes the text and
vector of one pool entry, the vector nudged by a little noise (cosine 0.9998
to the original) so that no two records share one, as no two real texts do:
a nearest-neighbour graph built from hundreds of identical copies of each
vector is a known pathology of HNSW indexes, which the PostgreSQL backend
uses. Recall then does exactly the work it does on real data (full-text
match, nearest vectors in the scope, fusion, packing), and each query is
embedded for real inside the timed call.

`compare=True` adds, measured in the same process over the same data, what
the machine's raw parts do (`baselines`: the embedder alone, embedding a query
as recall does (`embed_queries`), a numpy brute-force scan of the scope's
vectors, BM25 alone through the store's full-text query) and each recall
figure as a ratio to embedder + scan, plus the cold figures of a fresh
process (`cold_first_recall_ms`: its first recall once the embedder is
loaded; `cold_open_ms`: import, open and model load;
`cold_first_recall_after_add_ms`: the same after one record was added
by another process). `first_recall_after_add_ms` is the first recall in the
benchmark's process after it added one record. `run_sizes` repeats the whole
run at several sizes.
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from remem.cli.kit import warn_store
from remem.embed.base import Embedder, HashEmbedder, embed_queries
from remem.errors import InvalidInput
from remem.memory.memory import Memory, is_server_url
from remem.model import Authority, Kind, Record, Sensitivity, Source, Status
from remem.policy.scope import namespace_for
from remem.store.roles import Scope, Write

TEMPLATES = [
    "I prefer {seat} seats on long flights", "I can't stand {food}", "I love {food}",
    "My sister lives in {city}", "I moved to {city} last year", "I work as a {job}",
    "Our budget for the {thing} is ${n}", "My favourite colour is {color}",
    "I have a meeting with {name} on {day}", "My dog is called {name}",
    "I'm allergic to {food}", "I go {hobby} every {day}", "My partner {name} is a {job}",
    "I want to visit {city} in {month}", "My birthday is in {month}",
    "I started learning {lang} in {month}", "Remember that the {thing} costs ${n}",
    "I usually drink {drink} in the morning", "My manager {name} prefers {drink}",
    "We are planning a {thing} for {month}", "I'm training for a {hobby} race",
]  # fmt: skip
FILL = {
    "seat": ["aisle", "window", "exit-row", "front-row"],
    "food": ["cilantro", "pizza", "sushi", "peanuts", "olives", "mushrooms", "ramen", "tofu",
             "blue cheese", "oysters", "kimchi", "falafel"],
    "city": ["Lisbon", "Porto", "Berlin", "Kyoto", "Osaka", "Austin", "Nairobi", "Lima",
             "Oslo", "Hanoi", "Seville", "Montreal", "Dublin", "Prague"],
    "job": ["nurse", "teacher", "data engineer", "architect", "chef", "pilot", "lawyer"],
    "thing": ["trip", "wedding", "kitchen renovation", "conference", "new laptop", "party"],
    "color": ["green", "teal", "orange", "navy blue", "yellow"],
    "name": ["Sam", "Priya", "Tomás", "Mei", "Olu", "Anna", "Kenji", "Rosa", "Luca"],
    "day": ["Monday", "Tuesday", "Friday", "Saturday", "Sunday"],
    "hobby": ["running", "climbing", "swimming", "cycling", "hiking"],
    "month": ["January", "March", "April", "June", "September", "November"],
    "lang": ["Japanese", "Portuguese", "German", "Korean"],
    "drink": ["green tea", "espresso", "oat latte", "black coffee"],
}  # fmt: skip
QUERIES = [
    "which seat should I book", "food allergies", "where does my sister live",
    "what is the trip budget", "favourite colour", "meeting on Friday", "what's my job",
    "when is my birthday", "which languages am I learning", "morning drink",
    "travel plans for April", "what is my dog's name", "upcoming race",
]  # fmt: skip

Progress = Callable[[str], None]


def synthetic_facts(count: int, seed: int = 7) -> list[str]:
    """`count` distinct short first-person facts (fewer if templates run out)."""
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    tries = 0
    while len(seen) < count and tries < count * 20:
        tries += 1
        template = rng.choice(TEMPLATES)
        text = template.format(
            **{k: rng.choice(v) for k, v in FILL.items()}, n=rng.randrange(50, 5000, 50)
        )
        seen[text] = None
    return list(seen)


def run_bench(
    *,
    db: str | None,
    records: int,
    scope: int | None,
    queries: int,
    events: int,
    progress: bool = True,
    embedder: Embedder | None = None,
    compare: bool = False,
) -> dict[str, Any]:
    """Build a synthetic database and measure it; return the figures.

    With `compare`, also the baselines, ratios and cold figures described in
    the module's docstring.
    """
    say: Progress = (lambda m: print(m, file=sys.stderr)) if progress else (lambda m: None)
    scope_n = min(records, scope or 100_000)
    with tempfile.TemporaryDirectory(prefix="remem-bench-") as tmp:
        target = db or str(Path(tmp) / "bench.db")
        server = is_server_url(target)
        if not server and _sqlite_path(target).exists():
            raise InvalidInput(f"{target} exists; bench builds a fresh database, name a new file")
        with Memory.open(target, embedder=embedder) if embedder else Memory.open(target) as mem:
            if server:
                warn_store(mem.store)
                _refuse_used(mem)
            emb = mem.embedder or HashEmbedder()
            say(f"embedder: {emb.name}")
            figures: dict[str, Any] = {"records": records, "scope_records": scope_n}
            figures["embedder"] = emb.name
            scan: list[Any] = []
            figures.update(_load(mem, emb, records, scope_n, say, scan))
            figures.update(_recall(mem, queries, say))
            figures["first_recall_after_add_ms"] = _recall_after_add(mem, emb, "in process")
            if compare:
                figures["baselines"] = _baselines(mem, emb, np.vstack(scan), queries, say)
                figures["ratios"] = _ratios(figures)
            figures.update(_ingest(mem, events, say))
            figures.update(_extract(mem, say))
            size = _server_size(mem) if server else _file_size(_sqlite_path(target))
        figures["cold_recall_s"] = _cold_recall(target)
        if compare:
            figures.update(_cold_first_recall(target))
            with Memory.open(target, embedder=embedder) if embedder else Memory.open(target) as mem:
                _add_one(mem, mem.embedder or HashEmbedder(), "a fresh process")
            after = _cold_first_recall(target)["cold_first_recall_ms"]
            figures["cold_first_recall_after_add_ms"] = after
        figures["db_size_mb"] = round(size / 2**20, 1)
        files = _sqlite_path(target).parent / (_sqlite_path(target).name + ".vectors")
        vec_bytes = 0 if server else sum(p.stat().st_size for p in files.glob("*.*"))
        figures["vector_files_mb"] = round(vec_bytes / 2**20, 1)
        figures["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return figures


def run_sizes(sizes: list[int], *, db: str | None, **kw: Any) -> dict[str, Any]:
    """`run_bench` once per size (records = scope = that size, up to `scope`)."""
    if db is not None and len(sizes) > 1:
        raise InvalidInput("--sizes builds one fresh database per size; leave out --db")
    if not sizes or any(n < 100 for n in sizes):
        raise InvalidInput("--sizes takes record counts of at least 100, e.g. 10000,100000")
    return {"sizes": [run_bench(db=db, records=n, **kw) for n in sizes]}


def _sqlite_path(target: str) -> Path:
    return Path(target.removeprefix("sqlite:///"))


def _file_size(path: Path) -> int:
    """The bytes of a SQLite database with its WAL and shared-memory files."""
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def _refuse_used(mem: Memory) -> None:
    """Bench fills the database it is given: refuse one that already holds data."""
    held = mem.store.stats()
    if held["records"] or held["events"]:
        raise InvalidInput(
            f"the database named by --db already holds {held['records']} records and "
            f"{held['events']} events; bench builds its own data, name an empty database"
        )


def _server_size(mem: Memory) -> int:
    """The bytes of a server database (`pg_database_size`), tables and indexes included."""
    from remem.store.postgres.store import PostgresStore

    assert isinstance(mem.store, PostgresStore)  # is_server_url: Memory.open opened PostgreSQL
    return mem.store.database_size()


def _load(
    mem: Memory, emb: Embedder, total: int, scope_n: int, say: Progress, scan: list[Any]
) -> dict[str, Any]:
    pool = synthetic_facts(min(5000, total))
    t0 = time.perf_counter()
    vectors = np.vstack([emb.embed(pool[i : i + 256]) for i in range(0, len(pool), 256)])
    embed_s = time.perf_counter() - t0
    say(f"embedded {len(pool)} distinct facts in {embed_s:.1f}s")
    t0 = time.perf_counter()
    with mem.store.bulk_load():  # on PostgreSQL: the HNSW index is built once, at the end
        _insert(mem, emb, total, scope_n, pool, vectors, say, scan)
    load_s = time.perf_counter() - t0
    say(f"loaded {total} records in {load_s:.1f}s (indexes included)")
    return {"load_records_per_s": round(total / load_s)}


def _insert(
    mem: Memory, emb: Embedder, total: int, scope_n: int, pool: list[str], vectors: Any,
    say: Progress, scan: list[Any],
) -> None:  # fmt: skip
    rng = np.random.default_rng(11)
    noise = np.random.default_rng(13)
    base = datetime(2025, 1, 1, tzinfo=UTC)
    batch: list[Record] = []
    vecs: list[Any] = []
    for i in range(total):
        actor = "bench-main" if i < scope_n else f"user-{(i - scope_n) // 100}"
        j = int(rng.integers(len(pool)))
        when = base + timedelta(minutes=i)
        batch.append(
            Record(
                id=f"rec_b{i:09d}", tenant=mem.tenant, actor=actor,
                namespace=namespace_for(mem.tenant, actor, Kind.SEMANTIC), kind=Kind.SEMANTIC,
                text=pool[j], source=Source("explicit", (), "bench", "bench"),
                authority=Authority.CONFIRMED, sensitivity=Sensitivity.NORMAL,
                valid_from=when, created_at=when, updated_at=when, status=Status.ACTIVE,
            )
        )  # fmt: skip
        vecs.append(vectors[j])
        if len(batch) == 5000 or i == total - 1:
            nudged = _nudge(np.vstack(vecs), noise)
            in_scope = max(0, min(len(batch), scope_n - (i + 1 - len(batch))))
            # the scope's vectors as stored (float16), for the brute-force baseline
            scan.append(nudged[:in_scope].astype(np.float16).astype(np.float32))
            mem.store.records.apply(
                Write(tenant=mem.tenant, inserts=tuple(batch), vectors=tuple(nudged),
                      vector_model=emb.name)
            )  # fmt: skip
            batch, vecs = [], []
            if (i + 1) % 100_000 == 0:
                say(f"loaded {i + 1} records")


def _nudge(vectors: Any, rng: np.random.Generator, size: float = 0.02) -> Any:
    """Unit vectors moved by random noise of about `size` in length."""
    moved = vectors + rng.standard_normal(vectors.shape) * (size / np.sqrt(vectors.shape[1]))
    return (moved / np.linalg.norm(moved, axis=1, keepdims=True)).astype(np.float32)


def _recall(mem: Memory, n: int, say: Progress) -> dict[str, Any]:
    t0 = time.perf_counter()
    mem.recall(actor="bench-main", query="warm up the scope", k=10)
    first_ms = (time.perf_counter() - t0) * 1000
    times = []
    for i in range(n):
        q = QUERIES[i % len(QUERIES)] + ("" if i < len(QUERIES) else f" {i}")
        t0 = time.perf_counter()
        mem.recall(actor="bench-main", query=q, k=10, budget=500)
        times.append((time.perf_counter() - t0) * 1000)
    say(f"recall p50 {np.percentile(times, 50):.1f} ms, p95 {np.percentile(times, 95):.1f} ms")
    return {
        "recall_p50_ms": round(float(np.percentile(times, 50)), 2),
        "recall_p95_ms": round(float(np.percentile(times, 95)), 2),
        "first_recall_ms": round(first_ms, 1),
    }


def _add_one(mem: Memory, emb: Embedder, who: str) -> None:
    """Add one record to the benchmark's scope (as a write between two recalls does)."""
    when = datetime(2026, 6, 1, tzinfo=UTC)
    text = f"I keep the spare key for {who} under the third flowerpot"
    rec = Record(
        id=f"rec_badd{time.time_ns()}", tenant=mem.tenant, actor="bench-main",
        namespace=namespace_for(mem.tenant, "bench-main", Kind.SEMANTIC), kind=Kind.SEMANTIC,
        text=text, source=Source("explicit", (), "bench", "bench"),
        authority=Authority.CONFIRMED, sensitivity=Sensitivity.NORMAL,
        valid_from=when, created_at=when, updated_at=when, status=Status.ACTIVE,
    )  # fmt: skip
    vec = emb.embed([text])[0]
    mem.store.records.apply(
        Write(tenant=mem.tenant, inserts=(rec,), vectors=(vec,), vector_model=emb.name)
    )


def _recall_after_add(mem: Memory, emb: Embedder, who: str) -> float:
    """The first recall after one record joined the scope: the scope's vectors catch up."""
    _add_one(mem, emb, who)
    t0 = time.perf_counter()
    mem.recall(actor="bench-main", query="where is the spare key", k=10)
    return round((time.perf_counter() - t0) * 1000, 1)


def _query(i: int) -> str:
    return QUERIES[i % len(QUERIES)] + f" {i} baseline"  # never repeated: no query cache


def _pcts(times: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(float(np.percentile(times, 50)), 3),
        "p95_ms": round(float(np.percentile(times, 95)), 3),
    }


def _baselines(
    mem: Memory, emb: Embedder, matrix: Any, n: int, say: Progress
) -> dict[str, dict[str, float]]:
    """The machine's raw parts on the same data: embedder, numpy scan, BM25 alone."""
    embed_t, scan_t, bm25_t = [], [], []
    scope = Scope(mem.tenant, "bench-main")
    for i in range(n):
        t0 = time.perf_counter()
        vec = embed_queries(emb, [_query(i)])[0]  # as recall embeds it
        t1 = time.perf_counter()
        scores = matrix @ vec
        top = np.argpartition(-scores, min(10, len(scores) - 1))[:10]
        top[np.argsort(-scores[top])]
        t2 = time.perf_counter()
        mem.store.search.search_records(scope, _query(i), 100)
        t3 = time.perf_counter()
        embed_t.append((t1 - t0) * 1000)
        scan_t.append((t2 - t1) * 1000)
        bm25_t.append((t3 - t2) * 1000)
    out = {"embed": _pcts(embed_t), "numpy_scan": _pcts(scan_t), "bm25": _pcts(bm25_t)}
    say(f"baselines: {json.dumps(out)}")
    return out


def _ratios(figures: dict[str, Any]) -> dict[str, float]:
    """Each recall figure over what embedding the query and scanning the vectors cost."""
    base = figures["baselines"]
    floor50 = base["embed"]["p50_ms"] + base["numpy_scan"]["p50_ms"]
    floor95 = base["embed"]["p95_ms"] + base["numpy_scan"]["p95_ms"]
    return {
        "recall_p50_to_embed_plus_scan": round(figures["recall_p50_ms"] / floor50, 2),
        "recall_p95_to_embed_plus_scan": round(figures["recall_p95_ms"] / floor95, 2),
        "first_recall_to_embed_plus_scan": round(figures["first_recall_ms"] / floor50, 2),
    }


_COLD_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from remem.memory.memory import Memory
mem = Memory.open(sys.argv[1])
if mem.embedder is not None:
    mem.embedder.embed(["load the model"])
t1 = time.perf_counter()
mem.recall(actor="bench-main", query="which seat should I book", k=10)
t2 = time.perf_counter()
print(json.dumps({"cold_open_ms": (t1 - t0) * 1000, "cold_first_recall_ms": (t2 - t1) * 1000}))
"""


def _cold_first_recall(target: str) -> dict[str, float]:
    """A fresh process's first recall (its embedder already loaded), and its start-up."""
    done = subprocess.run(
        [sys.executable, "-c", _COLD_CHILD, target], check=True, capture_output=True, text=True
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return {k: round(float(v), 1) for k, v in found.items()}


def _ingest(mem: Memory, n: int, say: Progress) -> dict[str, Any]:
    facts = synthetic_facts(2000, seed=3)
    base = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [
        {"actor": f"ingest-{i % 50}", "session": f"s{i % 7}", "role": "user",
         "text": facts[i % len(facts)], "time": base + timedelta(seconds=i),
         "event_id": f"bench-ev-{i}"}
        for i in range(n)
    ]  # fmt: skip
    t0 = time.perf_counter()
    for i in range(0, n, 500):
        mem.add_events(rows[i : i + 500])
    secs = time.perf_counter() - t0
    say(f"add_event: {n} events in {secs:.2f}s (batches of 500, each committed durably)")
    return {"add_event_per_s": round(n / secs)}


def _extract(mem: Memory, say: Progress) -> dict[str, Any]:
    t0 = time.perf_counter()
    result = mem.process(limit=2000)
    secs = time.perf_counter() - t0
    done = result.jobs_done + result.failed
    say(f"extract: {done} events in {secs:.2f}s ({result.as_dict()})")
    return {"extract_per_s": round(done / secs, 1) if secs > 0 else 0.0}


def _cold_recall(target: str) -> float:
    cmd = [sys.executable, "-m", "remem.cli.main", "--db", target, "recall",
           "--actor", "bench-main", "--query", "which seat should I book", "--json"]  # fmt: skip
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return round(time.perf_counter() - t0, 3)
