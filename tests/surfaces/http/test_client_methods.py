"""The Client methods that mirror `Memory`'s over new routes: update, events_page, process,
procedures, deletions, fresh_start; and the retrieve answer's `context`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from remem.errors import Forbidden, InvalidInput, NotFound
from remem.store.values import Asked
from tests.support.servers import Server, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(str(tmp_path_factory.mktemp("client") / "client.db")) as running:
        yield running


def test_update_events_page_and_process(server: Server) -> None:
    c = server.client("agent")
    old = c.remember(actor="bea", text="Bea lives in Lisbon", field="home city", value="Lisbon")
    new = c.update(old.id, text="Bea lives in Porto")
    assert new.supersedes == old.id and c.get(old.id).status.value == "invalid"
    with pytest.raises(NotFound):
        c.update("rec_missing", text="x")
    before = c.jobs()
    c.add_events(
        [{"actor": "bea", "session": "s", "role": "user", "text": f"I like {t}."}
         for t in ("tea", "jazz", "chess")]
    )  # fmt: skip
    done = c.process(timeout=30)
    # the server's worker may take some of them before process() looks: count from before
    after = c.jobs()
    assert after["pending"] == after["running"] == 0 and done.failed == 0
    assert after["done"] - before["done"] >= 3 and done.jobs_done <= 3
    rows, cursor = c.events_page(actor="bea", limit=2)
    assert [r["text"] for r in rows] == ["I like tea.", "I like jazz."] and cursor
    rest, end = c.events_page(actor="bea", after=cursor, limit=2)
    assert [r["text"] for r in rest] == ["I like chess."] and end is None


def test_procedures_deletions_and_fresh_start(server: Server) -> None:
    agent, reviewer, admin = (server.client(k) for k in ("agent", "reviewer", "admin"))
    proc = agent.propose_procedure(text="Confirm the date before booking")
    assert agent.procedures() == []  # proposed: not yet a procedure
    assert [p.id for p in reviewer.procedures(all=True)] == [proc.id]
    with pytest.raises(Forbidden):
        agent.procedures(all=True)
    reviewer.approve(proc.id)
    assert [p.id for p in agent.procedures()] == [proc.id]
    admin.remember(actor="cy", text="Cy likes figs")
    assert admin.fresh_start("cy") is None
    admin.forget(actor="cy", asked=Asked(None, None, "ticket PRIV-7"))
    assert admin.fresh_start("cy") is not None
    log = admin.deletions()
    assert log and log[0]["target"] == "actor" and log[0]["status"] == "done"
    # the reason travels; who asked is the key the server saw, not what the caller claimed
    assert log[0]["reason"] == "ticket PRIV-7" and log[0]["requested_by"]
    with pytest.raises(Forbidden):
        server.client("alice").deletions()


def test_retrieve_answers_the_packet_as_prompt_text(server: Server) -> None:
    agent = server.client("agent")
    agent.remember(actor="dee", text="Dee prefers aisle seats", kind="preference")
    with server.http("agent") as h:
        out = h.post("/v1/memories/retrieve", json={"query": "seats", "actor_id": "dee"}).json()
    assert out["context"].splitlines()[1:] == [
        "Memories:",
        f"- [preference] Dee prefers aisle seats ({out['records'][0]['source_date'][:10]}; "
        f"{out['records'][0]['id']})",
    ]


def test_write_records_sends_the_reason_of_its_deletes(server: Server) -> None:
    admin = server.client("admin")
    kept = admin.remember(actor="dov", text="Dov keeps bees")
    mine = admin.remember(actor="dov", text="Dov plays oboe")
    done = admin.write_records(
        [{"op": "delete", "record_id": kept.id, "reason": "its own"},
         {"op": "delete", "record_id": mine.id}],
        asked=Asked(None, None, "ticket PRIV-9"),
    )  # fmt: skip
    assert [r["status"] for r in done] == ["deleted", "deleted"]
    jobs = {j["key"]: j for j in admin.deletions() if j["target"] == "record"}
    # an item's own reason wins; the batch's reason fills the others; who asked is the key
    assert [jobs[kept.id]["reason"], jobs[mine.id]["reason"]] == ["its own", "ticket PRIV-9"]
    assert jobs[kept.id]["requested_by"] and jobs[mine.id]["requested_by"]


def test_write_records_keeps_a_creates_metadata_as_the_library_does(server: Server) -> None:
    admin = server.client("admin")
    (done,) = admin.write_records(
        [{"op": "create", "actor": "eli", "text": "Eli likes kites", "metadata": {"src": "crm"}}]
    )
    assert done["status"] == "created"
    assert admin.get(done["record_id"]).metadata == {"src": "crm"}


def test_a_read_for_no_actor_is_invalid_input_as_in_the_library(server: Server) -> None:
    """`fact` and `profile` put the actor in the path: one not named is refused, with the
    library's exception, before a request is sent."""
    c = server.client("admin")
    for read in (lambda: c.fact(actor=None, field="home"), lambda: c.profile(actor=None)):  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match="actor"):
            read()
