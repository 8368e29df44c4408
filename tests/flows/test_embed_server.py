"""An OpenAI-compatible embeddings server as the embedder (issue 36 item 2), against a
real scripted server on loopback (`ScriptedLLM`'s /v1/embeddings), on both backends:
its outages never lose an event or a record, the vectors catch up, and recall says
it is lexical only meanwhile."""

from __future__ import annotations

import gc
import hashlib
import logging
import math
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem import Memory
from remem.embed.server import ServerEmbedder, ServerSettings
from remem.llm.retry import RetryPolicy
from remem.store.roles import VectorModel
from remem.testing.llm_server import Reply, ScriptedLLM
from tests.support.backends import both_backends
from tests.support.clock import Clock

FAST = RetryPolicy(attempts=3, base_seconds=0.01, max_seconds=0.02)
DIM = 64  # ScriptedLLM's default vectors: HashEmbedder(64)
KEY_ENV = "REMEM_TEST_EMBED_KEY"
KEY = "sk-embed-7f3a9c1e5b2d4f6a8c0e"


@pytest.fixture
def server() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as srv:
        yield srv


MADE: list[ServerEmbedder] = []  # closed after each test: an embedder given is the caller's


@pytest.fixture(autouse=True)
def _close_made_embedders() -> Iterator[None]:
    yield
    while MADE:
        MADE.pop().close()


def embedder(url: str, **kw: object) -> ServerEmbedder:
    settings: dict[str, object] = {"cooldown_seconds": 0.0, "timeout": 2.0, **kw}
    made = ServerEmbedder(ServerSettings(url, "fake-embed", DIM, **settings), FAST)  # type: ignore[arg-type]
    MADE.append(made)
    return made


def open_mem(db: Path | str, emb: ServerEmbedder, clock: Clock) -> Memory:
    return Memory.open(db, embedder=emb, clock=clock)


def lexical_note(notes: tuple[str, ...]) -> bool:
    return any("lexical only" in n for n in notes)


def ingest(mem: Memory) -> None:
    mem.add_event(actor="ana", session="s1", role="user", text="I adopted a beagle named Biscuit")
    mem.remember(actor="ana", text="Ana is allergic to shellfish")
    mem.add_document(text="The vet opens at eight on Saturdays.", title="vet hours")
    mem.process()


@both_backends
def test_a_server_down_at_ingest_loses_nothing_and_vectors_catch_up(
    db_path: Path | str, clock: Clock
) -> None:
    with ScriptedLLM() as srv:
        url, port = srv.base_url, int(srv.base_url.split(":")[2].split("/")[0])
    # nothing listens on `url` now: every call is refused
    with open_mem(db_path, embedder(url), clock) as mem:
        ingest(mem)
        assert mem.store.backfill.count_unembedded("default", "ana") >= 2  # written, vectors later
        assert len(mem.store.documents.unembedded("default", 10)) == 1
        packet = mem.recall(actor="ana", query="beagle Biscuit")
        assert lexical_note(packet.notes), packet.notes
        assert any("written while the embedder could not embed" in n for n in packet.notes)
        texts = [r.text for r in packet.records]
        assert any("Biscuit" in t for t in texts)  # found by its words
        explained = mem.recall(actor="ana", query="shellfish allergy", explain=True).explain
        assert explained is not None and explained["unembedded"] >= 2
        with ScriptedLLM(port=port) as back:  # the server is back on the same address
            packet = mem.recall(actor="ana", query="beagle Biscuit", explain=True)
            assert not lexical_note(packet.notes), packet.notes
            assert packet.explain is not None and packet.explain["unembedded"] == 0
            assert mem.store.backfill.count_unembedded("default", "ana") == 0
            assert mem.store.documents.unembedded("default", 10) == []
            sent = [t for batch in back.embedding_inputs for t in batch]
            assert "The vet opens at eight on Saturdays." in sent
            assert "Ana is allergic to shellfish" in sent
            assert "I adopted a beagle named Biscuit" in sent
            assert packet.explain["vector"], "the vector search finds the records now"
        models = mem.store.records.vector_models("default")
        assert models == [VectorModel("server:fake-embed", DIM, models[0].fingerprint)]


