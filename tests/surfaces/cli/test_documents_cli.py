"""`remem docs` and `remem recall --sources` through the CLI under --json, on SQLite and
PostgreSQL: documents go in, come back cited under their scope, change, are removed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import DATA
from tests.support.cli import err, ok


def test_docs_lifecycle_through_the_cli(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = Path(db) if "://" not in db else db  # a file, or a PostgreSQL URL (run str()s it)
    guide = tmp_path / "guide.md"
    guide.write_text("# Feeding\n\nQuokkas eat leaves at dusk.\n\n# Sleep\n\nThey nap by day.\n")
    added = ok(capsys, where, "docs", "add", str(guide), "--scope", "actor:alice")
    doc = added["documents"][0]["document"]
    assert added["documents"][0]["status"] == "added" and doc["chunks"] == 2
    again = ok(capsys, where, "docs", "add", str(guide), "--scope", "actor:alice")
    assert again["documents"][0]["status"] == "unchanged"
    guide.write_text("# Feeding\n\nQuokkas eat leaves at dusk.\n\n# Sleep\n\nThey nap in shade.\n")
    changed = ok(capsys, where, "docs", "add", str(guide), "--scope", "actor:alice")
    assert changed["documents"][0]["chunks"] == {"added": 1, "kept": 1, "removed": 1}
    listed = ok(capsys, where, "docs", "list")
    assert [d["id"] for d in listed["documents"]] == [doc["id"]]
    shown = ok(capsys, where, "docs", "show", doc["id"])
    assert shown["document"]["version"] == 2 and shown["chunks"][1]["text"] == "They nap in shade."
    packet = ok(capsys, where, "recall", "--actor", "alice", "--query", "what do quokkas eat",
                "--sources", "memory,documents")  # fmt: skip
    assert packet["documents"][0]["text"] == "Quokkas eat leaves at dusk."
    assert packet["documents"][0]["position"] == {"headings": ["Feeding"]}
    other = ok(capsys, where, "recall", "--actor", "bob", "--query", "what do quokkas eat",
               "--sources", "documents")  # fmt: skip
    assert other["documents"] == []
    plain = ok(capsys, where, "recall", "--actor", "alice", "--query", "quokkas")
    assert "documents" not in plain
    removed = ok(capsys, where, "docs", "remove", doc["id"])
    assert removed["verified"] is True and not any(removed["remaining"].values())
    assert ok(capsys, where, "docs", "list")["documents"] == []
    assert err(capsys, where, "docs", "show", doc["id"])["code"] == "not_found"


def test_docs_errors_are_clear_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "m.db"
    note = tmp_path / "n.txt"
    note.write_text("A note.")
    assert err(capsys, db, "docs", "add", str(note), "--scope", "team")["code"] == "invalid_input"
    missing = err(capsys, db, "docs", "add", str(tmp_path / "gone.txt"))
    assert "gone.txt" in missing["message"]
    bad = err(capsys, db, "recall", "--actor", "a", "--query", "q", "--sources", "web")
    assert bad["code"] == "invalid_input"
    secret = tmp_path / "s.txt"
    secret.write_text("Ops notes.\n\nThe api key: sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB\n")
    refused = err(capsys, db, "docs", "add", str(secret))
    assert refused["code"] == "refused_content" and "chunk 1 (the top" in refused["message"]
    assert ok(capsys, db, "docs", "list")["documents"] == []


def test_a_failed_file_among_several_says_which_were_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "m.db"
    first, bad, last = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "c.txt"
    first.write_text("The first note.")
    bad.write_text("Ops notes: sk-proj-abcdefghijklmnopqrstuvwxyz0123456789AB\n")
    last.write_text("The last note.")
    refused = err(capsys, db, "docs", "add", str(first), str(bad), str(last))
    assert refused["code"] == "refused_content"
    assert "b.txt" in refused["message"] and "sk-proj" not in refused["message"]
    assert f"stored before it: {str(first)!r}" in refused["message"]
    assert "not tried after it: 1" in refused["message"]
    assert [d["title"] for d in ok(capsys, db, "docs", "list")["documents"]] == ["a.txt"]


def test_eval_docs_reports_ndcg_and_recall_for_remem_and_the_baselines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = DATA / "beir-tiny"
    out = ok(capsys, tmp_path / "unused.db", "eval", "docs", str(data), "--k", "5,10",
             "--embedder", "hash")  # fmt: skip
    assert out["dataset"] == "beir-tiny" and out["corpus"] == 24 and out["queries"] == 12
    assert set(out["systems"]) == {"remem", "bm25", "dense"}
    for system in out["systems"].values():
        assert set(system) >= {"ndcg@10", "recall@5", "recall@10", "search_ms", "ingest_s"}
        assert 0.0 <= system["ndcg@10"] <= 1.0
    # BM25 misses the paraphrased question whose words appear in no entry ("smiling
    # marsupial on an island near Perth"); remem's chunks are found by their vectors too
    assert out["systems"]["bm25"]["recall@10"] < 1.0
    assert out["systems"]["remem"]["ndcg@10"] >= out["systems"]["bm25"]["ndcg@10"]
    bad = tmp_path / "bad"
    (bad / "qrels").mkdir(parents=True)
    (bad / "corpus.jsonl").write_text('{"_id": "d1"}\n')
    (bad / "queries.jsonl").write_text("")
    (bad / "qrels" / "test.tsv").write_text("")
    failed = err(capsys, tmp_path / "unused.db", "eval", "docs", str(bad))
    assert "corpus.jsonl:1" in failed["message"]


def test_ndcg_uses_graded_gains_and_a_log2_discount() -> None:
    from math import log2

    from remem.eval.docs import ndcg_at, recall_at

    grades = {"a": 2, "b": 1, "c": 0}
    assert ndcg_at(["a", "b"], grades) == 1.0
    assert ndcg_at(["b", "a"], grades) == (1 + 2 / log2(3)) / (2 + 1 / log2(3))
    assert recall_at(["c", "b"], grades, 1) == 0.0 and recall_at(["c", "b"], grades, 2) == 0.5
