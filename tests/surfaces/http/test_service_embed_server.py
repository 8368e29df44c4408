"""The HTTP service with an embeddings server as its embedder (issue 36 item 2), on
both backends: while the server is down, events are taken and recall answers by words
and says so; once it is back, the service's worker fills in the vectors (its recalls
only read)."""

from __future__ import annotations

import time

from remem.embed.server import ServerEmbedder, ServerSettings
from remem.llm.retry import RetryPolicy
from remem.testing.llm_server import ScriptedLLM
from tests.support.servers import event_body, running_server

FAST = RetryPolicy(attempts=2, base_seconds=0.01, max_seconds=0.02)


def _retrieve(h: object, query: str) -> dict[str, object]:
    body = {"query": query, "actor_id": "ana", "explain": True}
    response = h.post("/v1/memories/retrieve", json=body)  # type: ignore[attr-defined]
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_events_are_taken_while_the_server_is_down_and_embedded_once_it_is_back(
    db: str,
) -> None:
    with ScriptedLLM() as probe:
        url, port = probe.base_url, int(probe.base_url.split(":")[2].split("/")[0])
    emb = ServerEmbedder(ServerSettings(url, "fake-embed", 64, cooldown_seconds=0), FAST)
    try:
        with running_server(db, embedder=emb) as srv, srv.http("admin") as h:
            first = h.post("/v1/events", json=event_body("ana", "I keep bees on the roof"))
            assert first.status_code == 201, first.text
            deadline = time.monotonic() + 30
            while h.get("/v1/jobs").json()["done"] < 1:  # the worker runs the job meanwhile
                assert time.monotonic() < deadline, "the worker did not run the jobs"
                time.sleep(0.05)
            packet = _retrieve(h, "bees on the roof")
            notes = " ".join(str(n) for n in packet["notes"])  # type: ignore[union-attr]
            assert "lexical only" in notes and "written while the embedder could not embed" in notes
            assert any("bees" in r["text"] for r in packet["records"])  # type: ignore[union-attr, index]
            with ScriptedLLM(port=port) as back:
                h.post("/v1/events", json=event_body("ana", "The hive is doing well"))
                deadline = time.monotonic() + 30
                while True:  # the worker's next claim fills the vectors in
                    packet = _retrieve(h, "bees on the roof")
                    if packet["explain"]["unembedded"] == 0:  # type: ignore[index]
                        break
                    assert time.monotonic() < deadline, packet["notes"]
                    time.sleep(0.1)
                assert not any("lexical only" in str(n) for n in packet["notes"])  # type: ignore[union-attr]
                sent = [t for batch in back.embedding_inputs for t in batch]
                assert "I keep bees on the roof" in sent
    finally:
        emb.close()  # a given embedder is the caller's to close
