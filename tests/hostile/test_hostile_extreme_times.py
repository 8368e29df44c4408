"""Times far in the past or future on the time fields of the library and HTTP.

Held (swept on both surfaces): year 1, 9999, a negative epoch, a number, a bool, a
leap second, a month 13, an offset of 24 hours, full-width digits, and a time whose
UTC form leaves years 1-9999 are refused with 422 / InvalidInput (never a 5xx), and
a time without a zone is read as UTC. Did not: a `ttl` lifetime long enough that a
record's end is no time (a billion days) was accepted, and then every `remember`
of that kind failed with a bare OverflowError. Now a lifetime is at most 1000 years.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from remem import Memory
from remem.embed import HashEmbedder
from remem.errors import InvalidInput
from remem.service.http import create_app
from tests.support.servers import key_for

REFUSED = ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "-0001-01-01T00:00:00Z",
           "2016-12-31T23:59:60Z", "2026-13-01T00:00:00Z", "2026-01-01T00:00:00+24:00",
           "\uff12\uff10\uff12\uff16-01-01", -1, 0, 1e300, True]  # fmt: skip


def test_a_lifetime_whose_end_is_no_time_is_refused_up_front(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="at most 1000 years"):
        Memory.open(tmp_path / "m.db", embedder=HashEmbedder(),
                    ttl={"semantic": timedelta(days=999_999_999)})  # fmt: skip
    longest = timedelta(days=1000 * 365)
    with Memory.open(tmp_path / "m.db", embedder=HashEmbedder(),
                     ttl={"semantic": longest}) as mem:  # fmt: skip
        rec = mem.remember(actor="alice", text="My locker is number 12")
    assert rec.valid_until is not None and rec.valid_until - rec.valid_from == longest


def test_far_times_are_refused_on_every_time_field_and_never_a_5xx(db: str) -> None:
    key = key_for(db)
    auth = {"Authorization": f"Bearer {key}"}
    app = create_app(db, embedder=HashEmbedder(), worker=False)
    with TestClient(app, raise_server_exceptions=False) as client:
        for value in REFUSED:
            asks = {
                "event time": client.post("/v1/events", headers=auth, json={
                    "actor_id": "alice", "session_id": "s", "role": "user", "text": "hi",
                    "time": value}),
                "valid_until": client.post("/v1/memories/batch-create", headers=auth, json={
                    "records": [{"actor_id": "alice", "text": "I like tea",
                                 "valid_until": value}]}),
                "as_of": client.post("/v1/memories/retrieve", headers=auth, json={
                    "actor_id": "alice", "query": "tea", "as_of": value}),
                "valid_at": client.get("/v1/actors/alice/profile", headers=auth,
                                       params={"valid_at": str(value)}),
            }  # fmt: skip
            for what, got in asks.items():
                status = got.status_code
                if what == "valid_until":  # a batch item's own status
                    status = got.json()["results"][0]["status"] if status == 200 else status
                assert status == 422, (what, value, got.text)
        with Memory.open(db, tenant="acme", embedder=HashEmbedder()) as mem:
            assert mem.events(actor="alice") == [] and mem.records(actor="alice", all=True) == []


@pytest.mark.parametrize("ttl", [1e12, float("inf"), float("nan"), 10**30, True, "60"])
def test_a_langgraph_ttl_that_is_no_time_is_refused_and_stores_nothing(ttl: object) -> None:
    pytest.importorskip("langgraph")
    from remem.integrations.langgraph import RememStore

    with Memory.open(":memory:", embedder=HashEmbedder()) as mem:
        store = RememStore(mem)
        with pytest.raises(InvalidInput, match="ttl is minutes"):
            store.put(("users", "alice", "prefs"), "seat", {"text": "aisle"}, ttl=ttl)  # type: ignore[arg-type]
        assert store.get(("users", "alice", "prefs"), "seat") is None
        store.put(("users", "alice", "prefs"), "seat", {"text": "aisle"}, ttl=60)
        assert store.get(("users", "alice", "prefs"), "seat") is not None
