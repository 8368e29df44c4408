"""Arguments of the wrong type or shape, on the library and the CLI, are remem's clear
errors, never a TypeError, a RecursionError traceback, a database error, or a write to
a database nobody named (found by a hardening run, 2026-12-06).

- `Memory.open` (and `--db`) of an empty name opened the default database; of a number,
  made a file named after it; of bytes or a NUL, said something about a directory.
- `recall(sources=5)` and `document_namespaces` of a number, None or a text; a record id
  that is a list; a strategy that is None or 10 MB long; a Memory used after `close`.
- Deep JSON in `--metadata` and in `erasures replay`'s file, a file that is not UTF-8,
  and deep TOML in `--config`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from remem import Memory
from remem.errors import InvalidInput, RememError, StoreError
from remem.store.open import default_db_path
from tests.support.cli import err, run

DEEP = 50_000


@pytest.fixture
def mem(tmp_path: Path) -> Any:
    with Memory.open(tmp_path / "m.db", embedder=None) as m:
        yield m


@pytest.mark.parametrize("name", ["", "   ", 5, b"/tmp/x.db", "/tmp/a\x00.db"])
def test_a_database_named_badly_is_refused_and_nothing_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: object
) -> None:
    monkeypatch.chdir(tmp_path)  # a file named "5" would land here
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    with pytest.raises(InvalidInput, match="database"):
        Memory.open(name)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []
    assert not default_db_path().exists()


def test_an_empty_db_option_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    code, data = run(capsys, "", "records", "list", "--actor", "a")
    assert code == 2 and data["error"]["code"] == "usage" and "empty" in data["error"]["message"]
    assert not default_db_path().exists()


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"sources": 5}, "sources"),
        ({"sources": ["memory", "documents"], "document_namespaces": 5}, "document_namespaces"),
        ({"sources": ["documents"], "document_namespaces": None}, "document_namespaces"),
        ({"sources": ["documents"], "document_namespaces": "travel"}, "document_namespaces"),
    ],
)
def test_recall_sources_and_namespaces_of_the_wrong_shape(
    mem: Memory, given: dict[str, Any], named: str
) -> None:
    with pytest.raises(InvalidInput, match=named):
        mem.recall(actor="ana", query="bees", **given)


@pytest.mark.parametrize("bad", [["r1"], {"id": "r1"}, 5])
def test_a_record_id_that_is_not_text(mem: Memory, bad: object) -> None:
    rec = mem.remember(actor="ana", text="Ana keeps bees")
    for call in (mem.forget, mem.get):
        with pytest.raises(InvalidInput, match="record_id"):
            call(record_id=bad)  # type: ignore[operator]
    assert mem.get(rec.id).text == "Ana keeps bees"


@pytest.mark.parametrize("bad", [None, "", "s" * 101, 5])
def test_a_strategy_must_be_a_short_name(mem: Memory, bad: object) -> None:
    with pytest.raises(InvalidInput, match="strategy"):
        mem.remember(actor="ana", text="Ana keeps bees", strategy=bad)  # type: ignore[arg-type]
    assert mem.records(actor="ana") == []


def test_a_closed_memory_says_so(tmp_path: Path) -> None:
    m = Memory.open(tmp_path / "c.db", embedder=None)
    m.remember(actor="ana", text="Ana keeps bees")
    m.close()
    for call in (lambda: m.recall(actor="ana", query="bees"),
                 lambda: m.remember(actor="ana", text="Ana keeps cats")):  # fmt: skip
        with pytest.raises(StoreError, match="closed"):
            call()


def test_deep_json_and_toml_and_bad_bytes_on_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "cli.db"
    deep = '{"a": ' + "[" * DEEP + "]" * DEEP + "}"
    got = err(capsys, db, "remember", "--actor", "al", "--text", "t", "--metadata", deep)
    assert got["code"] == "invalid_input" and "nests too deep" in got["message"]
    lines = tmp_path / "deep.jsonl"
    lines.write_text("[" * DEEP + "]" * DEEP + "\n")
    got = err(capsys, db, "erasures", "replay", str(lines))
    assert got["code"] == "invalid_input" and "line 1" in got["message"]
    raw = tmp_path / "latin1.jsonl"
    raw.write_bytes(b'{"tenant": "t\xe9"}\n')
    got = err(capsys, db, "erasures", "replay", str(raw))
    assert got["code"] == "invalid_input" and "utf-8" in got["message"].lower()
    toml = tmp_path / "deep.toml"
    toml.write_text("x = " + "[" * DEEP + "]" * DEEP + "\n")
    got = err(capsys, db, "--config", str(toml), "records", "list", "--actor", "al")
    assert got["code"] == "config_error" and "nests too deep" in got["message"]
    with pytest.raises(RememError, match="nests too deep"):
        Memory.open(tmp_path / "m2.db", embedder=None, config=toml)


def test_a_nul_in_a_document_parts_words_as_a_space_does(mem: Memory) -> None:
    """PostgreSQL cannot store a NUL, so a document's become spaces (they were dropped,
    and "alpha\\x00beta" was stored as one word nobody wrote)."""
    added = mem.add_document(text="alpha\x00beta gamma", title="nul")
    _, chunks = mem.get_document(added.document.id)
    assert [c.text for c in chunks] == ["alpha beta gamma"]
