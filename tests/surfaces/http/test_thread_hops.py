"""The hot routes cost as few thread hops as they can: FastAPI runs every plain
(non-async) dependency, and a plain route, on its thread pool, one hop each. The key
lookup reads the database and the route recalls or writes, so those two run there;
nothing else does (an attribute read or a constant on a thread costs a request about
0.5 ms of CPU in wake-ups under load: docs/benchmarks.md). `POST /v1/memories/retrieve`
runs both in one hop (`remem.service.onehop`, tests/surfaces/http/test_one_hop.py)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from remem.service.routes import ROUTERS

HOT = {
    ("POST", "/v1/memories/retrieve"),
    ("POST", "/v1/events"),
    ("POST", "/v1/memories/batch-create"),
}


def _on_a_thread(call: Any) -> bool:
    """Whether FastAPI runs `call` on its thread pool (a plain function or __call__)."""
    if inspect.isroutine(call) or inspect.isclass(call):
        return not inspect.iscoroutinefunction(call)
    return not inspect.iscoroutinefunction(type(call).__call__)


def _calls(dependant: Dependant) -> Iterator[Any]:
    for sub in dependant.dependencies:
        yield from _calls(sub)
    if dependant.call is not None:
        yield dependant.call


@pytest.fixture(scope="module")
def routes() -> dict[tuple[str, str], APIRoute]:
    """Every route of the app, by method and path (the routers `create_app` includes)."""
    found = {}
    for router in ROUTERS:
        for route in router.routes:
            if isinstance(route, APIRoute):
                for method in route.methods:
                    found[(method, route.path)] = route
    return found


@pytest.mark.parametrize(("method", "path"), sorted(HOT))
def test_a_hot_route_hops_to_a_thread_for_its_key_and_its_work_only(
    routes: dict[tuple[str, str], APIRoute], method: str, path: str
) -> None:
    route = routes[(method, path)]
    calls = [call for call in _calls(route.dependant) if _on_a_thread(call)]
    on_threads = {getattr(call, "__name__", type(call).__name__) for call in calls}
    assert on_threads <= {"principal", route.endpoint.__name__}, on_threads
