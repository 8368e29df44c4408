"""`remem.writes.request.Writes`: `remember` and `import_events` written once for `Memory`
and `Client`, each building one request value for its face's `ask_*`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from remem.model import Kind, Record, Sensitivity
from remem.writes.events import ImportResult
from remem.writes.request import EXPLICIT, ImportAsk, RememberAsk, Writes


class Recorded(Writes):
    """A face that keeps the requests it is handed instead of writing them."""

    def __init__(self) -> None:
        self.asked: list[RememberAsk | ImportAsk] = []

    def ask_remember(self, request: RememberAsk) -> Record:
        self.asked.append(request)
        return None  # type: ignore[return-value]  # the request is what is looked at

    def ask_import(self, request: ImportAsk) -> ImportResult:
        self.asked.append(request)
        return ImportResult(0, 0)


def test_remember_hands_one_request_with_its_defaults() -> None:
    face = Recorded()
    face.remember(actor="ann", text="Ann keeps bees")
    assert face.asked == [RememberAsk(actor="ann", text="Ann keeps bees")]
    (asked,) = face.asked
    assert isinstance(asked, RememberAsk)
    assert (asked.kind, asked.sensitivity, asked.strategy) == (
        Kind.SEMANTIC,
        Sensitivity.NORMAL,
        EXPLICIT,
    )
    assert asked.request_id is None and asked.namespace is None and asked.metadata is None


def test_remember_passes_every_keyword_to_its_field() -> None:
    given: dict[str, Any] = {
        "actor": "ann",
        "text": "Ann lives in Porto",
        "kind": "preference",
        "valid_until": "2031-01-01T00:00:00+00:00",
        "field": "home city",
        "value": "Porto",
        "sensitivity": "personal",
        "strategy": "notes",
        "request_id": "r1",
        "namespace": "/tenants/t/actors/ann/app/",
        "metadata": {"topic": "home"},
    }
    face = Recorded()
    face.remember(**given)
    (asked,) = face.asked
    assert isinstance(asked, RememberAsk)
    assert {name: getattr(asked, name) for name in given} == given


def test_import_events_hands_the_rows_unread() -> None:
    read: list[int] = []

    def rows() -> Iterator[Mapping[str, Any]]:
        for n in range(3):
            read.append(n)
            yield {"actor": "ann", "session": "s", "role": "user", "text": f"line {n}"}

    heard: list[int] = []
    face = Recorded()
    lazy = rows()
    face.import_events(lazy, 7, heard.append, lines=[4, 5, 6])
    (asked,) = face.asked
    assert isinstance(asked, ImportAsk)
    assert (asked.rows, asked.batch, asked.lines) == (lazy, 7, [4, 5, 6])
    assert asked.progress is not None and read == []  # a large file is read as it goes
    asked.progress(2)
    assert heard == [2]


def test_memory_and_client_answer_every_request_the_shared_keywords_build() -> None:
    """Each `ask_*` a shared mixin hands its request to is the face's own, not the mixin's
    abstract one left ahead of it in the bases (which would answer None)."""
    from remem.facts.request import Reads
    from remem.memory.memory import Memory
    from remem.recall.request import Recalls
    from remem.service.client import Client

    for face in (Memory, Client):
        for mixin in (Writes, Reads, Recalls):
            for name, abstract in vars(mixin).items():
                if getattr(abstract, "__isabstractmethod__", False):
                    assert getattr(face, name) is not abstract, f"{face.__name__}.{name}"
