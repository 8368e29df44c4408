"""A process forked while another of its threads holds a SQLite file's write turn.

Written against a defect: the per-file write turn (`_Turns`, shared by every store of
one file in a process) was inherited held by a forked child, in which the thread that
held it does not exist: the child's every write on the file waited out its busy
timeout and failed with "the SQLite database is locked ... another connection
(perhaps another process)". Now a turn the parent's other thread held is free in
the child. When that thread was inside a SQLite transaction, SQLite's own lock (kept
in the process's memory) stays held in the child for good, which SQLite does not
support; the child's writes are then refused at once, saying why and what to do.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.store.sqlite.store import SQLiteStore

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")


def _child_writes(db: Path, out: Path) -> int:
    """In the child: open the file again and write one event; the exit status, and what
    the write said in `out`."""
    try:
        with Memory(SQLiteStore(str(db), busy_timeout=3.0), embedder=HashEmbedder()) as mem:
            mem.add_event(actor="alice", session="s1", role="user", text="written by the child")
        out.write_text("ok")
        return 0
    except BaseException as exc:  # reported through the exit status and `out`
        out.write_text(f"{type(exc).__name__}: {exc}")
        return 1


def _fork_while(db: Path, holding: Callable[[SQLiteStore], AbstractContextManager[object]],
                out: Path) -> tuple[int, list[str]]:  # fmt: skip
    """Fork while another thread is inside `holding(store)`; the child's exit status and
    the texts of the events the parent reads afterwards."""
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        mem.add_event(actor="alice", session="s1", role="user", text="written by the parent")
        store = mem.store
        assert isinstance(store, SQLiteStore)
        inside, done = threading.Event(), threading.Event()

        def hold() -> None:
            with holding(store):
                inside.set()
                done.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        assert inside.wait(10)
        pid = os.fork()
        if pid == 0:  # the child: exit at once, without running the parent's cleanup
            os._exit(_child_writes(db, out))
        time.sleep(0.2)  # the child meets the parent's turn, then it ends
        done.set()
        holder.join()
        deadline = time.monotonic() + 60  # a hang guard; it times nothing
        while (ended := os.waitpid(pid, os.WNOHANG)) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                pytest.fail("the forked child hung on its first write")
            time.sleep(0.02)
        return os.waitstatus_to_exitcode(ended[1]), [e.text for e in mem.events(actor="alice")]


@contextmanager
def _a_turn(store: SQLiteStore) -> Iterator[None]:
    """The file's write turn, as a writer holds it between taking it and its BEGIN
    (e.g. while SQLite waits for another process's lock)."""
    assert store.backend.writer.acquire(timeout=5)
    try:
        yield
    finally:
        store.backend.writer.release()


def test_a_child_forked_while_another_thread_holds_the_write_turn_can_write(
    tmp_path: Path,
) -> None:
    out = tmp_path / "child.txt"
    status, texts = _fork_while(tmp_path / "m.db", _a_turn, out)
    assert (status, out.read_text()) == (0, "ok")
    assert texts == ["written by the parent", "written by the child"]


def test_a_child_forked_inside_another_threads_write_is_refused_with_the_reason(
    tmp_path: Path,
) -> None:
    out = tmp_path / "child.txt"
    status, texts = _fork_while(tmp_path / "m.db", lambda store: store.backend.tx(), out)
    assert status == 1
    said = out.read_text()
    assert said.startswith("StoreError: ") and "forked" in said and "spawn" in said, said
    assert texts == ["written by the parent"]  # nothing of the child's half-written
