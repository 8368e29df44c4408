"""LangGraph's checkpointer on remem's thread state: `RememCheckpointer`.

    from remem import Memory
    from remem.integrations.langgraph import RememCheckpointer

    saver = RememCheckpointer(Memory.open("memory.db"), actor="u42")  # or a Client
    graph = builder.compile(checkpointer=saver)
    graph.invoke(inputs, {"configurable": {"thread_id": "chat-1"}})

One checkpointer writes one actor's thread state (`actor=`), in the memory's tenant,
so `forget(actor=...)` (and `/v1/subjects/{actor}/forget`) erases that actor's
LangGraph threads with the rest of their memory. Sync and async (`aput`, ...: the
same calls, each in a worker thread).

How LangGraph's state maps onto remem checkpoints (`remem.thread.api`): every
LangGraph checkpoint is one remem checkpoint, and the pending writes of one task on
it another, named

    lg.{thread}.{ns}.{checkpoint_id}             the checkpoint
    lg.{thread}.{ns}.{checkpoint_id}.w.{task}    one task's pending writes

where `{thread}`, `{ns}` and `{task}` are sha256 digests (20, 12 and 16 hex) of the
thread id, the checkpoint namespace and the task id (LangGraph's are free text;
remem's names are not). Checkpoint ids are LangGraph's uuid6 strings, so names sort
by time: a thread's history is one name-ordered scan (`checkpoint_scan`), newest first.

What remem sees of each, and what it does not:

- seen: the thread id, namespace, checkpoint id and parent id (in `data`), the
  metadata as JSON (`data.metadata`: source, step, parents, run id and your own keys;
  `list(filter=...)` matches on it), the step as `step` ("langgraph loop 3"), and an
  interrupt as `pending_approval`, so retention keeps a thread that waits for a person;
- opaque: the checkpoint itself (channel values, channel versions, versions seen) and
  each write's value, as LangGraph's serializer made them (`[type, base64]`). remem
  cannot query them; the adapter still screens every string inside them for secrets
  before saving (a `RefusedContent`, as on every write path), and remem checks the size.

Bounds: a checkpoint (all its channel values, serialized, base64) and one task's writes
are each a remem checkpoint of at most `MAX_STATE_BYTES` (256 KiB) of JSON; a larger
one is refused (`InvalidInput`), never cut. A listing reads `PAGE` rows at a time; one
across namespaces (no `checkpoint_ns` in the config) or threads (`config=None`) reads
them all to order them by checkpoint id.

Not offered: `delete_for_runs`, `copy_thread`, `prune` (LangGraph's optional ones).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any

import ormsgpack
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.types import INTERRUPT

from remem.errors import ConflictError, InvalidInput, NotFound, RefusedContent
from remem.integrations.common import ThreadState, thread_state
from remem.memory.aio import AsyncMemory
from remem.memory.memory import Memory
from remem.policy.dataclasses import refusal_reason, secret_kinds
from remem.policy.scope import check_name
from remem.thread.checkpoints import Checkpoint as Saved

__all__ = ["RememCheckpointer"]

PREFIX = "lg."
PAGE = 200  # rows one scan reads
WRITE_TRIES = 20  # saves of one task's writes that lost a race before giving up
FORMAT = 1  # the shape of `data` below; a later one is read by a later adapter
_CHECKPOINT_ID = re.compile(r"[0-9A-Fa-f-]{36}")


class RememCheckpointer(BaseCheckpointSaver[int]):
    """A LangGraph `BaseCheckpointSaver` on one actor's remem thread state (see module)."""

    def __init__(
        self,
        memory: Memory | AsyncMemory | ThreadState,
        *,
        actor: str,
        retention: timedelta | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self._remem = thread_state(memory)
        self.actor = check_name("actor", actor)
        self.retention = retention

    # -- reads ------------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint the config names (`checkpoint_id`), or its namespace's latest."""
        thread, ns = _thread_ns(config)
        base = _name(thread, ns)
        cid = get_checkpoint_id(config)
        prefix = base + _check_id(cid) if cid else base
        for found in self._walk(prefix, None, thread, ns):
            return found
        return None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of a namespace, a thread (no `checkpoint_ns`) or the
        actor (`config=None`); metadata equal to `filter`, older than `before`."""
        conf = dict(config["configurable"]) if config else {}
        thread = conf.get("thread_id")
        ns = conf.get("checkpoint_ns")
        below = get_checkpoint_id(before) if before else None
        if thread is not None and ns is not None:
            upto = None if below is None else _name(str(thread), str(ns)) + _check_id(below)
            found: Iterator[CheckpointTuple] = self._walk(
                _name(str(thread), str(ns)), upto, str(thread), str(ns)
            )
        else:
            prefix = PREFIX if thread is None else _name(str(thread))
            everything = sorted(
                self._walk(prefix, None, None if thread is None else str(thread), None),
                key=lambda t: t.checkpoint["id"],
                reverse=True,
            )
            found = (t for t in everything if below is None or t.checkpoint["id"] < below)
        count = 0
        for tup in found:
            if limit is not None and count >= limit:
                return
            if filter and any(tup.metadata.get(k) != v for k, v in filter.items()):
                continue
            count += 1
            yield tup

    def _walk(
        self, prefix: str, before: str | None, thread: str | None, ns: str | None
    ) -> Iterator[CheckpointTuple]:
        """The checkpoints named under `prefix` (below `before`), by name descending, each
        with the writes named after it (which sort just above it)."""
        writes: dict[str, list[Saved]] = {}
        cursor = before
        while True:
            page = self._remem.checkpoint_scan(
                actor=self.actor, prefix=prefix, before=cursor, limit=PAGE
            )
            for row in page:
                data = row.state.data
                if data.get("langgraph") != FORMAT:
                    continue  # not one of ours
                if (thread is not None and data["thread_id"] != thread) or (
                    ns is not None and data["checkpoint_ns"] != ns
                ):
                    continue  # another thread whose digest shares the prefix
                if "task_id" in data:
                    writes.setdefault(row.workflow.split(".w.")[0], []).append(row)
                else:
                    yield self._tuple(data, writes.pop(row.workflow, []))
            if len(page) < PAGE:
                return
            cursor = page[-1].workflow

    def _tuple(self, data: Mapping[str, Any], write_rows: Sequence[Saved]) -> CheckpointTuple:
        thread, ns, cid = data["thread_id"], data["checkpoint_ns"], data["checkpoint_id"]
        pending = sorted(
            (
                (str(w[0]), str(w[1]), int(w[2]), str(w[3]), w[4])
                for row in write_rows
                for w in row.state.data["writes"]
            ),
            key=lambda w: writes_sort_key(w[3], w[0], w[2]),
        )
        parent = data.get("parent_checkpoint_id")
        metadata = data["metadata"]
        if metadata is None:
            metadata = self._load(data["metadata_typed"])
        return CheckpointTuple(
            config=_config(thread, ns, cid),
            checkpoint=self._load(data["checkpoint"]),
            metadata=metadata,
            parent_config=None if parent is None else _config(thread, ns, parent),
            pending_writes=[(task, ch, self._load(v)) for task, ch, _, _, v in pending],
        )

    # -- writes -----------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Save a checkpoint (all its channel values) as one remem checkpoint."""
        thread, ns = _thread_ns(config)
        cid = _check_id(checkpoint["id"])
        md: dict[str, Any] = dict(get_checkpoint_metadata(config, metadata))
        try:
            json.dumps(md, allow_nan=False)
            plain: dict[str, Any] | None = md
        except (TypeError, ValueError):  # not JSON: kept opaque, and not filterable
            plain = None
        data = {
            "langgraph": FORMAT,
            "thread_id": thread,
            "checkpoint_ns": ns,
            "checkpoint_id": cid,
            "parent_checkpoint_id": config["configurable"].get("checkpoint_id"),
            "metadata": plain,
            "metadata_typed": None if plain is not None else self._dump("metadata", md),
            "checkpoint": self._dump("checkpoint", checkpoint),
        }
        step = f"langgraph {md.get('source', 'checkpoint')} {md.get('step', '')}".strip()
        name = _name(thread, ns) + cid
        state = {"step": step[:200], "data": data}
        try:
            self._remem.checkpoint_save(
                actor=self.actor, workflow=name, state=state, retention=self.retention
            )
        except ConflictError:  # saved before (a retried put): the newest state stands
            current = self._remem.checkpoint_load(actor=self.actor, workflow=name)
            self._remem.checkpoint_save(
                actor=self.actor,
                workflow=name,
                state=state,
                expected_version=current.version,
                retention=self.retention,
            )
        return _config(thread, ns, cid)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Save one task's writes on a checkpoint: a write already saved at its index is
        kept, except the special channels (error, interrupt, ...), which are replaced."""
        thread, ns = _thread_ns(config)
        cid = _check_id(config["configurable"]["checkpoint_id"])
        name = f"{_name(thread, ns)}{cid}.w.{_digest(task_id, 16)}"
        new: dict[int, list[Any]] = {}
        for idx, (ch, value) in enumerate(writes):
            at = WRITES_IDX_MAP.get(ch, idx)
            new[at] = [task_id, ch, at, task_path, self._dump(f"write to {ch}", value)]
        for _ in range(WRITE_TRIES):
            try:
                current: Saved | None = self._remem.checkpoint_load(actor=self.actor, workflow=name)
            except NotFound:
                current = None
            kept = {} if current is None else {w[2]: w for w in current.state.data["writes"]}
            merged = {**kept, **{i: w for i, w in new.items() if i < 0 or i not in kept}}
            interrupted = any(w[1] == INTERRUPT for w in merged.values())
            state = {
                "step": "langgraph writes",
                "pending_approval": {"langgraph": "interrupt", "checkpoint_id": cid}
                if interrupted
                else None,
                "data": {
                    "langgraph": FORMAT,
                    "thread_id": thread,
                    "checkpoint_ns": ns,
                    "checkpoint_id": cid,
                    "task_id": task_id,
                    "writes": [merged[i] for i in sorted(merged)],
                },
            }
            try:
                self._remem.checkpoint_save(
                    actor=self.actor,
                    workflow=name,
                    state=state,
                    expected_version=None if current is None else current.version,
                    retention=self.retention,
                )
                return
            except ConflictError:
                continue  # another writer of this task saved first: merge again
        raise ConflictError(
            f"the writes of task {task_id!r} were saved concurrently {WRITE_TRIES} times; retry"
        )

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread, in every namespace."""
        self._remem.checkpoint_delete(actor=self.actor, prefix=_name(str(thread_id)))

    # -- async: the same calls, each in a worker thread ---------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """`get_tuple` in a worker thread."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """`list` in a worker thread (read whole, then yielded)."""
        found = await asyncio.to_thread(
            lambda: [*self.list(config, filter=filter, before=before, limit=limit)]
        )
        for tup in found:
            yield tup

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """`put` in a worker thread."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """`put_writes` in a worker thread."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """`delete_thread` in a worker thread."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    # -- serialization ----------------------------------------------------------------------

    def _dump(self, what: str, value: Any) -> tuple[str, str]:
        """LangGraph's serialization of `value` as `[type, base64]`, refused when a string
        inside it holds a secret."""
        kind, raw = self.serde.dumps_typed(value)
        kinds = secret_kinds(_strings(kind, raw))
        if kinds:
            raise RefusedContent(
                f"the LangGraph {what} {refusal_reason(kinds)}; keep a reference to it (a "
                "vault path or a payment token) in the graph state instead"
            )
        return kind, base64.b64encode(raw).decode("ascii")

    def _load(self, typed: Sequence[str]) -> Any:
        return self.serde.loads_typed((typed[0], base64.b64decode(typed[1])))


# -- names and values --------------------------------------------------------------------------


def _strings(kind: str, raw: bytes) -> list[str]:
    """Every string inside a serialized value, for secret screening: msgpack is unpacked
    whole (its extension types too, which hold the fields of LangGraph's objects)."""
    if kind == "json":
        return _strings_of(json.loads(raw))
    if kind != "msgpack":
        return []  # bytes, None: no text

    def ext(_code: int, data: bytes) -> Any:
        return ormsgpack.unpackb(data, ext_hook=ext, option=ormsgpack.OPT_NON_STR_KEYS)

    return _strings_of(ormsgpack.unpackb(raw, ext_hook=ext, option=ormsgpack.OPT_NON_STR_KEYS))


def _strings_of(value: Any) -> list[str]:
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


def _digest(text: str, n: int) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:n]


def _name(thread: str, ns: str | None = None) -> str:
    """The name prefix of a thread (`ns` None) or of one namespace of it."""
    base = f"{PREFIX}{_digest(thread, 20)}."
    return base if ns is None else f"{base}{_digest(ns, 12)}."


def _check_id(value: object) -> str:
    if not isinstance(value, str) or not _CHECKPOINT_ID.fullmatch(value):
        raise InvalidInput(
            f"a LangGraph checkpoint id is a uuid string (LangGraph makes them); got {value!r}"
        )
    return value


def _thread_ns(config: RunnableConfig) -> tuple[str, str]:
    conf = config.get("configurable") or {}
    thread = conf.get("thread_id")
    if thread is None or thread == "":
        raise InvalidInput(
            'a LangGraph checkpointer needs config {"configurable": {"thread_id": ...}}'
        )
    return str(thread), str(conf.get("checkpoint_ns", ""))


def _config(thread: str, ns: str, cid: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": cid}}
