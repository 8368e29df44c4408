"""`Client` and `AsyncMemory` offer every public method of `Memory`, or the method is listed
here as local-only with the reason: moving from the library to a server, or to asyncio,
is a one-line change (issue 38, item 3)."""

from __future__ import annotations

import inspect

from remem.memory.aio import AsyncMemory
from remem.memory.memory import Memory
from remem.service.client import Client

# what has no meaning away from the process that holds the database, and why
LOCAL_ONLY = {
    "open": "a Client is made with a URL and a key; AsyncMemory.open wraps Memory.open",
    "close_models": "the server's model doors are the server's to close",
    "embedder": "the server chooses its embedder (GET /readyz names it)",
    "pipeline": "the extraction pipeline runs in the server's worker",
    "deps": "the library's dependency holder, not an operation",
    "store": "the database itself",
    "tenant": "over HTTP the key fixes the tenant",
    "reindex": "an operator's work beside the database, with the server's new embedder "
    "(`remem reindex`), not a request",
    "cancel_reindex": "as reindex",
}
# same name, another answer, kept for the callers it has
OTHER_ANSWER = {
    "jobs": "Client.jobs counts the jobs by status (GET /v1/jobs); Client.list_jobs lists "
    "them as Memory.jobs does",
}
# keywords that name who acts: over HTTP the server names the key instead (`who`: the
# principal a face passes to `Memory.ask`)
NAMED_BY_THE_KEY = {"by", "reviewer", "proposed_by", "who"}
# keywords the server decides: strategy (the key's writes are explicit), vacuum (erasure
# reaches the files as the server's store does), progress and lines (a local import)
SERVER_DECIDES = {"strategy", "vacuum", "progress", "lines"}


def _public(cls: type) -> set[str]:
    return {n for n, _ in inspect.getmembers(cls) if not n.startswith("_")}


def test_every_public_method_of_memory_is_on_client_or_listed() -> None:
    missing = _public(Memory) - _public(Client) - set(LOCAL_ONLY)
    assert missing == set(), f"add these to Client, or list them with a reason: {missing}"
    # a name listed as local-only that Client has is listed wrongly
    assert set(LOCAL_ONLY) & _public(Client) == set()


def test_every_public_method_of_memory_is_on_async_memory_or_listed() -> None:
    missing = _public(Memory) - _public(AsyncMemory) - set(LOCAL_ONLY)
    assert missing == set(), f"add these to AsyncMemory, or list them with a reason: {missing}"


def test_client_methods_take_memorys_keyword_arguments() -> None:
    """Where both have a method, the Client accepts the keywords a Memory caller passes
    (beyond those the key names or the server decides)."""
    not_over_http = NAMED_BY_THE_KEY | SERVER_DECIDES
    differ = {}
    for name in sorted(_public(Memory) & _public(Client) - set(OTHER_ANSWER)):
        mine = getattr(Memory, name)
        if not callable(mine):
            continue
        theirs = set(inspect.signature(getattr(Client, name)).parameters)
        wanted = set(inspect.signature(mine).parameters) - {"self"} - not_over_http
        if wanted - theirs:
            differ[name] = sorted(wanted - theirs)
    assert differ == {}
