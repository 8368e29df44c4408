"""`RememStore` against the real langgraph package: the `BaseStore` contract as
langgraph's own store tests exercise it (get, put, delete, search, namespaces, TTL),
on every backend (`tests/integrations/conftest.py`), and real runs: a
`create_react_agent` graph whose tools use the store, and LangMem's memory tools."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from remem import InvalidInput, Memory, RefusedContent, Status
from remem.errors import Forbidden
from remem.integrations.langgraph import NamespaceRefused, RememStore
from tests.support.adapters import NS, Backend, call, make, versions
from tests.support.servers import running_server


def tick(backend: Backend) -> None:
    if backend.clock is not None:
        backend.clock.advance(seconds=5)


# -- get / put / delete ---------------------------------------------------------------------


def test_a_put_reads_back_exactly_and_a_later_put_supersedes_with_history(
    backend: Backend,
) -> None:
    store = make(backend)
    value = {
        "content": "Alice likes pizza",
        "n": 3,
        "ratio": 0.5,
        "ok": True,
        "none": None,
        "tags": ["food", "Ünïcode ✓"],
        "nested": {"deep": {"list": [1, {"x": "  spaced   text  "}]}},
    }
    call(backend, store, "put", NS, "k1", value)
    got = call(backend, store, "get", NS, "k1")
    assert got.value == value and got.key == "k1" and got.namespace == NS
    first_created = got.created_at
    assert got.updated_at == first_created

    # the same value under another key is another item, not merged into the first
    call(backend, store, "put", NS, "k2", dict(value))
    assert call(backend, store, "get", NS, "k2").value == value
    assert call(backend, store, "get", NS, "k1").value == value

    # a value that differs only in case and plural is still a different value
    tick(backend)
    changed = {**value, "content": "alice likes pizzas"}
    call(backend, store, "put", NS, "k1", changed)
    got = call(backend, store, "get", NS, "k1")
    assert got.value == changed
    assert got.created_at == first_created and got.updated_at > first_created

    k1 = [r for r in versions(backend) if json.loads(r.value)["key"] == "k1"]
    assert [r.status for r in k1] == [Status.INVALID, Status.ACTIVE]
    assert k1[0].superseded_by == k1[1].id and k1[1].supersedes == k1[0].id
    assert json.loads(k1[0].value)["value"] == value  # the history keeps the old value
    assert k1[1].namespace.endswith("/actors/alice/langgraph/users/alice/memories/")

    # the same value again changes nothing
    call(backend, store, "put", NS, "k1", changed)
    assert len(versions(backend)) == 3
    assert call(backend, store, "get", NS, "missing") is None


def test_value_none_erases_every_version_and_verifies(backend: Backend) -> None:
    store = make(backend)
    call(backend, store, "put", NS, "k", {"content": "Alice's gate code is the old one"})
    tick(backend)
    call(backend, store, "put", NS, "k", {"content": "Alice moved to the blue house"})
    call(backend, store, "put", NS, "keep", {"content": "Alice plays chess"})
    assert len(versions(backend)) == 3

    call(backend, store, "delete", NS, "k")
    assert call(backend, store, "get", NS, "k") is None
    left = versions(backend)
    assert [json.loads(r.value)["key"] for r in left] == ["keep"]
    assert [h.key for h in call(backend, store, "search", NS, query="blue house")] in ([], ["keep"])
    if isinstance(backend.reader, Memory):
        jobs = backend.reader.deletions()
        assert len(jobs) == 2 and all(j["result"]["verified"] for j in jobs)
    # deleting what is not there is no error, and a new put after a delete works
    call(backend, store, "delete", NS, "k")
    call(backend, store, "put", NS, "k", {"content": "a new start"})
    assert call(backend, store, "get", NS, "k").value == {"content": "a new start"}


def test_batch_runs_every_op_in_order(backend: Backend) -> None:
    store = make(backend)
    ops = [
        PutOp(NS, "a", {"content": "Alice drinks tea"}),
        GetOp(NS, "a"),
        PutOp(NS, "a", {"content": "Alice drinks coffee"}),
        GetOp(NS, "a"),
        SearchOp(NS, limit=5),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("users", "alice")),)),
        PutOp(NS, "a", None),
        GetOp(NS, "a"),
    ]
    out = call(backend, store, "batch", ops)
    assert out[0] is None and out[1].value == {"content": "Alice drinks tea"}
    assert out[3].value == {"content": "Alice drinks coffee"}
    assert [i.value for i in out[4]] == [{"content": "Alice drinks coffee"}]
    assert out[5] == [NS] and out[6] is None and out[7] is None


# -- search -------------------------------------------------------------------------------


def test_search_recalls_inside_the_namespace_with_filters_offset_and_limit(
    backend: Backend,
) -> None:
    store = make(backend)
    docs = {
        "d1": {"text": "Alice flies to Lisbon in May", "kind": "trip", "cost": 300},
        "d2": {"text": "Alice is allergic to peanuts", "kind": "health", "cost": 0},
        "d3": {"text": "Alice books a hotel in Lisbon", "kind": "trip", "cost": 900},
        "d4": {"text": "Alice prefers aisle seats", "kind": "trip", "cost": 5},
    }
    for key, value in docs.items():
        call(backend, store, "put", NS, key, value)
        tick(backend)
    call(backend, store, "put", ("users", "alice", "other"), "o1", {"text": "Lisbon again"})
    call(backend, store, "put", ("users", "bob", "memories"), "b1", {"text": "Bob in Lisbon"})

    hits = call(backend, store, "search", NS, query="Lisbon trip")
    keys = [h.key for h in hits]
    assert set(keys[:2]) == {"d1", "d3"} and "o1" not in keys and "b1" not in keys
    assert all(h.score is not None for h in hits)
    assert hits == sorted(hits, key=lambda h: -(h.score or 0))
    # the whole actor: both of Alice's namespaces, never Bob's
    wide = call(backend, store, "search", ("users", "alice"), query="Lisbon")
    assert {"d1", "d3", "o1"} <= {h.key for h in wide} and "b1" not in {h.key for h in wide}

    # no query: newest first; filters on value fields; offset and limit
    listed = call(backend, store, "search", NS)
    assert [h.key for h in listed] == ["d4", "d3", "d2", "d1"]
    assert all(h.score is None for h in listed)
    trips = call(backend, store, "search", NS, filter={"kind": "trip"})
    assert [h.key for h in trips] == ["d4", "d3", "d1"]
    dear = call(backend, store, "search", NS, filter={"kind": "trip", "cost": {"$gte": 300}})
    assert [h.key for h in dear] == ["d3", "d1"]
    assert [h.key for h in call(backend, store, "search", NS, limit=2, offset=1)] == ["d3", "d2"]
    cheap = call(backend, store, "search", NS, query="Lisbon", filter={"cost": {"$lt": 500}})
    # recall's pick first, then every other item that passes, as LangGraph's own stores
    assert [h.key for h in cheap][:1] == ["d1"] and {h.key for h in cheap} == {"d1", "d2", "d4"}
    assert [h.key for h in call(backend, store, "search", NS, filter={"cost": {"$ne": 0}})] == [
        "d4",
        "d3",
        "d1",
    ]
    # a changed value is searched by its new text; the old one never comes back
    call(backend, store, "put", NS, "d2", {"text": "Alice is allergic to shellfish", "cost": 0})
    for query in ["peanuts", "shellfish"]:
        for hit in call(backend, store, "search", NS, query=query):
            assert hit.key != "d2" or hit.value["text"].endswith("shellfish")
    assert "d2" in {h.key for h in call(backend, store, "search", NS, query="shellfish")}
    with pytest.raises(InvalidInput, match=r"\$regex"):
        call(backend, store, "search", NS, filter={"text": {"$regex": "L.*"}})


def test_a_huge_number_or_a_hostile_filter_never_breaks_a_search(backend: Backend) -> None:
    # found by a fuzz run: one stored 10**400 made every filtered search of its namespace
    # an OverflowError; a number as a filter key an AttributeError, a filter nested
    # 3,000 deep a RecursionError
    store = make(backend)
    call(backend, store, "put", NS, "big", {"text": "a huge count", "v": 10**400})
    call(backend, store, "put", NS, "small", {"text": "a small count", "v": 1.5})
    assert [h.key for h in call(backend, store, "search", NS, filter={"v": {"$gt": 2}})] == ["big"]
    huge = {"v": {"$lt": 10**400}}
    assert [h.key for h in call(backend, store, "search", NS, filter=huge)] == ["small"]
    deep: dict[str, object] = {}
    inner = deep
    for _ in range(3000):
        inner["a"] = {}
        inner = inner["a"]  # type: ignore[assignment]
    for bad in [{"v": {5: 1}}, {5: 1}, deep]:
        with pytest.raises(InvalidInput):
            call(backend, store, "search", NS, filter=bad)


def test_a_search_or_listing_that_would_span_actors_is_refused(backend: Backend) -> None:
    store = make(backend)
    call(backend, store, "put", NS, "k", {"text": "Alice's note"})
    for prefix in [("users",), ()]:
        with pytest.raises(NamespaceRefused, match="span actors"):
            call(backend, store, "search", prefix, query="note")
    with pytest.raises(InvalidNamespaceError):  # LangGraph's own error, too
        call(backend, store, "search", ("users",))
    with pytest.raises(NamespaceRefused, match="span actors"):
        call(backend, store, "list_namespaces", prefix=("users", "*"))
    with pytest.raises(NamespaceRefused, match="span actors"):
        call(backend, store, "list_namespaces", suffix=("memories",))
    with pytest.raises(NamespaceRefused, match="names no actor"):
        call(backend, store, "put", ("users",), "k", {"text": "whose?"})
    with pytest.raises(NamespaceRefused, match="actor must be"):
        call(backend, store, "put", ("users", "al ice", "x"), "k", {"text": "whose?"})
    # LangGraph's own label rules hold on the methods and on ops batched directly
    for bad in [("users", "alice", "thing.about"), ("users", "alice", ""), ()]:
        with pytest.raises(InvalidNamespaceError):
            call(backend, store, "put", bad, "k", {"text": "x"})
    with pytest.raises(InvalidNamespaceError):
        call(backend, store, "batch", [PutOp(("users", "alice", "a.b"), "k", {"text": "x"})])
    # another actor_index moves the rule, and the same data is then another actor's
    by_first = make(backend, actor_index=0)
    call(backend, by_first, "put", ("alice", "notes"), "n", {"text": "first label"})
    assert call(backend, by_first, "get", ("alice", "notes"), "n").value == {"text": "first label"}
    with pytest.raises(NamespaceRefused, match="actor_index=N"):  # whose? not 'notes'
        call(backend, store, "get", ("alice", "notes"), "n")


def test_list_namespaces_prefix_suffix_wildcards_depth_and_pages(backend: Backend) -> None:
    store = make(backend)
    spaces = [
        ("users", "alice"),
        ("users", "alice", "a", "b"),
        ("users", "alice", "a", "c"),
        ("users", "alice", "d", "c"),
        ("users", "alice", "e"),
        ("users", "bob", "a"),
    ]
    for i, ns in enumerate(spaces):
        call(backend, store, "put", ns, f"k{i}", {"n": i})
    alice = ("users", "alice")
    assert call(backend, store, "list_namespaces", prefix=alice) == sorted(spaces[:5])
    for depth in (0, -1):  # accepted silently before
        with pytest.raises(InvalidInput, match="max_depth"):
            call(backend, store, "list_namespaces", prefix=alice, max_depth=depth)
    assert call(backend, store, "list_namespaces", prefix=alice, suffix=("c",)) == [
        ("users", "alice", "a", "c"),
        ("users", "alice", "d", "c"),
    ]
    assert call(backend, store, "list_namespaces", prefix=(*alice, "*", "c")) == [
        ("users", "alice", "a", "c"),
        ("users", "alice", "d", "c"),
    ]
    assert call(backend, store, "list_namespaces", prefix=alice, max_depth=3) == [
        ("users", "alice"),
        ("users", "alice", "a"),
        ("users", "alice", "d"),
        ("users", "alice", "e"),
    ]
    assert call(backend, store, "list_namespaces", prefix=alice, limit=2, offset=1) == [
        ("users", "alice", "a", "b"),
        ("users", "alice", "a", "c"),
    ]
    assert call(backend, store, "list_namespaces", prefix=(*alice, "zzz")) == []


# -- what remem refuses, and TTL ------------------------------------------------------------


def test_secrets_and_values_that_are_not_json_are_refused_and_nothing_is_written(
    backend: Backend,
) -> None:
    store = make(backend)
    with pytest.raises(RefusedContent, match="password"):
        call(backend, store, "put", NS, "wifi", {"note": "the wifi password is hunter2x7"})
    with pytest.raises(RefusedContent, match="API key"):
        call(backend, store, "put", NS, "k", {"key": "sk-abcdefghijklmnopqrstuvwx1234"})
    with pytest.raises(InvalidInput, match="not JSON"):
        call(backend, store, "put", NS, "k", {"when": {1, 2}})
    with pytest.raises(InvalidInput, match="JSON cannot represent"):
        call(backend, store, "put", NS, "k", {"x": float("nan")})
    with pytest.raises(InvalidInput, match="the limit is 4000"):
        call(backend, store, "put", NS, "k", {"text": "word " * 1000})
    assert versions(backend) == []


def test_ttl_becomes_the_records_valid_until(backend: Backend) -> None:
    store = make(backend, ttl={"default_ttl": 60})
    call(backend, store, "put", NS, "short", {"text": "Alice is in Paris today"}, ttl=1)
    call(backend, store, "put", NS, "default", {"text": "Alice visits Rome this week"})
    call(backend, store, "put", NS, "forever", {"text": "Alice was born in Porto"}, ttl=None)
    recs = {json.loads(r.value)["key"]: r for r in versions(backend)}
    life = {k: r.valid_until - r.created_at if r.valid_until else None for k, r in recs.items()}
    assert life["forever"] is None
    assert timedelta(seconds=55) < life["short"] < timedelta(seconds=65)
    assert timedelta(minutes=59) < life["default"] < timedelta(minutes=61)
    if backend.clock is not None:
        backend.clock.advance(minutes=2)
        assert call(backend, store, "get", NS, "short") is None
        assert {h.key for h in call(backend, store, "search", NS)} == {"default", "forever"}
        assert "short" not in {h.key for h in call(backend, store, "search", NS, query="Paris")}


def test_index_fields_decide_what_recall_matches(backend: Backend) -> None:
    store = make(backend, index={"fields": ["title"]})
    call(backend, store, "put", NS, "a", {"title": "Seat preference", "body": "aisle, row 12"})
    call(backend, store, "put", NS, "b", {"title": "Lunch", "body": "sushi"}, index=["body"])
    call(backend, store, "put", NS, "c", {"title": "Private", "body": "diary"}, index=False)
    texts = {json.loads(r.value)["key"]: r.text for r in versions(backend)}
    assert texts == {"a": "Seat preference", "b": "sushi", "c": "c"}
    assert call(backend, store, "get", NS, "c").value == {"title": "Private", "body": "diary"}
    with pytest.raises(InvalidInput, match="only 'fields'"):
        make(backend, index={"dims": 384, "embed": "openai:text-embedding-3-small"})


# -- keys ---------------------------------------------------------------------------------


def test_an_actor_key_writes_only_its_actors_items(tmp_path: Path) -> None:
    with running_server(str(tmp_path / "service.db")) as server:
        store = RememStore(server.client("alice"), tenant="acme")
        store.put(NS, "k", {"text": "Alice's own"})
        assert store.get(NS, "k") is not None
        with pytest.raises(Forbidden):
            store.put(("users", "bob"), "k", {"text": "not Alice's"})
        with pytest.raises(Forbidden):
            store.search(("users", "bob"), query="anything")
        wrong = RememStore(server.client("alice"), tenant="globex")
        with pytest.raises(InvalidInput, match="namespace must lie under /tenants/acme"):
            wrong.put(NS, "k", {"text": "another tenant"})
        with pytest.raises(InvalidInput, match="tenant"):
            RememStore(server.client("alice"))


# -- real runs ------------------------------------------------------------------------------


def scripted_model(script: Callable[[Sequence[Any]], Any]) -> Any:
    """A LangChain chat model whose every answer is `script(messages)`: a real
    `BaseChatModel`, so the graph drives it as it drives any model."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.outputs import ChatGeneration, ChatResult

    class Scripted(BaseChatModel):
        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kw: Any) -> ChatResult:  # fmt: skip
            return ChatResult(generations=[ChatGeneration(message=script(messages))])

        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self

        @property
        def _llm_type(self) -> str:
            return "scripted"

    return Scripted()


