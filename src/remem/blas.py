"""One BLAS thread while remem's own matrix work runs (`one_blas_thread`).

On 2 cores OpenBLAS's spinning worker threads take the core the query's embedding
needs: a vector search or a numpy forward pass runs its products on one thread
instead. BLAS thread counts are process-wide, so the first caller in sets every BLAS
library to one thread and the last one out gives each back the count it had: calls of
several threads never restore the limit under each other, and nested calls share it.
The libraries are looked up once per process (threadpoolctl's `limit` looked them up
at every call: 0.17 ms of a recall). Without threadpoolctl nothing is limited.

A server's processes keep one BLAS thread for good (`keep_one_blas_thread`, called from
the main thread when they start): OpenBLAS 0.3.31 often ignores a count set from any
thread but the one that set it first, so the limit a recall takes on a server's worker
thread may not hold, and OpenBLAS's second thread spins between products. Recalls from
threads over the 100,000 records of `remem bench`, CPU per recall, alternating
(load 1.7-1.8): 10.98-13.86 ms from one thread and
10.51-11.06 ms from four as things were; 6.88-7.49 and 7.43-7.44 ms with one BLAS
thread set from the main thread first (docs/decisions/service-speed.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from remem.forksafe import ForkSafeLock, after_fork_in_child

__all__ = ["keep_one_blas_thread", "one_blas_thread"]

_libraries: list[Any] | None = None  # threadpoolctl's controllers of the BLAS libraries
_lock = ForkSafeLock()
_users = 0  # callers inside `one_blas_thread` now
_found: list[tuple[Any, int]] = []  # each library and its thread count when the first entered
_kept = False  # one thread for good (`keep_one_blas_thread`): no count is given back


def _after_fork() -> None:
    global _users
    _users = 0  # the parent's callers are not in the child: the next one limits anew
    _found.clear()


after_fork_in_child(_after_fork)


def _blas() -> list[Any]:
    global _libraries
    with _lock:
        if _libraries is None:
            try:
                from threadpoolctl import ThreadpoolController
            except ImportError:
                _libraries = []
            else:
                found = ThreadpoolController().lib_controllers
                _libraries = [lib for lib in found if lib.user_api == "blas"]
        return _libraries


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the body with every BLAS library on one thread (see the module docstring)."""
    global _users
    libraries = _blas()
    if not libraries:
        yield
        return
    with _lock:
        if _users == 0:
            _found[:] = [(lib, lib.num_threads) for lib in libraries]
            for lib, threads in _found:
                if threads != 1:
                    lib.set_num_threads(1)
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0 and not _kept:
                for lib, threads in _found:
                    if threads != 1:
                        lib.set_num_threads(threads)


def keep_one_blas_thread() -> None:
    """Every BLAS library on one thread for the rest of this process (a server's: call it
    from the main thread before any other thread sets a count; see the module docstring).
    Without threadpoolctl nothing is limited."""
    global _kept
    libraries = _blas()
    with _lock:
        _kept = True
        for lib in libraries:
            if lib.num_threads != 1:
                lib.set_num_threads(1)