@both_backends
def test_5xx_answers_are_retried_and_the_vectors_stored(
    db_path: Path | str, clock: Clock, server: ScriptedLLM
) -> None:
    emb = embedder(server.base_url)
    with open_mem(db_path, emb, clock) as mem:
        server.script_embeddings(Reply.error(500), Reply.error(503, headers={"Retry-After": "0"}))
        mem.remember(actor="ana", text="Ana's passport expires in March")
        assert emb.requests == 3  # two failures, then the answer
        assert mem.store.backfill.count_unembedded("default", "ana") == 0
        packet = mem.recall(actor="ana", query="passport", explain=True)
        assert not lexical_note(packet.notes)
        assert packet.explain is not None and packet.explain["vector"]


@both_backends
def test_a_server_slower_than_the_timeout_leaves_the_write_lexical_then_filled(
    db_path: Path | str, clock: Clock, server: ScriptedLLM
) -> None:
    emb = embedder(server.base_url, timeout=0.3)
    with open_mem(db_path, emb, clock) as mem:
        slow = Reply.slow(2.0, Reply.vectors([[1.0] * DIM]))
        server.script_embeddings(slow, slow, slow)  # every attempt of the write times out
        rid = mem.remember(actor="ana", text="Ana prefers window seats").id
        assert mem.get(rid).text == "Ana prefers window seats"
        assert emb.requests == FAST.attempts
        assert mem.store.backfill.count_unembedded("default", "ana") == 1
        packet = mem.recall(actor="ana", query="window seats")  # the server answers now
        assert mem.store.backfill.count_unembedded("default", "ana") == 0
        assert [r.id for r in packet.records] == [rid]


