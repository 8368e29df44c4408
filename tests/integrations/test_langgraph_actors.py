"""Whose a LangGraph item is, never guessed (issue 40 item 4), on every backend.

LangChain's own docs write `namespace = (user_id, "chitchat")`; read with the old
default `actor_index=1`, "chitchat" was the actor of every user and an erasure of the
user missed their items. Now the namespace must say whose it is (a first label such
as "users"), or `actor_index` / `actor=` must; an application label is refused as an
actor, and so is an actor label shared by what look like different users. A value's
keys are indexed with their values.
"""

from __future__ import annotations

from typing import Any

import pytest

from remem import InvalidInput
from remem.integrations.langgraph import NamespaceRefused
from tests.support.adapters import Backend, call, make


def items_of(backend: Backend, actor: str) -> list[Any]:
    return backend.reader.records(actor=actor, all=True)


def test_langchains_user_id_chitchat_namespace_is_refused_saying_how(backend: Backend) -> None:
    store = make(backend)
    with pytest.raises(NamespaceRefused, match=r"actor_index=0 for \(user_id, 'chitchat'\)"):
        call(backend, store, "put", ("u1", "chitchat"), "k", {"text": "u1 likes tea"})
    assert items_of(backend, "chitchat") == [] and items_of(backend, "u1") == []
    # the old default, named: "chitchat" would be every user's actor, so it is refused
    by_second = make(backend, actor_index=1)
    with pytest.raises(NamespaceRefused, match="names what the application keeps"):
        call(backend, by_second, "put", ("u1", "chitchat"), "k", {"text": "u1 likes tea"})
    assert items_of(backend, "chitchat") == []


def test_actor_index_zero_maps_chitchat_to_the_user_and_forget_reaches_it(
    backend: Backend,
) -> None:
    store = make(backend, actor_index=0)
    call(backend, store, "put", ("u1", "chitchat"), "k", {"text": "u1 likes green tea"})
    call(backend, store, "put", ("u2", "chitchat"), "k", {"text": "u2 likes coffee"})
    assert [r.actor for r in items_of(backend, "u1")] == ["u1"]
    assert call(backend, store, "get", ("u1", "chitchat"), "k").value == {
        "text": "u1 likes green tea"
    }
    hits = call(backend, store, "search", ("u2",), query="coffee")
    assert [h.value for h in hits] == [{"text": "u2 likes coffee"}]
    if backend.server is None:
        exported = [r for r in backend.reader.export(actor="u1") if r["type"] == "record"]
        assert len(exported) == 1 and "green tea" in exported[0]["text"]
    assert backend.reader.forget(actor="u1").verified
    assert call(backend, store, "get", ("u1", "chitchat"), "k") is None
    assert call(backend, store, "get", ("u2", "chitchat"), "k").value == {"text": "u2 likes coffee"}


def test_a_label_shared_by_different_users_is_refused_at_the_second(backend: Backend) -> None:
    store = make(backend, actor_index=1)
    call(backend, store, "put", ("u1", "team-a"), "k", {"text": "u1 note"})
    with pytest.raises(NamespaceRefused, match="shared by what look like different users"):
        call(backend, store, "put", ("u2", "team-a"), "k", {"text": "u2 note"})
    assert len(items_of(backend, "team-a")) == 1
    # a fresh store (another process) reads the same from what is stored
    again = make(backend, actor_index=1)
    with pytest.raises(NamespaceRefused, match="actor_index"):
        call(backend, again, "put", ("u3", "team-a"), "k", {"text": "u3 note"})
    # collection words before the actor are no users: one actor, two shapes
    owned = make(backend)
    call(backend, owned, "put", ("users", "alice", "notes"), "a", {"text": "Alice A"})
    call(backend, owned, "put", ("memories", "alice"), "b", {"text": "Alice B"})
    assert len(items_of(backend, "alice")) == 2


def test_one_users_store_takes_every_namespace_whole(backend: Backend) -> None:
    store = make(backend, actor="carol")
    call(backend, store, "put", ("chitchat",), "k", {"text": "Carol hums"})
    call(backend, store, "put", ("u9", "profile"), "p", {"text": "Carol is a cellist"})
    assert {r.actor for r in items_of(backend, "carol")} == {"carol"}
    assert [h.key for h in call(backend, store, "search", (), query="cellist")][:1] == ["p"]
    assert sorted(call(backend, store, "list_namespaces")) == [("chitchat",), ("u9", "profile")]
    with pytest.raises(InvalidInput, match="not both"):
        make(backend, actor="carol", actor_index=0)


def test_a_values_keys_are_indexed_with_their_values(backend: Backend) -> None:
    store = make(backend)
    value = {"food": "vegetarian", "diet": {"since": 2019}, "content": "Alice cooks"}
    call(backend, store, "put", ("users", "alice", "prefs"), "f", value)
    (rec,) = items_of(backend, "alice")
    assert "food: vegetarian" in rec.text and "diet since: 2019" in rec.text
    assert "content" not in rec.text and "Alice cooks" in rec.text
    hits = call(backend, store, "search", ("users", "alice"), query="food")
    assert [h.key for h in hits] == ["f"]
