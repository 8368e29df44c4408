"""Keyset cursors on every list of the HTTP service, on both backends (issue 38, item 2):
pages hand out every item exactly once while other writers insert, the store reads
after the cursor's key (no list is read from its start), a cursor that is not one a
list handed out is a 400, and one from another tenant, actor or list gives nothing."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.support.servers import Server, running_server

LISTS = [  # path, answer field, id field, the query of the list
    ("/v1/memories", "records", "id", {"actor_id": "pat"}),
    ("/v1/documents", "documents", "id", {}),
    ("/v1/jobs/list", "jobs", "id", {}),
    ("/v1/deletions", "deletions", "id", {}),
    ("/v1/keys", "keys", "id", {}),
    ("/v1/procedures", "records", "id", {"all": "true"}),  # proposals too
]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    if request.param == "sqlite":
        with running_server(str(tmp_path_factory.mktemp("cursors") / "c.db")) as running:
            fill(running)
            yield running
        return
    from tests.support import pg

    with pg.fresh_database(request.getfixturevalue("pg_admin_dsn")) as dsn:
        with running_server(pg.as_url(dsn)) as running:
            fill(running)
            yield running


FACTS = [
    "Pat collects stamps from Peru", "Pat plays the cello on Sundays", "Pat is allergic to cats",
    "Pat drives a green tractor", "Pat grew up in Lisbon", "Pat's sister is called Noor",
    "Pat bakes sourdough bread", "Pat runs marathons in autumn", "Pat reads Russian novels",
    "Pat keeps bees in the garden", "Pat studied marine biology", "Pat fears thunderstorms",
]  # fmt: skip
LATE = ["Pat sails a small dinghy", "Pat knits scarves", "Pat climbs granite walls",
        "Pat repairs old radios", "Pat paints watercolours", "Pat writes haiku"]  # fmt: skip


def walk(
    h: httpx.Client, path: str, field: str, params: dict[str, Any], limit: int,
    between: Callable[[], None] = lambda: None,
) -> tuple[list[Any], list[str]]:  # fmt: skip
    """Every page of a list, `between` called after each; the items and the cursors."""
    items: list[Any] = []
    cursors: list[str] = []
    cursor = None
    while True:
        got = h.get(
            path, params={**params, "limit": limit} | ({"cursor": cursor} if cursor else {})
        )
        assert got.status_code == 200, got.text
        page = got.json()
        assert len(page[field]) <= limit
        items += page[field]
        cursor = page["next_cursor"]
        if cursor is None:
            return items, cursors
        cursors.append(cursor)
        between()


def fill(server: Server) -> None:
    """Twelve of each list's items in tenant acme."""
    admin, agent = server.client("admin"), server.client("agent")
    for i in range(12):
        agent.remember(actor="pat", text=FACTS[i])
        admin.add_document(text=f"# Note {i}\n\nThe office plant number {i} needs water.",
                           title=f"note-{i}")  # fmt: skip
        agent.propose_procedure(text=f"Step {i}: confirm the booking")
        made = agent.remember(actor="gone", text=f"Gone fact {i}")
        admin.forget(record_id=made.id)
    agent.add_events([_event(f"I tried sport number {i} today.") for i in range(12)])
    with server.http("admin") as h:
        for _ in range(6):
            assert h.post("/v1/keys", json={"role": "agent"}).status_code == 201


def _event(text: str) -> dict[str, str]:
    return {"actor": "pat", "session": "s1", "role": "user", "text": text}


class Inserter:
    """Another writer adding one item to every list between two pages."""

    def __init__(self, server: Server) -> None:
        self.server, self.n = server, 0

    def __call__(self) -> None:
        self.n += 1
        agent, admin = self.server.client("agent"), self.server.client("admin")
        agent.remember(actor="pat", text=LATE[self.n % len(LATE)] + f" since {1990 + self.n}")
        admin.add_document(text=f"Late note {self.n}.", title=f"late-{self.n}")
        agent.propose_procedure(text=f"Late step {self.n}")
        admin.forget(record_id=agent.remember(actor="gone", text=f"Late {self.n}").id)
        agent.add_events([_event(f"Late sport {self.n}.")])
        with self.server.http("admin") as h:
            h.post("/v1/keys", json={"role": "agent"})


