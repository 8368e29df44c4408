"""How many recalls a server process runs at once (`default_recall_threads`): the size of
`remem serve`'s recall lane (`remem.service.onehop.RecallHop`) and `remem mcp`'s."""

from __future__ import annotations

import os

from remem.errors import InvalidInput


def default_recall_threads(workers: int = 1) -> int:
    """Recalls a server process runs at once by default: the cores this process may run
    on, shared among the `workers` processes of `remem serve --workers`, at least one.

    A recall is CPU work (the query's embedding, the vector scan, ranking), so threads
    beyond the cores only take turns at the interpreter lock and the cores, and finish
    together late (the runs: docs/decisions/service-speed.md, "One recall at a time per
    core")."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, cores // max(1, workers))


def recall_lane(recall_threads: int | None, name: str = "recall_threads") -> int:
    """The size of a lane a server was given (None: `default_recall_threads()`), the
    recall lane's or another's (`name`: the setting, as errors call it); InvalidInput
    unless it is a whole number of at least 1."""
    lane = default_recall_threads() if recall_threads is None else recall_threads
    if isinstance(lane, bool) or not isinstance(lane, int) or lane < 1:
        raise InvalidInput(f"{name} must be a whole number >= 1, not {lane!r}")
    return lane
