"""The hooks at the call sites: one decorator line each.

    @observed                  a `Memory` method: a memory span (search_memory, ...)
    @observed_as("recall")     `Memory.ask`: the span of the operation it answers
    @observed_extraction       `Pipeline.run_group`: one extraction batch
    @observed_model_call       `ChatModel.complete`: one model call, retries included
    @observed_packing          `remem.recall.engine.pack_packet`: the candidates ranked

Off (`Telemetry.on` false, or no operation in progress for the inner two), a hook
calls through after one test; on, the work is `remem.telemetry.observe`'s.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar, cast

from remem.telemetry.core import Telemetry, active

P = ParamSpec("P")
R = TypeVar("R")


class _Deps(Protocol):
    @property
    def telemetry(self) -> Telemetry: ...

    @property
    def tenant(self) -> str: ...


class Carrier(Protocol):
    """What an observed method's object has: a `Deps` with its telemetry and tenant."""

    @property
    def deps(self) -> _Deps: ...


C = TypeVar("C", bound=Carrier)


def observed(fn: Callable[Concatenate[C, P], R]) -> Callable[Concatenate[C, P], R]:
    """A `Memory` method as a `gen_ai.memory.client` span (named by `observe.OPERATIONS`)."""
    return observed_as(fn.__name__)(fn)


def observed_as(
    method: str,
) -> Callable[[Callable[Concatenate[C, P], R]], Callable[Concatenate[C, P], R]]:
    """`observed`, the span and metrics named as the operation `method`: `Memory.ask`
    is observed as "recall", the operation every face's recall reaches."""

    def hook(fn: Callable[Concatenate[C, P], R]) -> Callable[Concatenate[C, P], R]:
        @functools.wraps(fn)
        def run(self: C, /, *args: P.args, **kwargs: P.kwargs) -> R:
            tel = self.deps.telemetry
            if not tel.on:
                return fn(self, *args, **kwargs)
            from remem.telemetry import observe

            return cast(
                R, observe.memory_call(tel, self.deps.tenant, method, fn, self, args, kwargs)
            )

        return run

    return hook


def observed_extraction(fn: Callable[Concatenate[C, P], R]) -> Callable[Concatenate[C, P], R]:
    """`Pipeline.run_group(tenant, jobs, events)` as an extraction span and its metrics."""

    @functools.wraps(fn)
    def run(self: C, /, *args: P.args, **kwargs: P.kwargs) -> R:
        tel = self.deps.telemetry
        if not tel.on:
            return fn(self, *args, **kwargs)
        from remem.telemetry import observe

        return cast(R, observe.extraction(tel, fn, self, args, kwargs))

    return run


def observed_model_call(fn: Callable[P, R]) -> Callable[P, R]:
    """`ChatModel.complete` as a `gen_ai.inference.client` span, inside the operation
    in progress (an extraction batch); counted in its tenant's metrics."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        current = active()
        if current is None:
            return fn(*args, **kwargs)
        from remem.telemetry import observe

        return cast(R, observe.model_call(current, fn, args, kwargs))

    return run


def observed_packing(fn: Callable[P, R]) -> Callable[P, R]:
    """`pack_packet(gathered, ranking)`: note how many candidates the recall ranked."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        current = active()
        if current is not None:
            ranking: Any = args[1] if len(args) > 1 else kwargs["ranking"]
            current.notes["remem.recall.candidates"] = len(ranking.items)
        return fn(*args, **kwargs)

    return run