def react_agent(model: Any, tools: list[Any], store: RememStore) -> Any:
    from langgraph.prebuilt import create_react_agent
    from langgraph.warnings import LangGraphDeprecatedSinceV10

    with pytest.warns(LangGraphDeprecatedSinceV10, match="create_agent"):
        return create_react_agent(model, tools, store=store)


def test_a_react_agent_writes_and_reads_the_store_through_its_tools(backend: Backend) -> None:
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.config import get_store

    @tool
    def save_note(note: str, config: RunnableConfig) -> str:
        """Save a note about the user."""
        user = config["configurable"]["user_id"]
        get_store().put(("users", user, "notes"), "latest", {"text": note})
        return "saved"

    @tool
    def find_notes(query: str, config: RunnableConfig) -> str:
        """Find notes about the user."""
        user = config["configurable"]["user_id"]
        hits = get_store().search(("users", user, "notes"), query=query)
        return json.dumps([h.value["text"] for h in hits])

    def script(messages: Sequence[Any]) -> AIMessage:
        tools_done = [m for m in messages if isinstance(m, ToolMessage)]
        if not tools_done:
            call = {"name": "save_note", "args": {"note": "Alice prefers window seats"}}
            return AIMessage("", tool_calls=[{**call, "id": "c1"}])
        if len(tools_done) == 1:
            call = {"name": "find_notes", "args": {"query": "window seats"}}
            return AIMessage("", tool_calls=[{**call, "id": "c2"}])
        return AIMessage(f"found {tools_done[-1].content}")

    store = make(backend)
    agent = react_agent(scripted_model(script), [save_note, find_notes], store)
    config: RunnableConfig = {"configurable": {"user_id": "alice"}}
    inputs = {"messages": [("user", "remember my seat, then look it up")]}
    if backend.is_async:
        out = asyncio.run(agent.ainvoke(inputs, config))
    else:
        out = agent.invoke(inputs, config)
    assert out["messages"][-1].content == 'found ["Alice prefers window seats"]'
    (rec,) = versions(backend)
    assert rec.text == "Alice prefers window seats" and rec.status is Status.ACTIVE
    assert call(backend, store, "get", ("users", "alice", "notes"), "latest").value == {
        "text": "Alice prefers window seats"
    }


