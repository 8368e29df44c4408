"""A process forked while another of its threads holds one of remem's module locks.

Written against a defect: the module-level locks of recall (`applies`, `gather`),
the vector search (`vectors`, `coarse`) and the numpy embedder were inherited held
by a child forked while another thread held them, and the child's first use of
them waited for ever for a thread it does not have; so were the audit log's, the query
caches' registry's and the PDF reader's (2026-12-07). Now each is free in the child, and
state that thread was building (the coarse pass's ONNX sessions) is built again by the
child.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from types import ModuleType

import pytest

from remem import blas
from remem.documents import pdf
from remem.embed import recent
from remem.recall import applies, gather
from remem.service import audit
from remem.store.postgres import wire
from remem.store.sqlite.vectors import coarse

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")


def _fork_while_held(lock: object, in_child: Callable[[], bool]) -> int:
    """Fork while another thread holds `lock`; the child's exit status (0: `in_child`
    returned True, 1: False or raised, -9: it hung and was killed)."""
    inside, done = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:  # type: ignore[attr-defined]
            inside.set()
            done.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(10)
    pid = os.fork()
    if pid == 0:  # the child: exit at once, without running the parent's cleanup
        try:
            os._exit(0 if in_child() else 1)
        except BaseException:
            os._exit(1)
    done.set()
    holder.join()
    deadline = time.monotonic() + 15  # a hang guard; it times nothing
    while (ended := os.waitpid(pid, os.WNOHANG)) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return -9
        time.sleep(0.02)
    return os.waitstatus_to_exitcode(ended[1])


def _takes(lock: object) -> Callable[[], bool]:
    def take() -> bool:
        with lock:  # type: ignore[attr-defined]
            return True

    return take


@pytest.mark.parametrize(
    ("module", "name"),
    [
        (applies, "_LOCK"),
        (gather, "_EMPTY_LOCK"),
        (coarse, "_LOCK"),
        (blas, "_lock"),
        (audit, "_lock"),
        (recent, "_ALL_LOCK"),
        (pdf, "_install_lock"),
        (wire, "_converted_lock"),
        (wire, "_prepared_lock"),
    ],
)
def test_a_module_lock_another_thread_held_is_free_in_a_forked_child(
    module: ModuleType, name: str
) -> None:
    lock = getattr(module, name)
    assert _fork_while_held(lock, _takes(lock)) == 0
    with lock:  # and the parent's is still a working lock
        pass


def test_a_child_forked_while_the_coarse_sessions_are_made_makes_its_own() -> None:
    saved = dict(coarse._SESSIONS)
    runs = coarse.prepare()
    coarse._SESSIONS.clear()  # as a thread making them finds them, holding the lock

    def in_child() -> bool:
        return coarse.prepare() == runs and set(coarse._SESSIONS) == {"coarse", "cast"}

    try:
        assert _fork_while_held(coarse._LOCK, in_child) == 0
    finally:
        coarse._SESSIONS.clear()
        coarse._SESSIONS.update(saved)


def test_the_blas_limit_works_in_a_child_forked_mid_use() -> None:
    def in_child() -> bool:
        with blas.one_blas_thread():
            pass
        return True

    assert _fork_while_held(blas._lock, in_child) == 0


def test_a_child_forked_while_a_scopes_own_session_is_made_makes_its_own() -> None:
    """A thread of the parent making a scope's own session (`coarse.Packed`) is not in
    the child: the child makes one itself and scores as the parent does."""
    import numpy as np

    assert coarse.prepare()
    rng = np.random.default_rng(2)
    codes = coarse.Int8Coarse.quantised(rng.standard_normal((3000, 96)).astype(np.float32))
    projected = rng.standard_normal((2, 96)).astype(np.float32)
    expected = codes.scores(projected)  # by the shared session
    codes.packed._pid = os.getpid()  # begun here, by a thread still making it (none in the child)

    def in_child() -> bool:
        codes.pack_soon()
        made = codes.wait_packed(10) and codes.packed.session is not None
        return made and bool(np.array_equal(codes.scores(projected), expected))

    assert _fork_while_held(codes.packed._lock, in_child) == 0
    assert codes.packed.session is None  # the parent's own is its thread's to make