@both_backends
@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (Reply.vectors([[0.5] * (DIM - 1)]), "63 dimensions where [embed] dimensions says 64"),
        (Reply.vectors([[0.5] * DIM, [0.5] * DIM]), "sent 2 vector(s) for 1 text(s)"),
        (Reply.vectors([[math.nan] * DIM]), "not a usable vector"),
        (Reply.body({"detail": "wrong server"}), "has no `data` list"),
        (Reply.body(b"<html>proxy</html>"), "not JSON"),
    ],
)
def test_an_answer_of_the_wrong_shape_is_refused_and_the_write_goes_on(
    db_path: Path | str,
    clock: Clock,
    server: ScriptedLLM,
    answer: Reply,
    said: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    emb = embedder(server.base_url)
    with open_mem(db_path, emb, clock) as mem:
        server.script_embeddings(answer)
        with caplog.at_level(logging.WARNING, logger="remem.embed"):
            rid = mem.remember(actor="ana", text="Ana runs on Tuesdays").id
        assert said in caplog.text
        assert emb.requests == 1  # a bad answer is not asked again at once
        assert mem.store.backfill.count_unembedded("default", "ana") == 1
        assert mem.get(rid).text == "Ana runs on Tuesdays"
        mem.recall(actor="ana", query="running")  # the next answers are good
        assert mem.store.backfill.count_unembedded("default", "ana") == 0


@both_backends
def test_a_recall_while_the_server_is_down_is_lexical_and_says_why(
    db_path: Path | str, clock: Clock, server: ScriptedLLM
) -> None:
    emb = embedder(server.base_url, cooldown_seconds=60.0)
    with open_mem(db_path, emb, clock) as mem:
        mem.remember(actor="ana", text="Ana's gym closes at ten")
        server.script_embeddings(*[Reply.error(502)] * FAST.attempts)
        packet = mem.recall(actor="ana", query="gym hours")
        assert lexical_note(packet.notes)
        assert any("HTTP 502" in n for n in packet.notes), packet.notes
        assert [r.text for r in packet.records] == ["Ana's gym closes at ten"]
        asked = emb.requests
        packet = mem.recall(actor="ana", query="gym")  # down: not asked again meanwhile
        assert emb.requests == asked and lexical_note(packet.notes)


def test_the_key_is_sent_as_a_bearer_from_the_environment_and_never_stored(
    tmp_path: Path, clock: Clock, server: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    config = tmp_path / "remem.toml"
    config.write_text(
        f'[embed]\nbase_url = "{server.base_url}"\nmodel = "fake-embed"\ndimensions = {DIM}\n'
        f'api_key_env = "{KEY_ENV}"\n'
    )
    db = tmp_path / "memory.db"
    with Memory.open(db, config=config, clock=clock) as mem:
        assert isinstance(mem.embedder, ServerEmbedder)
        ingest(mem)
        mem.recall(actor="ana", query="dog")
        assert KEY not in repr(mem.embedder) and KEY not in str(mem.config.as_dict())
    assert server.bearer_sha256 == hashlib.sha256(KEY.encode()).hexdigest()
    for path in tmp_path.iterdir():  # the database, its WAL and vector files
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path.name


@pytest.mark.parametrize("how", ["url", "config"])
def test_closing_a_memory_closes_the_connections_of_the_embedder_it_made(
    tmp_path: Path, clock: Clock, server: ScriptedLLM, how: str
) -> None:
    """An embedder that Memory made (from a URL or from [embed]) is Memory's to close:
    left open, its pooled socket is closed by the garbage collector, with a
    ResourceWarning, in whatever code runs then."""
    config = tmp_path / "remem.toml"
    config.write_text(
        f'[embed]\nbase_url = "{server.base_url}"\nmodel = "fake-embed"\ndimensions = {DIM}\n'
    )
    given: dict[str, object] = (
        {"embedder": f"{server.base_url}#model=fake-embed"} if how == "url" else {"config": config}
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        mem = Memory.open(tmp_path / "m.db", clock=clock, **given)  # type: ignore[arg-type]
        with mem:
            mem.remember(actor="ana", text="Ana walks to work")
            assert server.embedding_inputs  # a connection was opened
        del mem
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_a_secret_in_a_query_never_reaches_the_server(
    tmp_path: Path, clock: Clock, server: ScriptedLLM
) -> None:
    with open_mem(tmp_path / "m.db", embedder(server.base_url), clock) as mem:
        mem.remember(actor="ana", text="Ana banks with Acme")
        mem.recall(actor="ana", query="my password is hunter2-Xq9!zz what bank?")
    sent = " ".join(t for batch in server.embedding_inputs for t in batch)
    assert "hunter2-Xq9!zz" not in sent and "[REDACTED:password]" in sent


def test_a_huge_answer_is_refused_without_reading_it_whole(
    monkeypatch: pytest.MonkeyPatch, server: ScriptedLLM
) -> None:
    from remem.embed import server as module
    from remem.errors import EmbedderBadOutput

    monkeypatch.setattr(module, "MAX_RESPONSE_BYTES", 10_000)
    server.script_embeddings(Reply.vectors([[0.25] * 5000]))  # about 30 kB
    with pytest.raises(EmbedderBadOutput, match="over 10000 bytes"):
        embedder(server.base_url, timeout=5.0).embed(["x"])


def test_batches_are_capped_and_come_back_in_order(server: ScriptedLLM) -> None:
    emb = embedder(server.base_url, batch_size=3)
    texts = [f"text number {i}" for i in range(8)]
    out = emb.embed(texts)
    assert [len(b) for b in server.embedding_inputs] == [3, 3, 2]
    assert out.shape == (8, DIM)
    one = embedder(server.base_url).embed([texts[5]])
    assert float(out[5] @ one[0]) == pytest.approx(1.0, abs=1e-6)


def test_a_refusal_is_not_retried(server: ScriptedLLM) -> None:
    from remem.errors import EmbedderRefused

    emb = embedder(server.base_url)
    server.script_embeddings(Reply.error(401, "bad key"))
    with pytest.raises(EmbedderRefused, match="HTTP 401"):
        emb.embed(["x"])
    assert emb.requests == 1


def test_no_key_variable_set_sends_no_real_key(server: ScriptedLLM) -> None:
    os.environ.pop(KEY_ENV, None)
    embedder(server.base_url, api_key_env=KEY_ENV).embed(["x"])
    assert server.bearer_sha256 == hashlib.sha256(b"unused").hexdigest()