def test_langmem_memory_tools_create_update_search_and_delete(backend: Backend) -> None:
    from langchain_core.messages import AIMessage, ToolMessage
    from langgraph.warnings import LangGraphDeprecatedSinceV10

    with warnings.catch_warnings():
        # langmem 0.0.30 imports Send from langgraph.constants, deprecated in langgraph 1.0
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        from langmem import create_manage_memory_tool, create_search_memory_tool

    namespace = ("memories", "{langgraph_user_id}")
    manage = create_manage_memory_tool(namespace=namespace)
    search = create_search_memory_tool(namespace=namespace)
    steps: list[dict[str, Any]] = [
        {"name": "manage_memory", "args": {"content": "Alice prefers aisle seats"}},
        {"name": "search_memory", "args": {"query": "seat preference"}},
        {
            "name": "manage_memory",
            "args": {"content": "Alice now prefers window seats", "action": "update", "id": None},
        },
        {"name": "search_memory", "args": {"query": "window seats"}},
        {"name": "manage_memory", "args": {"action": "delete", "id": None}},
    ]
    created: list[str] = []

    def script(messages: Sequence[Any]) -> AIMessage:
        done = [m for m in messages if isinstance(m, ToolMessage)]
        if done and done[0].content.startswith("created memory "):
            created[:] = [done[0].content.removeprefix("created memory ")]
        if len(done) == len(steps):
            return AIMessage("done")
        step = steps[len(done)]
        args = {k: (created[0] if k == "id" else v) for k, v in step["args"].items()}
        tool_call = {"name": step["name"], "args": args, "id": f"c{len(done)}"}
        return AIMessage("", tool_calls=[tool_call])

    store = make(backend)
    agent = react_agent(scripted_model(script), [manage, search], store)
    config = {"configurable": {"langgraph_user_id": "alice"}}
    inputs = {"messages": [("user", "remember my seat preference")]}
    if backend.is_async:
        out = asyncio.run(agent.ainvoke(inputs, config))
    else:
        out = agent.invoke(inputs, config)
    results = [m.content for m in out["messages"] if isinstance(m, ToolMessage)]
    memory_id = created[0]
    assert results[0] == f"created memory {memory_id}"
    first = json.loads(results[1])
    assert [(m["key"], m["value"]) for m in first] == [
        (memory_id, {"content": "Alice prefers aisle seats"})
    ]
    assert first[0]["namespace"] == ["memories", "alice"] and first[0]["score"] is not None
    assert results[2] == f"updated memory {memory_id}"
    assert [m["value"]["content"] for m in json.loads(results[3])] == [
        "Alice now prefers window seats"
    ]
    assert results[4] == f"Deleted memory {memory_id}"
    assert versions(backend) == []  # both versions erased
