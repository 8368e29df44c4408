"""LangGraph's store on remem: `RememStore`, a `langgraph.store.base.BaseStore`.

    from langgraph.prebuilt import create_react_agent
    from remem import Memory
    from remem.integrations.langgraph import RememStore

    store = RememStore(Memory.open("memory.db"))            # or an AsyncMemory, or a Client
    agent = create_react_agent(model, tools, store=store)

The namespace rule: every item is a remem actor's, in the memory's tenant (a
`Client`'s tenant is its key's; name it with `tenant=`), so that `forget(actor=...)`,
export, the console and `/v1/subjects/{actor}/forget` reach it. Whose it is, is said
one of three ways, and never guessed:

- `actor="alice"`: one user's store; every namespace is alice's, whole.
- `actor_index=N`: the label at position N of each namespace is the actor
  (`actor_index=0` for LangChain's `(user_id, "chitchat")`).
- neither: the namespace must say it itself, by a first label that names a set of
  users or their memories (`OWNER_LABELS`: "users", "customers", "memories", ...);
  the label after it is the actor. `("users", "alice", "memories")` is actor
  `alice`, LangMem's `("memories", "{langgraph_user_id}")` fits as it is. Any other
  shape (`(user_id, "chitchat")`) is refused with a message saying to set
  `actor_index` or `actor`: read with the old default (label 1), "chitchat" was the
  actor of every user, and an erasure of the user missed every item.

Two checks keep an application label from becoming the actor whichever way it was
chosen: a label that names what an application keeps rather than whose it is
(`APP_LABELS`: "chitchat", "notes", "preferences", "memories", ...) is refused as
the actor; and one actor's items must not differ in a label before the actor's that
is no such word (an id: `("u1", "team")` then `("u2", "team")` with `actor_index=1`
is two users filed as one, and the second is refused). The second check reads the
actor's newest item once per actor and store (then remembered in the process): it
catches a shared label at the second user, not the first.

Every item is a record in `/tenants/{tenant}/actors/{actor}/langgraph/...` (see
`remem.integrations.langgraph_items`). A search or a namespace listing must name
the actor: one whose prefix stops before it would span actors, and is refused
(`NamespaceRefused`), never widened.

What each operation does:

- `PutOp` writes the item through `remember` (validated, secrets refused); its
  text, what recall matches, holds each key of the value before its value
  (`{"food": "vegetarian"}` is "food: vegetarian"; `index` fields, when given, are
  their text alone, as LangGraph's own stores index them). The
  first put adds a confirmed record, a later one supersedes it (the old value
  stays in the history), the same value again changes nothing. `ttl` (minutes)
  becomes the record's `valid_until`, counted from that put; reads never extend
  it. `value=None` erases every version of the item through remem's deletion
  job and raises `StoreError` unless the erasure was verified.
- `GetOp` is an exact lookup of the item's field (`fact`).
- `SearchOp` with a query is remem's recall inside the actor's scope, narrowed
  to the namespace prefix: its packet first (scores are recall's), then the rest
  of what its ranking gathered, by meaning, as LangGraph's own stores return
  every item they hold up to `limit`; without a query it lists the items newest
  first. Filters apply to the values; then offset and limit.
- `ListNamespacesOp` lists the actor's item namespaces: prefix and suffix
  conditions ("*" for any label), `max_depth`, offset and limit.

Bounds: a get and a delete look the item up by its field's index, so neither
depends on how many other records the actor has; a delete erases the versions
`DELETE_PAGE` at a time until none is left. A listing (a search without a query,
a namespace listing) reads the newest `MAX_LISTED` item records under the
namespace prefix, only the store's own records; when there are more and the
answer could lie beyond them (a filter, a namespace listing, an offset past
them), it raises `StoreError` rather than answer from a part.

`abatch` runs `batch` in a worker thread, as `AsyncMemory` runs `Memory`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from remem.errors import InvalidInput, StoreError
from remem.facts.lookup import Fact
from remem.integrations import langgraph_items as items
from remem.integrations.checkpointer import RememCheckpointer as RememCheckpointer
from remem.memory.aio import AsyncMemory
from remem.memory.memory import Memory
from remem.model import Packet, Record, Status
from remem.policy.dataclasses import shown
from remem.policy.scope import check_name
from remem.recall.request import RecallAsk
from remem.store.roles import ForgetReport
from remem.writes.checks import MAX_TTL

MAX_TTL_MINUTES = int(MAX_TTL.total_seconds() // 60)  # as `Memory.open(ttl=)` allows

__all__ = ["NamespaceRefused", "RememStore"]

MAX_LISTED = 10_000  # the item records under a prefix read to list items or namespaces
DELETE_PAGE = 1000  # the versions of one item looked up (and erased) at a time
MAX_RECALLED = 1000  # recall's largest k

OWNER_LABELS = frozenset(
    "users user actors actor people person customers customer members member accounts "
    "account subjects subject memories".split()
)
"""First labels that say the next label is whose the item is (without `actor_index`)."""

APP_LABELS = OWNER_LABELS | frozenset(
    """memory chitchat chat notes note preferences preference profile profiles facts fact
    episodes episodic semantic procedural instructions procedures history messages
    conversations threads documents knowledge settings default general main shared
    global""".split()
)
"""Labels that name what an application keeps, never whose it is: refused as an actor."""


class NamespaceRefused(InvalidInput, InvalidNamespaceError):
    """A namespace that does not name an actor where the rule says, or a search that
    would span actors. Both remem's `InvalidInput` and LangGraph's error."""


class Backend(Protocol):
    """What the store uses of a `Memory` or a `Client` (they share these methods)."""

    def remember(
        self,
        *,
        actor: str,
        text: str,
        field: str | None = ...,
        value: str | None = ...,
        valid_until: str | datetime | None = ...,
        namespace: str | None = ...,
    ) -> Record: ...

    def fact(self, *, actor: str, field: str) -> Fact: ...

    def records(
        self,
        *,
        actor: str,
        all: bool = ...,
        limit: int = ...,
        field: str | None = ...,
        namespace: str | None = ...,
    ) -> list[Record]: ...

    def ask(self, request: RecallAsk) -> Packet: ...

    def get(self, record_id: str) -> Record: ...

    def forget(self, *, record_id: str | None = ...) -> ForgetReport: ...


class RememStore(BaseStore):
    """LangGraph's `BaseStore` on a `Memory`, an `AsyncMemory` or a `Client`; see the
    module docstring for the namespace rule and what each operation maps to."""

    supports_ttl = True

    def __init__(
        self,
        memory: Memory | AsyncMemory | Backend,
        *,
        actor_index: int | None = None,
        index: Mapping[str, Any] | None = None,
        ttl: TTLConfig | None = None,
        tenant: str | None = None,
        actor: str | None = None,
    ) -> None:
        """`actor_index` or `actor`: whose each item is (see the module docstring; neither:
        the namespace must say it). `index`: as LangGraph's `{"fields": [...]}`, the value
        paths whose text recall matches (default: every string, number and boolean of the
        value, after its keys); remem embeds with the memory's own embedder, so `dims`
        and `embed` are refused. `ttl`: a
        `TTLConfig` whose `default_ttl` applies to puts that give none."""
        if isinstance(memory, AsyncMemory):
            memory = memory.sync
        if isinstance(memory, Memory):
            if tenant is not None and tenant != memory.tenant:
                raise InvalidInput(f"tenant {tenant!r} is not the memory's ({memory.tenant!r})")
            tenant = memory.tenant
            self._clock = memory.deps.clock
        else:
            if tenant is None:
                raise InvalidInput(
                    "a Client's tenant is its key's: name it, RememStore(client, tenant=...)"
                )
            self._clock = _utcnow
        if actor_index is not None and actor is not None:
            raise InvalidInput(
                "give actor_index or actor, not both: actor makes every item one actor's"
            )
        if actor_index is not None and (
            not isinstance(actor_index, int) or isinstance(actor_index, bool) or actor_index < 0
        ):
            got = shown(actor_index)
            raise InvalidInput(f"actor_index must be an integer of 0 or more; got {got}")
        unknown = sorted(set(index or {}) - {"fields"})
        if unknown:
            raise InvalidInput(
                f"index takes only 'fields' (remem embeds with its own embedder); got {unknown}"
            )
        fields = (index or {}).get("fields")
        if fields is not None and (isinstance(fields, str) or not isinstance(fields, Sequence)):
            raise InvalidInput("index fields must be a list of paths, e.g. ['content']")
        self.memory: Backend = memory
        self.tenant = check_name("tenant", tenant)
        self.actor_index = actor_index
        self.actor = None if actor is None else check_name("actor", actor)
        self._leads: dict[str, items.Namespace] = {}  # actor -> the labels before it, checked
        self.fields: list[str] | None = None if fields is None else list(fields)
        self.ttl_config = ttl

    # -- the BaseStore interface ------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; one result each (None for a put)."""
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            _check(op)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise InvalidInput(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` in a worker thread, so the event loop keeps serving."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- operations ---------------------------------------------------------------------------

    def _index(self, namespace: Sequence[str], what: str) -> int:
        """The position of the actor's label in `namespace` (see the module docstring)."""
        if self.actor_index is not None:
            return self.actor_index
        if not namespace or namespace[0].casefold() in OWNER_LABELS:
            return 1
        raise NamespaceRefused(
            f"{what} {tuple(namespace)!r} does not say which label is the user: without "
            "actor_index remem reads the label after a first label such as 'users' or "
            "'memories' (('users', user_id, ...)). Name it: RememStore(memory, "
            "actor_index=N) with N the position of the user id (actor_index=0 for "
            "(user_id, 'chitchat')), or RememStore(memory, actor='...') for one user's store"
        )

    def _actor(self, namespace: Sequence[str], what: str = "namespace") -> str:
        if self.actor is not None:
            return self.actor
        index = self._index(namespace, what)
        if len(namespace) <= index:
            raise NamespaceRefused(
                f"{what} {tuple(namespace)!r} names no actor: its label {index} "
                "is the remem actor (e.g. ('users', 'alice', ...)); a "
                "search or listing above the actor would span actors, so it is refused"
            )
        label = namespace[index]
        if label.casefold() in APP_LABELS:
            raise NamespaceRefused(
                f"{what} {tuple(namespace)!r}: its label {index} ({label!r}) names what the "
                "application keeps, not whose it is; as the actor it would be one actor for "
                "every user, and forget(actor=<user>) would miss their items. Set actor_index "
                "to the position of the user id (actor_index=0 for (user_id, 'chitchat')), or "
                "actor='...' for one user's store"
            )
        try:
            return check_name("actor", label)
        except InvalidInput as exc:
            raise NamespaceRefused(f"{what} {tuple(namespace)!r}: {exc}") from None

    def _names_actor(self, path: Sequence[str]) -> bool:
        """Whether a listing's prefix names the actor's label (not '*')."""
        index = self._index(path, "namespace prefix")
        return len(path) > index and path[index] != "*"

    def _one_owner(self, actor: str, namespace: items.Namespace) -> None:
        """Refuse a put that would file a second user's item under `actor`: its labels
        before the actor's differ from those of the actor's newest item in a label that
        is no application word (an id), as `("u2", "team")` after `("u1", "team")`."""
        if self.actor is not None:
            return
        lead = namespace[: self._index(namespace, "namespace")]
        if not lead or self._leads.get(actor) == lead:
            return
        root = items.space_of(self.tenant, actor, ())
        for rec in self.memory.records(actor=actor, limit=1, namespace=root):
            stored = items.loads(rec.value)
            if stored is None:
                continue
            other = stored.namespace[: len(lead)]
            if any(
                a != b and a.casefold() not in APP_LABELS and b.casefold() not in APP_LABELS
                for a, b in zip(lead, other, strict=False)
            ):
                raise NamespaceRefused(
                    f"namespace {namespace!r} would make {actor!r} the actor of items "
                    f"already filed under {stored.namespace!r}: the label at actor_index "
                    f"({actor!r}) is shared by what look like different users "
                    f"({other!r}, {lead!r}). Set actor_index to the position of the user "
                    "id (actor_index=0 for (user_id, 'chitchat'))"
                )
        self._leads[actor] = lead

    def _current(
        self, actor: str, namespace: items.Namespace, key: str
    ) -> tuple[items.Stored, datetime] | None:
        """The item's current value and when it was written, or None."""
        fact = self.memory.fact(actor=actor, field=items.field_of(namespace, key))
        if not fact.candidates:
            return None
        top = fact.candidates[0]
        stored = items.loads(top.value)
        if stored is None or stored.namespace != namespace or stored.key != key:
            return None
        return stored, top.known_since

    def _get(self, op: GetOp) -> Item | None:
        namespace = tuple(op.namespace)
        found = self._current(self._actor(namespace), namespace, op.key)
        return None if found is None else _item(*found)

    def _put(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        actor = self._actor(namespace)
        if op.value is None:
            self._delete(actor, namespace, op.key)
            return
        value = items.check_value(op.key, op.value)
        self._one_owner(actor, namespace)
        until = self._until(op.ttl)
        text = items.index_text(value, self._texts(value, op.index), op.key)
        held = items.digest(text, value)
        old = self._current(actor, namespace, op.key)
        if old is not None and old[0].digest == held and op.ttl is None and old[0].ttl is None:
            return  # the same value again: nothing changes
        stored = items.Stored(
            namespace=namespace,
            key=op.key,
            value=value,
            digest=held,
            created_at=None if old is None else (old[0].created_at or old[1]),
            ttl=op.ttl,
        )
        self.memory.remember(
            actor=actor,
            text=text,
            field=items.field_of(namespace, op.key),
            value=stored.dumps(),
            valid_until=until,
            namespace=items.space_of(self.tenant, actor, namespace),
        )

    def _until(self, ttl: object) -> datetime | None:
        """When an item put with `ttl` (minutes) ends; InvalidInput for a ttl that is no
        positive finite number of minutes within 1000 years (inf, NaN or 10^12 raised a
        bare OverflowError or ValueError)."""
        if ttl is None:
            return None
        if (
            isinstance(ttl, bool)
            or not isinstance(ttl, int | float)
            or not 0 < ttl <= MAX_TTL_MINUTES  # NaN fails both
        ):
            raise InvalidInput(
                f"ttl is minutes: a positive number up to {MAX_TTL_MINUTES:,} (1000 years); "
                f"got {shown(ttl)}"
            )
        return self._clock() + timedelta(minutes=ttl)

    def _texts(self, value: Mapping[str, Any], index: object) -> list[str] | None:
        if index is False:
            return []
        paths = index if isinstance(index, list) else self.fields
        if paths is None:
            return None
        return [t for path in paths for t in get_text_at_path(value, tokenize_path(path))]

    def _delete(self, actor: str, namespace: items.Namespace, key: str) -> None:
        """Erase every version of the item: looked up by its field (an index), a page at a
        time, until the lookup finds none; an erased record leaves the lookup, so one
        found again was not erased (`StoreError`, never a loop)."""
        field = items.field_of(namespace, key)
        erased: set[str] = set()
        while True:
            page = self.memory.records(actor=actor, all=True, field=field, limit=DELETE_PAGE)
            versions = [r for r in page if r.status is not Status.DELETED]
            if not versions:
                return
            for rec in versions:
                if rec.id in erased:
                    raise StoreError(
                        f"deleting item {key!r}: {rec.id} is still stored after its erasure; "
                        "run it again"
                    )
                report = self.memory.forget(record_id=rec.id)
                if not report.verified:
                    raise StoreError(
                        f"deleting item {key!r}: the erasure of {rec.id} was not verified "
                        f"(deletion job {report.job_id}, left: {report.remaining}); run it again"
                    )
                erased.add(rec.id)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        actor = self._actor(prefix, "namespace prefix")
        items.check_filter(op.filter)
        space = items.space_of(self.tenant, actor, prefix)
        wanted = op.offset + op.limit
        if op.query:
            found = self._recalled(actor, op.query, space, wanted, bool(op.filter))
        else:
            whole = not op.filter and wanted <= MAX_LISTED  # the newest MAX_LISTED suffice
            listed = self._listed(actor, space, "search", whole)
            found = [(stored, rec, None) for stored, rec in listed]
        hits = [
            SearchItem(
                namespace=s.namespace,
                key=s.key,
                value=s.value,
                created_at=s.created_at or rec.created_at,
                updated_at=rec.created_at,
                score=score,
            )
            for s, rec, score in found
            if items.matches(s.value, op.filter)
        ]
        return hits[op.offset : wanted]

    def _recalled(
        self, actor: str, query: str, space: str, wanted: int, filtered: bool
    ) -> list[tuple[items.Stored, Record, float | None]]:
        """The items under `space` for `query`: recall's packet narrowed to the namespace
        first, in its order and with its scores; then, as LangGraph's own stores do, the
        rest of what the ranking gathered (by meaning, then what recall turned down, then
        by words), each scored no higher than the one before: a store's search never
        drops an item it holds for falling under the packet's relevance floor."""
        # a filter drops some of what recall ranks: ask for more
        k = min(MAX_RECALLED, max(1, wanted * 5 if filtered else wanted))
        request = RecallAsk(actor=actor, query=query, k=k, budget=1_000_000, include_events=False,
                            namespace=space, pin=[], explain=True)  # fmt: skip
        packet = self.memory.ask(request)
        ranked: dict[str, float] = {hit.id: hit.score for hit in packet.records}
        last = min(ranked.values(), default=1.0)
        explain = packet.explain or {}
        # by meaning (the cosine of each), then the rest recall turned down (weak matches
        # among them, most similar first), then what only its words matched
        gathered = [(c["id"], float(c["cosine"])) for c in explain.get("vector", ())]
        gathered += [(c["id"], 0.0) for c in explain.get("rejected", ())]
        gathered += [(c["id"], 0.0) for c in explain.get("lexical", ())]
        for rid, similarity in gathered:
            if len(ranked) >= k:
                break
            if rid not in ranked:
                last = ranked[rid] = min(similarity, last)
        now = self._clock()
        out: list[tuple[items.Stored, Record, float | None]] = []
        for rid, score in ranked.items():
            rec = self.memory.get(rid)
            if rec.status is not Status.ACTIVE or (
                rec.valid_until is not None and rec.valid_until <= now
            ):
                continue  # superseded or expired since it was gathered
            stored = items.loads(rec.value)
            if stored is not None:
                out.append((stored, rec, score))
        return out

    def _listed(
        self, actor: str, space: str, what: str, newest_suffice: bool
    ) -> list[tuple[items.Stored, Record]]:
        """The actor's current items under `space`, newest first: its newest `MAX_LISTED`
        active records there. When there are that many and the answer needs more than
        the newest (`newest_suffice` False), `StoreError`: never an answer from a part."""
        now = self._clock()
        recs = self.memory.records(actor=actor, limit=MAX_LISTED, namespace=space)
        if len(recs) >= MAX_LISTED and not newest_suffice:
            raise StoreError(
                f"this {what} reads at most {MAX_LISTED:,} items and actor {actor!r} has at "
                f"least that many under {space}: name a longer namespace prefix (or search "
                "with a query)"
            )
        out = []
        for rec in sorted(recs, key=lambda r: r.created_at, reverse=True):
            if not (rec.field or "").startswith(items.FIELD_PREFIX):
                continue
            if rec.valid_until is not None and rec.valid_until <= now:
                continue
            stored = items.loads(rec.value)
            if stored is not None:
                out.append((stored, rec))
        return out

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = op.match_conditions or ()
        named = [
            c.path for c in conditions if c.match_type == "prefix" and self._names_actor(c.path)
        ]
        if self.actor is not None:
            actor = self.actor
        elif not named:
            raise NamespaceRefused(
                "listing namespaces must name the actor in a prefix (its label, not '*'); "
                "without one it would span actors"
            )
        else:
            actor = self._actor(named[0], "namespace prefix")
        space = items.space_of(self.tenant, actor, ())
        spaces = {s.namespace for s, _ in self._listed(actor, space, "namespace listing", False)}
        kept = [
            ns
            for ns in spaces
            if all(items.namespace_matches(ns, c.match_type, c.path) for c in conditions)
        ]
        if op.max_depth is not None:
            kept = [ns[: op.max_depth] for ns in kept]
        return sorted(set(kept))[op.offset : op.offset + op.limit]


def _check(op: Op) -> None:
    """Refuse what LangGraph's own namespace check lets through (see `items.check_op`)."""
    if isinstance(op, GetOp | PutOp):
        items.check_op(op.namespace, op.key)
    elif isinstance(op, SearchOp):
        items.check_op(op.namespace_prefix, None, op.limit, op.offset)
    elif isinstance(op, ListNamespacesOp):
        labels = [label for c in op.match_conditions or () for label in c.path]
        items.check_op(labels, None, op.limit, op.offset)
        depth = op.max_depth
        if depth is not None and (
            not isinstance(depth, int) or isinstance(depth, bool) or depth < 1
        ):
            raise InvalidInput(f"max_depth must be a whole number of 1 or more; got {depth!r}")


def _item(stored: items.Stored, written: datetime) -> Item:
    """The LangGraph item of a stored value written at `written`."""
    return Item(
        value=stored.value,
        key=stored.key,
        namespace=stored.namespace,
        created_at=stored.created_at or written,
        updated_at=written,
    )


def _utcnow() -> datetime:
    return datetime.now(UTC)
