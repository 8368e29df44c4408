"""What the framework adapters share (`remem.integrations.common`): the check of how many
items a recall hands back, the one recall request they build, the metadata an entry
carries, and the error naming the extra to install."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from remem.errors import InvalidInput
from remem.integrations.common import (
    MAX_K,
    checked_k,
    framework_missing,
    item_metadata,
    recalled,
)
from remem.model import Packet, PacketItem
from remem.recall.request import RecallAsk

WHEN = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _item(record_id: str, **metadata: object) -> PacketItem:
    return PacketItem(id=record_id, text=f"text of {record_id}", kind="semantic", namespace="/n/",
                      status="active", source_date=WHEN, source={}, score=0.5, tokens=3,
                      flags=("pinned",), metadata=dict(metadata))  # fmt: skip


@pytest.mark.parametrize("k", [1, 7, MAX_K])
def test_checked_k_takes_a_whole_number_in_range(k: int) -> None:
    assert checked_k(k) == k


@pytest.mark.parametrize("k", [0, MAX_K + 1, -3, True, 2.0, "5", None])
def test_checked_k_refuses_what_is_not_one_and_names_the_frameworks_word(k: object) -> None:
    with pytest.raises(InvalidInput, match=rf"^limit must be an integer from 1 to {MAX_K}"):
        checked_k(k, "limit")


def test_an_entry_carries_the_applications_metadata_under_remems_own() -> None:
    meta = item_metadata(_item("rec_1", topic="travel", id="the app's id"))
    assert meta == {
        "topic": "travel",
        "id": "rec_1",  # remem's keys win over the application's of the same name
        "kind": "semantic",
        "status": "active",
        "score": 0.5,
        "flags": ["pinned"],
        "source_date": "2026-03-01T12:00:00+00:00",
    }


class Asked:
    """A backend that answers every recall with one packet and keeps the requests."""

    def __init__(self, packet: Packet) -> None:
        self.packet = packet
        self.requests: list[RecallAsk] = []

    def ask(self, request: RecallAsk) -> Packet:
        self.requests.append(request)
        return self.packet


def test_recalled_asks_once_and_hands_back_pinned_then_ranked() -> None:
    packet = Packet(records=(_item("rec_2"), _item("rec_3")), conflicts=(), tokens=6,
                    budget=100, pinned=(_item("rec_1"),))  # fmt: skip
    backend = Asked(packet)
    items = recalled(backend, "ann", "seats", 4, True, {"topic": "travel"})  # type: ignore[arg-type]
    assert [i.id for i in items] == ["rec_1", "rec_2", "rec_3"]
    wanted = RecallAsk(actor="ann", query="seats", k=4, include_events=True,
                       metadata={"topic": "travel"})  # fmt: skip
    assert backend.requests == [wanted]


def test_a_missing_framework_names_the_extra_and_the_reason() -> None:
    err = framework_missing("crewai", "CrewAI", "crewai 1.x", ImportError("No module crewai"))
    assert str(err) == (
        "remem.integrations.crewai needs CrewAI: pip install 'remem[crewai]' (crewai 1.x); "
        "importing it failed: No module crewai"
    )
