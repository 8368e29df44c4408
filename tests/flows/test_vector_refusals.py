"""A text the embedder refuses does not stall the catch-up of vectors (`remem.memory.backfill`):
against a real scripted embeddings server on loopback that answers HTTP 400 for one text
(too long for its model), on both backends. The others of its batch and every later one
get their vectors; the refused text is set aside with the server's reason, said in the
packet, asked again only by another embedder (or another process), and found by its
words meanwhile. A transient failure (5xx) sets nothing aside, and a server that refuses
every text (a setting it does not take) sets nothing aside either."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from remem import Memory
from remem.embed.base import HashEmbedder, Vectors
from remem.embed.server import ServerEmbedder, ServerSettings
from remem.errors import InvalidInput
from remem.llm.retry import RetryPolicy
from remem.memory import backfill
from remem.memory.backfill import BATCH
from remem.testing.llm_server import Reply, ScriptedLLM
from tests.support.backends import both_backends
from tests.support.clock import Clock

FAST = RetryPolicy(attempts=2, base_seconds=0.001, max_seconds=0.002)


@pytest.fixture(autouse=True)
def unhurried_fill(monkeypatch: pytest.MonkeyPatch) -> None:
    """A recall's fill stops after `RECALL_SECONDS`; on a loaded machine the bisections
    here could take longer, and what these tests count would depend on the load. The
    bound is not what they test."""
    monkeypatch.setattr(backfill, "RECALL_SECONDS", 60.0)


DIM = 64
TOO_LONG = "input is too long for model fake-embed: 9000 tokens, at most 8192"
MARK = "zanzibar"  # the word the server refuses a text for


class Script:
    """What the scripted server does: refuse (400) any request holding a text with
    `MARK`, or every request (`refuse_all`), or fail (503) while `down`."""

    def __init__(self) -> None:
        self.down = False
        self.refuse_all = False
        self.long_context = False  # the model behind the server takes the long text now
        self.hash = HashEmbedder(DIM)

    def __call__(self, texts: list[str]) -> list[list[float]] | Reply:
        if self.down:
            return Reply.error(503, "overloaded")
        if self.refuse_all:
            return Reply.error(400, "dimensions is not supported by this model")
        if not self.long_context and any(MARK in t for t in texts):
            return Reply.error(400, TOO_LONG)
        return [[float(x) for x in row] for row in self.hash.embed(texts)]


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def server(script: Script) -> Iterator[ScriptedLLM]:
    with ScriptedLLM(embedder=script) as srv:
        yield srv


MADE: list[ServerEmbedder] = []  # an embedder given to a memory is the caller's to close


@pytest.fixture(autouse=True)
def _closed_embedders() -> Iterator[None]:
    yield
    while MADE:
        MADE.pop().close()  # not left to the collector: an unclosed socket fails a later test


def embedder(url: str) -> ServerEmbedder:
    made = ServerEmbedder(
        ServerSettings(url, "fake-embed", DIM, timeout=5.0, cooldown_seconds=0.0), FAST
    )
    MADE.append(made)
    return made


def asked(server: ScriptedLLM, word: str) -> int:
    """How many times a text holding `word` was sent."""
    return sum(word in t for batch in server.embedding_inputs for t in batch)


def waiting(mem: Memory) -> int:
    return mem.store.backfill.count_unembedded(mem.tenant, "ana")


@both_backends
def test_a_refused_text_does_not_keep_the_rest_of_its_batch_from_vectors(
    db_path: Path | str,
    clock: Clock,
    server: ScriptedLLM,
    script: Script,
    caplog: pytest.LogCaptureFixture,
) -> None:
    emb = embedder(server.base_url)
    with Memory.open(db_path, embedder=emb, clock=clock) as mem:
        script.down = True  # written while the server fails: vectors later, oldest first
        bad = mem.remember(actor="ana", text=f"Ana's {MARK} trip notes, pasted whole").id
        for text in ("Ana keeps bees", "Ana sings in a choir", "Ana grows tomatoes"):
            mem.remember(actor="ana", text=text)
        assert waiting(mem) == 4
        packet = mem.recall(actor="ana", query="bees")  # still failing: nothing set aside
        assert waiting(mem) == 4 and not any("refused" in n for n in packet.notes)
        script.down = False
        with caplog.at_level(logging.WARNING, logger="remem"):
            packet = mem.recall(actor="ana", query="bees", explain=True)
        assert f"record {bad} is set aside without a vector" in caplog.text
        assert "HTTP 400" in caplog.text and MARK not in caplog.text  # the reason, not the text
        assert waiting(mem) == 1, "the three the server takes have their vectors"
        assert packet.explain is not None and packet.explain["vector"]
        said = [n for n in packet.notes if "refused" in n]
        assert said and "HTTP 400" in said[0], packet.notes
        assert packet.explain["unembedded"] == 1
        assert packet.explain["refused"] == 1
        sent = asked(server, MARK)
        for _ in range(3):  # set aside: not asked again by this memory
            mem.recall(actor="ana", query="choir")
        assert asked(server, MARK) == sent
        packet = mem.recall(actor="ana", query=f"{MARK} trip")  # the query refused too
        assert any(MARK in r.text for r in packet.records), "found by its words"
    with Memory.open(db_path, embedder=embedder(server.base_url), clock=clock) as mem:
        mem.recall(actor="ana", query="tomatoes")  # another process asks once more
        assert asked(server, MARK) > sent and waiting(mem) == 1
        script.long_context = True  # the model behind the server takes it now
    with Memory.open(db_path, embedder=embedder(server.base_url), clock=clock) as mem:
        packet = mem.recall(actor="ana", query="tomatoes", explain=True)
        assert waiting(mem) == 0 and packet.explain is not None
        assert packet.explain["refused"] == 0


@both_backends
def test_more_refused_texts_than_a_batch_do_not_stall_the_texts_after_them(
    db_path: Path | str, clock: Clock, server: ScriptedLLM, script: Script
) -> None:
    emb = embedder(server.base_url)
    with Memory.open(db_path, embedder=emb, clock=clock) as mem:
        script.down = True
        for i in range(BATCH + 2):
            mem.remember(actor="ana", text=f"note {i} about {MARK} pasted whole")
        mem.remember(actor="ana", text="Ana's dentist is Dr Ruiz")
        mem.add_event(actor="ana", session="s1", role="user", text="I moved to Porto")
        mem.process()
        script.down = False
        mem.process()  # a worker's pass over everything waiting
        assert waiting(mem) == BATCH + 2, "only the refused ones wait"
        packet = mem.recall(actor="ana", query="dentist", explain=True)
        assert packet.explain is not None and packet.explain["refused"] == BATCH + 2
        sent = len(server.embedding_inputs)
        mem.process()
        mem.recall(actor="ana", query="dentist")
        assert len(server.embedding_inputs) == sent + 1, "only the query: none asked again"


@both_backends
def test_a_server_that_refuses_every_text_sets_nothing_aside(
    db_path: Path | str, clock: Clock, server: ScriptedLLM, script: Script
) -> None:
    emb = embedder(server.base_url)
    with Memory.open(db_path, embedder=emb, clock=clock) as mem:
        script.refuse_all = True  # e.g. a setting the model does not take: not the texts
        for text in ("Ana keeps bees", "Ana sings in a choir", "Ana grows tomatoes"):
            mem.remember(actor="ana", text=text)
        before = len(server.embedding_inputs)
        packet = mem.recall(actor="ana", query="bees", explain=True)
        assert packet.explain is not None and packet.explain["refused"] == 0
        assert len(server.embedding_inputs) - before <= 3, "a bounded pass, no bisection"
        script.refuse_all = False
        mem.recall(actor="ana", query="bees")
        assert waiting(mem) == 0


class Picky(HashEmbedder):
    """A local model that fails on any text holding `MARK` (as a model may on an input
    it cannot take), and counts how often it was handed one."""

    def __init__(self) -> None:
        super().__init__(DIM)
        self.refused = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        if any(MARK in t for t in texts):
            self.refused += 1
            raise ValueError("the model cannot take this input")
        return super().embed(texts)


@both_backends
def test_a_text_a_local_model_cannot_take_fails_no_write_and_no_job(
    db_path: Path | str, clock: Clock
) -> None:
    picky = Picky()
    with Memory.open(db_path, embedder=picky, clock=clock) as mem:
        mem.add_event(actor="ana", session="s1", role="user", text=f"I drink {MARK} tea daily")
        mem.add_event(actor="ana", session="s1", role="user", text="My sister is called Maria")
        assert mem.process().failed == 0
        assert [j.status for j in mem.jobs()] == ["done", "done"]
        rid = mem.remember(actor="ana", text=f"Ana's {MARK} trip is in May").id
        assert mem.get(rid).text == f"Ana's {MARK} trip is in May"
        mem.process()  # the late vectors: the refused texts are set aside, the rest filled
        left = mem.store.backfill.unembedded(mem.tenant, 100)
        texts = [r.text for _, r in left.records] + [e.text for e in left.events]
        assert texts and all(MARK in t for t in texts), texts
        asked = picky.refused
        mem.process()
        assert picky.refused == asked, "set aside: not handed to the model again"
        found = mem.recall(actor="ana", query="trip in May").records
        assert any(r.id == rid for r in found), "found by its words"


class Flaky(HashEmbedder):
    """A local model that fails once (as one may, out of memory for a moment), then
    embeds every text."""

    def __init__(self) -> None:
        super().__init__(DIM)
        self.failures = 1

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("the model ran out of memory")
        return super().embed(texts)


@both_backends
def test_a_write_a_local_model_failed_gets_its_vector_at_the_next_recall(
    db_path: Path | str, clock: Clock
) -> None:
    with Memory.open(db_path, embedder=Flaky(), clock=clock) as mem:
        mem.remember(actor="ana", text="Ana's trip to Lisbon is in May")
        assert waiting(mem) == 1  # the write went on without its vector
        packet = mem.recall(actor="ana", query="trip in May", explain=True)
        assert waiting(mem) == 0, "filled in before the recall, as a server's would be"
        assert packet.explain is not None and packet.explain["vector"]


@both_backends
def test_an_erased_text_set_aside_is_not_named_in_later_packets(
    db_path: Path | str, clock: Clock, server: ScriptedLLM, script: Script
) -> None:
    with Memory.open(db_path, embedder=embedder(server.base_url), clock=clock) as mem:
        script.down = True
        bad = mem.remember(actor="ana", text=f"Ana's {MARK} trip notes, pasted whole").id
        script.down = False
        packet = mem.recall(actor="ana", query="trip", explain=True)
        assert packet.explain is not None and packet.explain["refused"] == 1  # set aside
        assert mem.forget(record_id=bad).verified
        script.down = True  # another text waits: the packet says what of the actor waits
        mem.remember(actor="ana", text="Ana keeps bees")
        packet = mem.recall(actor="ana", query="bees", explain=True)
        assert packet.explain is not None and packet.explain["unembedded"] == 1
        assert not any(bad in n for n in packet.notes), packet.notes
        assert packet.explain["refused"] == 0


class Tampered(HashEmbedder):
    """A local model whose file fails its check (`tampered`), as the packaged MiniLM's
    does when first used (`remem.embed.minilm.packaged.check_file`): remem's own error,
    saying what to do, not a failure on one input; or, before, one down for a moment."""

    def __init__(self) -> None:
        super().__init__(DIM)
        self.down, self.tampered = False, False

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.tampered:
            raise InvalidInput("model.onnx has sha256 0000, not 1234 (changed): reinstall it")
        if self.down:
            raise RuntimeError("the model ran out of memory")
        return super().embed(texts)


@both_backends
def test_an_embedder_that_says_what_to_fix_fails_the_write_and_the_catch_up(
    db_path: Path | str, clock: Clock
) -> None:
    model = Tampered()
    with Memory.open(db_path, embedder=model, clock=clock) as mem:
        model.down = True
        mem.remember(actor="ana", text="Ana keeps bees")  # goes on without its vector
        model.tampered = True
        with pytest.raises(InvalidInput, match="reinstall it"):
            mem.remember(actor="ana", text="Ana's trip to Lisbon is in May")
        with pytest.raises(InvalidInput, match="reinstall it"):
            mem.process()  # the catch-up of the first one's vector says so too
        assert waiting(mem) == 1


def test_a_service_keeps_one_bounded_set_of_refusals_for_every_tenant(tmp_path: Path) -> None:
    """The service's memories (one per tenant) and its worker's share one `Refusals`, so
    its bounds hold for the process, not per tenant (`remem.memory.refusals`)."""
    from remem.memory.refusals import MAX_HELD
    from remem.service.http import create_app

    app = create_app(tmp_path / "service.db", embedder=HashEmbedder(DIM), worker=False)
    svc = app.state.service
    try:
        svc.start_worker()
        worker = svc.worker_memory
        assert worker is not None
        mems = [svc.memory(f"tenant-{i}") for i in range(3)]
        for i, mem in enumerate(mems):
            mem.deps.refused.of(mem.tenant, "hash").add("record", f"r-{i}", "alice", "too long")
        assert worker.deps.refused.held() == 3
        assert worker.deps.refused.of("tenant-2", "hash").has("record", "r-2")
        assert worker.deps.refused.most == MAX_HELD
    finally:
        svc.stop_worker()
        svc.store.close()
