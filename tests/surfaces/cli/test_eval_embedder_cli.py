"""`remem eval locomo|prefeval|everyday --embedder NAME|PATH|URL` (issue 36 item 4): a
built-in name, a sentence-transformers folder, or an embeddings server's URL with its
settings in the fragment, run against a scripted server on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.cli.main import main
from remem.testing.llm_server import ScriptedLLM
from tests.support import DATA
from tests.support.bert import tiny_bert

RUNS = {
    "everyday": ["everyday", str(DATA / "everyday-tiny.json"), "--k", "3"],
    "locomo": ["locomo", str(DATA / "locomo-tiny.json"), "--limit-questions", "1"],
    "prefeval": ["prefeval", str(DATA / "prefeval-tiny.json"), "--per-actor", "2",
                 "--limit-questions", "1"],
}  # fmt: skip


@pytest.fixture
def server() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as srv:
        yield srv


def evaluate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main(["eval", *args, "--json"])
    out = capsys.readouterr().out.strip()
    return code, json.loads(out.splitlines()[-1]) if out else {}


def embedder_of(result: dict[str, object]) -> object:
    config = result.get("config")
    return config.get("embedder") if isinstance(config, dict) else None


@pytest.mark.parametrize("bench", sorted(RUNS))
def test_an_embeddings_server_url_is_an_embedder(
    capsys: pytest.CaptureFixture[str], server: ScriptedLLM, bench: str
) -> None:
    url = f"{server.base_url}#model=fake-embed&dimensions=64"
    code, result = evaluate(capsys, *RUNS[bench], "--embedder", url)
    assert code == 0, result
    if bench != "prefeval":  # prefeval's result names no embedder
        assert embedder_of(result) == "server:fake-embed"
    assert server.embedding_inputs, "the server embedded the turns"


def test_a_url_without_dimensions_asks_the_server_once(
    capsys: pytest.CaptureFixture[str], server: ScriptedLLM
) -> None:
    code, result = evaluate(
        capsys, *RUNS["everyday"], "--embedder", f"{server.base_url}#model=fake-embed"
    )
    assert code == 0 and embedder_of(result) == "server:fake-embed"
    assert server.embedding_inputs[0] == ["dimensions"]


def test_a_folder_is_an_embedder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("safetensors")
    folder = tiny_bert(tmp_path / "tiny-bert")
    code, result = evaluate(capsys, *RUNS["everyday"], "--embedder", str(folder))
    assert code == 0 and embedder_of(result) == "folder:tiny-bert"


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("/no/such/folder", "none of default, minilm"),
        ("http://127.0.0.1:9/v1", "name the embeddings server's model"),
        ("http://127.0.0.1:9/v1#model=m&key=sk-1", "fragment names 'key'"),
    ],
)
def test_an_embedder_that_is_none_of_these_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], spec: str, said: str
) -> None:
    code = main(["eval", *RUNS["everyday"], "--embedder", spec, "--json"])
    captured = capsys.readouterr()
    assert code != 0
    assert said in captured.out + captured.err
