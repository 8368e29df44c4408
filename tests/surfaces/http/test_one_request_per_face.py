"""One request value per operation, whatever the face: a mixed batch's item is checked
alike by the library and the service (one model, `remem.writes.batch.WriteItem`), and
the Client's `recall` takes `Memory.recall`'s keywords as the library does (one
signature, `remem.recall.request.Recalls`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem import Memory
from remem.errors import ConflictError, InvalidInput
from tests.support.servers import Server, running_server

# items that one face or the other might check apart: each is refused by both or by neither
ITEMS: list[dict[str, Any]] = [
    {"op": "create", "actor": "ann", "text": "Ann keeps bees"},
    {"op": "delete", "record_id": "rec_gone", "reason": ""},  # a blank reason: none
    {"op": "delete", "record_id": "rec_gone", "reason": "ticket 7"},
    {"op": "delete", "record_id": "rec_gone", "reason": "r" * 501},
    {"op": "update", "record_id": "rec_gone", "text": "x", "metadata": {"a": 1}},
    {"op": "create", "actor": "ann"},
    {"op": "create", "actor": "ann", "text": "Ann keeps bees", "valid_until": "2030-01-01"},
    {"op": "create", "actor": "ann", "text": "Ann keeps bees", "strategy": ""},
    {"op": "create", "actor": "ann", "text": "Ann keeps bees", "metadata": {"k": "v"}},
    {"op": "delete", "record_id": "rec_gone", "reason": "why", "text": "t"},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(str(tmp_path_factory.mktemp("faces") / "faces.db")) as running:
        yield running


def _library_takes(mem: Memory, item: dict[str, Any]) -> bool:
    try:
        mem.write_records([item])
    except InvalidInput:
        return False
    return True


def _service_takes(server: Server, item: dict[str, Any]) -> bool:
    wire = {("actor_id" if k == "actor" else k): v for k, v in item.items()}
    with server.http("admin") as h:
        answer = h.post("/v1/memories/batch", json={"records": [wire]})
    assert answer.status_code in (200, 422), answer.text
    return answer.status_code == 200


def test_a_batch_item_is_checked_alike_by_the_library_and_the_service(
    server: Server, tmp_path: Path
) -> None:
    with Memory.open(tmp_path / "lib.db", embedder=None) as mem:
        library = [_library_takes(mem, item) for item in ITEMS]
    service = [_service_takes(server, item) for item in ITEMS]
    assert library == service
    assert True in library and False in library  # the items tell the faces apart


def test_client_recall_takes_the_librarys_sources_text(server: Server, tmp_path: Path) -> None:
    client = server.client("admin")
    client.remember(actor="ben", text="Ben flies to Oslo on Friday")
    packet = client.recall(actor="ben", query="Oslo trip", sources="memory,documents")
    assert [it.text for it in packet.records] == ["Ben flies to Oslo on Friday"]
    assert packet.documents == ()


def test_remember_takes_one_signature_and_each_face_refuses_what_it_cannot_carry(
    server: Server, tmp_path: Path
) -> None:
    """`Memory` and `Client` share `remember`'s keywords (`remem.writes.request.Writes`):
    a `request_id` is the server's idempotency key, a `strategy` the library's
    provenance; each face says so, and writes nothing, for the one it cannot carry."""
    with Memory.open(tmp_path / "lib.db", embedder=None) as mem:
        with pytest.raises(InvalidInput, match="write_records"):
            mem.remember(actor="cal", text="Cal keeps bees", request_id="r1")
        assert mem.records(actor="cal") == []
        kept = mem.remember(actor="cal", text="Cal keeps bees", strategy="notes")
        assert kept.source.strategy == "notes"
    client = server.client("admin")
    with pytest.raises(InvalidInput, match="write_records"):
        client.remember(actor="cal", text="Cal keeps bees", strategy="notes")
    assert client.records(actor="cal") == []
    first = client.remember(actor="cal", text="Cal keeps bees", request_id="cal-1")
    again = client.remember(actor="cal", text="Cal keeps bees", request_id="cal-1")
    assert again.id == first.id and first.source.strategy == "explicit"
    with pytest.raises(ConflictError, match="other fields"):  # another write under its id
        client.remember(actor="cal", text="Cal keeps wasps", request_id="cal-1")
