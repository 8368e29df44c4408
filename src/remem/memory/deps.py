"""What the flows beneath `Memory` work with: one frozen bundle of dependencies.

Lifecycle (erasure, export), thread state, the record write paths, batch
writes and consolidation take a `Deps` (the store, the tenant, the clock, the
id source, the embedder, the lifetimes of new records, the configuration)
instead of the `Memory` that made it, so none of them imports the facade and
none reaches into its privates. `Memory.deps` is the bundle of a memory; a
function that takes `HasDeps` accepts either.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from remem.config.config import Config
from remem.embed.base import Embedder
from remem.ids import IdSource
from remem.memory.refusals import Refusals
from remem.store.roles import Store
from remem.telemetry.core import OFF, Telemetry

Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class Deps:
    """The store and doors of one tenant's memory; see the module docstring.

    `embedder` is called when an embedding is needed (None: lexical only), so a
    model is loaded on first use, never when the bundle is made; `searching` when a
    query is to be embedded.
    """

    store: Store
    tenant: str
    clock: Clock
    ids: IdSource
    embedder: Callable[[], Embedder | None]
    # the embedder searches use, or None and why: lexical while a reindex to the
    # embedder's model is pending (`remem.memory.embedder.BoundEmbedder.searching`)
    searching: Callable[[], tuple[Embedder | None, str | None]]
    config: Config
    ttl: Mapping[str, timedelta]
    telemetry: Telemetry = OFF  # spans and metrics (`remem.telemetry`): none by default
    # the texts the embedder refused, set aside by the catch-up of vectors (shared with
    # the copies `replace` makes: `remem.memory.refusals`)
    refused: Refusals = field(default_factory=Refusals)

    @property
    def deps(self) -> Deps:
        """The bundle itself, so a `Deps` is a `HasDeps` too."""
        return self


class HasDeps(Protocol):
    """Anything that carries a `Deps`: a `Memory`, or the bundle itself."""

    @property
    def deps(self) -> Deps:
        """The dependencies to work with."""
        ...
