"""`remem eval docs`: document retrieval on a BEIR-layout directory, with baselines.

The directory holds BEIR's files (https://github.com/beir-cellar/beir):

    corpus.jsonl       {"_id", "title", "text"} per line
    queries.jsonl      {"_id", "text"} per line
    qrels/test.tsv     query-id <TAB> corpus-id <TAB> score, after a header line

so a user can point it at their own corpus. Three systems rank the corpus for
each judged query, in the same run:

- `remem`: every corpus entry added as a document (tenant scope) to a fresh
  SQLite file through `remem.documents.flows.add` (parsed, chunked, indexed in
  FTS5 and the vectors), searched through `flows.search`; a document ranks
  where its best chunk does;
- `bm25`: Okapi BM25 over whole entries (`remem.eval.baselines.BM25Index`);
- `dense`: cosine of whole entries' vectors, from the same embedder remem uses.

Reported per system: nDCG@10 (graded gains from the qrels, log2 discount) and
recall@k for each k, the mean over the judged queries, and search p50/p95.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from remem.documents import flows
from remem.embed.base import Embedder
from remem.errors import InvalidInput
from remem.eval.baselines import BM25Index
from remem.eval.locomo import MAX_DATASET_BYTES, SMALLER
from remem.eval.metrics import latency
from remem.files import read_text
from remem.memory.memory import Memory
from remem.policy.scope import operator


@dataclass(frozen=True, slots=True)
class BeirSet:
    """A BEIR-layout retrieval set: corpus, queries, and graded judgements (qrels)."""

    name: str
    corpus: dict[str, tuple[str, str]]  # id -> (title, text)
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]  # query id -> corpus id -> grade


def load_beir(path: str | Path, split: str = "test") -> BeirSet:
    """Read a BEIR directory; InvalidInput naming the file and line of a bad row."""
    root = Path(path)
    corpus = {r["_id"]: (r.get("title") or "", r["text"])
              for r in _jsonl(root / "corpus.jsonl", ("_id", "text"))}  # fmt: skip
    queries = {r["_id"]: r["text"] for r in _jsonl(root / "queries.jsonl", ("_id", "text"))}
    qrels: dict[str, dict[str, int]] = {}
    tsv = root / "qrels" / f"{split}.tsv"
    lines = read_text(tsv, MAX_DATASET_BYTES, "an evaluation set", SMALLER).splitlines()
    for n, line in enumerate(lines, start=1):
        parts = line.split("\t")
        if n == 1 and not parts[-1].strip().lstrip("-").isdigit():
            continue  # the header
        if len(parts) != 3 or not parts[2].strip().lstrip("-").isdigit():
            raise InvalidInput(f"{tsv}:{n}: expected query-id, corpus-id, score")
        qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    qrels = {q: docs for q, docs in qrels.items() if q in queries}
    if not corpus or not qrels:
        raise InvalidInput(f"{root}: no corpus entries or no judged queries")
    return BeirSet(root.name, corpus, queries, qrels)


def _jsonl(path: Path, required: Sequence[str]) -> list[dict[str, Any]]:
    lines = read_text(path, MAX_DATASET_BYTES, "an evaluation set", SMALLER).splitlines()
    rows: list[dict[str, Any]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise InvalidInput(f"{path}:{n}: not JSON") from None
        if not isinstance(row, dict) or any(not isinstance(row.get(k), str) for k in required):
            raise InvalidInput(f"{path}:{n}: needs string fields {', '.join(required)}")
        rows.append(row)
    return rows


def ndcg_at(ranked: Sequence[str], grades: dict[str, int], k: int = 10) -> float:
    """nDCG@k with gain = grade and a log2(rank + 1) discount (as BEIR's pytrec_eval)."""
    dcg = sum(grades.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: Sequence[str], grades: dict[str, int], k: int) -> float:
    """The share of the relevant entries (grade > 0) in the top k."""
    relevant = {d for d, g in grades.items() if g > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def run_docs(
    path: str | Path, ks: Sequence[int], embedder: Embedder | None, split: str = "test"
) -> dict[str, Any]:
    """The three systems on one BEIR set: metrics, latency, ingest time, notes."""
    data = load_beir(path, split)
    depth = max([10, *ks])
    ids = list(data.corpus)
    texts = [f"{t}\n\n{x}" if t else x for t, x in (data.corpus[i] for i in ids)]
    rankings: dict[str, dict[str, list[str]]] = {}
    timings: dict[str, list[float]] = {}
    ingest: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="remem-eval-docs-") as tmp:
        with Memory.open(Path(tmp) / "docs.db", tenant="eval", embedder=embedder) as mem:
            start = time.perf_counter()
            for cid, text in zip(ids, texts, strict=True):
                title = data.corpus[cid][0] or cid
                flows.add(mem.deps, operator("eval"), data=text, title=title[:500],
                          source_uri=f"beir:{cid}", format="text")  # fmt: skip
            ingest["remem"] = time.perf_counter() - start
            by_uri = {d.id: (d.source_uri or "")[5:] for d in mem.list_documents(limit=10_000)}
            rankings["remem"], timings["remem"] = {}, []
            for qid in data.qrels:
                t0 = time.perf_counter()
                hits = flows.search(mem.deps, operator("eval"), query=data.queries[qid],
                                    k=min(1000, 3 * depth))  # fmt: skip
                timings["remem"].append((time.perf_counter() - t0) * 1000)
                ranked = list(dict.fromkeys(by_uri[h.document_id] for h in hits))
                rankings["remem"][qid] = ranked[:depth]
    start = time.perf_counter()
    bm25 = BM25Index(texts)
    ingest["bm25"] = time.perf_counter() - start
    rankings["bm25"], timings["bm25"] = {}, []
    for qid in data.qrels:
        t0 = time.perf_counter()
        rankings["bm25"][qid] = [ids[i] for i in bm25.rank(data.queries[qid], depth)]
        timings["bm25"].append((time.perf_counter() - t0) * 1000)
    notes: list[str] = []
    if embedder is not None:
        start = time.perf_counter()
        matrix = embedder.embed(texts)
        ingest["dense"] = time.perf_counter() - start
        rankings["dense"], timings["dense"] = {}, []
        for qid in data.qrels:
            t0 = time.perf_counter()
            cos = matrix @ embedder.embed([data.queries[qid]])[0]
            order = np.argsort(-cos, kind="stable")[:depth]
            rankings["dense"][qid] = [ids[int(i)] for i in order]
            timings["dense"].append((time.perf_counter() - t0) * 1000)
    else:
        notes.append("no embedder: remem is lexical only and the dense baseline is left out")
    systems = {
        name: {
            "ndcg@10": round(_mean(ndcg_at(r[q], data.qrels[q]) for q in data.qrels), 4),
            **{
                f"recall@{k}": round(
                    _mean(recall_at(r[q], data.qrels[q], k) for q in data.qrels), 4
                )
                for k in ks
            },
            "search_ms": latency(timings[name]),
            "ingest_s": round(ingest[name], 3),
        }
        for name, r in rankings.items()
    }
    return {
        "dataset": data.name,
        "corpus": len(data.corpus),
        "queries": len(data.qrels),
        "ks": list(ks),
        "embedder": embedder.name if embedder is not None else None,
        "systems": systems,
        "notes": notes,
    }


def _mean(values: Any) -> float:
    listed = list(values)
    return sum(listed) / len(listed) if listed else 0.0


def table(result: dict[str, Any], console: Any) -> None:
    """The systems side by side, for a person."""
    from rich.table import Table

    title = (f"remem eval docs: {result['dataset']} ({result['corpus']} entries, "
             f"{result['queries']} queries, embedder {result['embedder']})")  # fmt: skip
    t = Table(title=title)
    metrics = ["ndcg@10", *[f"recall@{k}" for k in result["ks"]]]
    t.add_column("system")
    for m in [*metrics, "search p50 ms", "ingest s"]:
        t.add_column(m, justify="right")
    for name, s in result["systems"].items():
        t.add_row(name, *[f"{s[m]:.3f}" for m in metrics], f"{s['search_ms']['p50_ms']:.1f}",
                  f"{s['ingest_s']:.2f}")  # fmt: skip
    console.print(t)
    for note in result["notes"]:
        console.print(f"note: {note}")