def test_pages_hand_out_every_item_once_while_others_insert(server: Server) -> None:
    insert = Inserter(server)
    with server.http("admin") as h:
        for path, field, key, params in LISTS:
            before, _ = walk(h, path, field, params, limit=1000)
            ids_before = [x[key] for x in before]
            assert len(ids_before) >= 12, path
            paged, cursors = walk(h, path, field, params, limit=5, between=insert)
            ids = [x[key] for x in paged]
            assert len(ids) == len(set(ids)), f"{path}: an item twice"
            missing = set(ids_before) - set(ids)
            assert missing == set(), f"{path}: {len(missing)} items never handed out"
            assert len(cursors) >= 2
            for c in cursors:  # a key, no offset: the store reads after it
                text = base64.urlsafe_b64decode(c + "=" * (-len(c) % 4)).decode()
                assert json.loads(text)[0] == path.split("/")[2].replace("list", "jobs"), text


def test_a_bad_or_foreign_cursor_is_a_400_and_gives_nothing(server: Server) -> None:
    with server.http("admin") as h:
        cursors = {}
        for path, _field, _, params in LISTS:
            page = h.get(path, params={**params, "limit": 2}).json()
            assert page["next_cursor"], path
            cursors[path] = page["next_cursor"]
            for bad in ("nope", cursors[path][:-3], base64.urlsafe_b64encode(b'["x"]').decode()):
                got = h.get(path, params={**params, "limit": 2, "cursor": bad})
                assert got.status_code == 400, (path, bad, got.text)
                err = got.json()["error"]
                assert err["code"] == "invalid_cursor" and "cursor" in err["message"]
                assert bad not in err["message"]  # never echoed
        # a cursor of one list on another: refused, as is one from another query
        got = h.get("/v1/documents", params={"cursor": cursors["/v1/memories"]})
        assert got.status_code == 400 and "another list or query" in got.json()["error"]["message"]
        got = h.get("/v1/memories", params={"actor_id": "gone", "cursor": cursors["/v1/memories"]})
        assert got.status_code == 400
    # another tenant's and another actor's keys get a 400 for acme's cursors, nothing of acme's
    for key, path, params in [
        ("globex", "/v1/memories", {"actor_id": "pat"}),
        ("globex", "/v1/documents", {}),
        ("globex", "/v1/keys", {}),
        ("globex", "/v1/deletions", {}),
        ("alice", "/v1/jobs/list", {}),
    ]:
        with server.http(key) as h:
            got = h.get(path, params={**params, "cursor": cursors[path]})
            assert got.status_code in (400, 403), (key, path, got.text)
            assert "pat" not in got.text and "Gone" not in got.text


def test_the_client_follows_the_cursors(server: Server) -> None:
    agent = server.client("agent")
    with server.http("agent") as h:
        everything, _ = walk(h, "/v1/memories", "records", {"actor_id": "pat"}, limit=1000)
    # pages of 1000: a limit above one page is read through the cursors
    assert len(agent.records(actor="pat", limit=5)) == 5
    assert [r.id for r in agent.records(actor="pat")] == [r["id"] for r in everything]
    assert len(agent.list_documents(limit=3)) == 3
    assert len(agent.list_jobs(limit=3)) == 3


def test_a_list_longer_than_ten_thousand_items_pages_to_its_end(server: Server) -> None:
    """The lists were once paged through their first 10,000 items only. On SQLite only:
    PostgreSQL's keyset statements are read by the tests above, and 10,000 events there
    took a minute of this suite (load 10)."""
    if server.db.startswith("postgresql"):
        pytest.skip("SQLite only (see the docstring)")
    agent = server.client("agent")
    rows = [_event(f"Filler line {i}.") | {"actor": "many"} for i in range(10_050)]
    for start in range(0, len(rows), 400):  # the test server takes bodies of 64 KB
        agent.add_events(rows[start : start + 400])
    with server.http("agent") as h:
        total = sum(h.get("/v1/jobs").json().values())
        jobs, _ = walk(h, "/v1/jobs/list", "jobs", {}, limit=1000)
    assert total > 10_000 and len(jobs) == total
    assert len({j["id"] for j in jobs}) == total
