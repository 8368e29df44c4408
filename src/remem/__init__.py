"""remem: long-term memory for AI agents that a team runs itself.

The public API: `Memory` (open a database, add events, process, remember,
recall, forget), `AsyncMemory` (the same for asyncio) and the value types
they hand back.
"""

from remem.aio import AsyncMemory
from remem.errors import (
    ConflictError,
    InvalidInput,
    NotFound,
    RefusedContent,
    RememError,
    SchemaTooNew,
    StoreCorrupt,
    StoreError,
    StoreUnavailable,
)
from remem.memory import ImportResult, Memory
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
from remem.pipeline import ProcessResult

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # remem.Client talks HTTP: load it (and httpx) only when asked for
    if name == "Client":
        from remem.service.client import Client

        return Client
    raise AttributeError(f"module 'remem' has no attribute {name!r}")


__all__ = [
    "AsyncMemory",
    "Authority",
    "Candidate",
    "Client",
    "ConflictError",
    "Event",
    "HistoryEntry",
    "ImportResult",
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
