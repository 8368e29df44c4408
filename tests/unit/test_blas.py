"""`one_blas_thread`: one BLAS thread while any caller is inside, the count given back
when the last one leaves, whatever order several threads enter and leave in."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from remem.blas import one_blas_thread

threadpoolctl = pytest.importorskip("threadpoolctl")


def _threads() -> set[int]:
    info = threadpoolctl.threadpool_info()
    return {lib["num_threads"] for lib in info if lib["user_api"] == "blas"}


@pytest.fixture
def two_threads() -> Iterator[None]:
    """BLAS as loaded, on more than one thread (OpenBLAS on a machine of 2 cores or more).
    Nothing is set or read back here: once one thread has set OpenBLAS's count, OpenBLAS
    0.3.31 often ignores a count another thread sets, so only the limit inside is held."""
    if not _threads() or min(_threads()) < 2:
        pytest.skip("no BLAS library on more than one thread is loaded")
    yield


def test_interleaved_callers_keep_the_limit_until_the_last_leaves(two_threads: None) -> None:
    a_in, b_in, a_out, b_out = (threading.Event() for _ in range(4))
    seen: dict[str, set[int]] = {}

    def first() -> None:
        with one_blas_thread():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def second() -> None:
        a_in.wait(5)
        with one_blas_thread():
            b_in.set()
            a_out.wait(5)
            seen["after the first left"] = _threads()
        b_out.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert b_out.is_set()
    assert seen["after the first left"] == {1}
