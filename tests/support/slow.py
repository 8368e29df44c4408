"""Inputs built to make a parser slow, and the CPU a call spent on one (the hostile
tests of bounded work time CPU seconds of this process, not wall time: the machine is
shared)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from remem.writes.checks import MAX_EVENT_CHARS

BOUND_S = 2.0
"""CPU seconds a linear pass over a turn of `MAX_EVENT_CHARS` stays well under (about
0.1-0.7 s here), with room for load; the quadratic shapes took a minute or more."""


def cpu(call: Callable[[], Any]) -> float:
    """The CPU seconds this process spent on `call()`."""
    start = time.process_time()
    call()
    return time.process_time() - start


def filled(unit: str, tail: str = "") -> str:
    """`unit` repeated to fill a turn of `MAX_EVENT_CHARS`, then `tail`."""
    return unit * ((MAX_EVENT_CHARS - len(tail)) // len(unit)) + tail
