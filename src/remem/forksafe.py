"""Process-wide locks that a forked child finds free.

`os.fork()` copies a lock in whatever state it was in, but not the thread that
held it: a child forked while another thread of the parent held a module-level
lock would block for ever on its first use. A `ForkSafeLock` is replaced by a
fresh one in the child, and `after_fork_in_child` runs a module's own reset
there (state a thread was building when the fork came is dropped, so the child
builds it again rather than waiting for a thread it does not have).

Imports are locks too: a thread importing a module while another forks leaves the
module's import lock held in the child, whose own import of it then waits for ever.
`import_before_fork` names modules that a lazy import would load: they are imported
in the parent just before it forks (waiting for a thread that is importing them to
finish), so the child finds them loaded and takes no import lock.

One `os.register_at_fork` hook serves every module; values level: imports
nothing of remem.
"""

from __future__ import annotations

import importlib
import os
import threading
import weakref
from collections.abc import Callable
from types import TracebackType

_LOCKS: weakref.WeakSet[ForkSafeLock] = weakref.WeakSet()
_RESETS: list[Callable[[], None]] = []
_IMPORTS: dict[str, None] = {}  # modules imported before a fork, in the order named


class ForkSafeLock:
    """A `threading.Lock` for module state, made anew in a forked child."""

    __slots__ = ("__weakref__", "_lock", "held_at_fork")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.held_at_fork = False  # in a child: whether the parent held it when forking
        _LOCKS.add(self)

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._lock.release()

    def locked(self) -> bool:
        """Whether some thread holds it now."""
        return self._lock.locked()

    def _after_fork(self) -> None:
        self.held_at_fork = self._lock.locked()
        self._lock = threading.Lock()


def after_fork_in_child(reset: Callable[[], None]) -> None:
    """Run `reset` in every child forked from now on, after its locks are fresh."""
    _RESETS.append(reset)


def import_before_fork(*modules: str) -> None:
    """Import `modules` in this process before it next forks (see the module docstring);
    cheap to call again: each is imported once."""
    for name in modules:
        _IMPORTS.setdefault(name, None)


def _before() -> None:
    for name in list(_IMPORTS):
        importlib.import_module(name)


def _in_child() -> None:
    for lock in list(_LOCKS):
        lock._after_fork()
    for reset in _RESETS:
        reset()


os.register_at_fork(before=_before, after_in_child=_in_child)
