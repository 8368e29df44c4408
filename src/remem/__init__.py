"""remem: long-term memory for AI agents that a team runs itself.

The public API: `Memory` (open a database, add events, process, remember,
recall, forget), `AsyncMemory` (the same for asyncio) and the value types
they hand back.

`import remem` loads only the errors and the value types: `Memory`,
`AsyncMemory`, `ImportResult`, `ProcessResult` and `Client` are imported when
first named (`remem.Memory`, `from remem import Memory`), so that a process
pays for what it uses (asyncio, the facade, httpx) and nothing else.
"""

import importlib
from typing import TYPE_CHECKING

from remem.errors import (
    ConflictError,
    InvalidCursor,
    InvalidInput,
    NotFound,
    RefusedContent,
    RememError,
    SchemaTooNew,
    StoreCorrupt,
    StoreError,
    StoreUnavailable,
)
from remem.model import (
    Authority,
    Candidate,
    Event,
    HistoryEntry,
    Kind,
    Packet,
    PacketItem,
    Record,
    Role,
    Sensitivity,
    Source,
    Status,
)

if TYPE_CHECKING:
    from remem.memory.aio import AsyncMemory
    from remem.memory.memory import Memory
    from remem.pipeline.jobs import ProcessResult
    from remem.service.client import Client
    from remem.writes.events import ImportResult

__version__ = "0.1.0"

# what `__getattr__` imports on first use: name -> its module
_LAZY = {
    "AsyncMemory": "remem.memory.aio",
    "Client": "remem.service.client",
    "ImportResult": "remem.writes.events",
    "Memory": "remem.memory.memory",
    "ProcessResult": "remem.pipeline.jobs",
}


def __getattr__(name: str) -> object:
    """`Memory`, `AsyncMemory`, `ImportResult`, `ProcessResult`, `Client`: imported on
    first use (see the module docstring), then kept as attributes of the package."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'remem' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AsyncMemory",
    "Authority",
    "Candidate",
    "Client",
    "ConflictError",
    "Event",
    "HistoryEntry",
    "ImportResult",
    "InvalidCursor",
    "InvalidInput",
    "Kind",
    "Memory",
    "NotFound",
    "Packet",
    "PacketItem",
    "ProcessResult",
    "Record",
    "RefusedContent",
    "RememError",
    "Role",
    "SchemaTooNew",
    "Sensitivity",
    "Source",
    "Status",
    "StoreCorrupt",
    "StoreError",
    "StoreUnavailable",
    "__version__",
]
