"""remem: long-term memory for AI agents that a team runs itself.

The public API: `Memory` (open a database, add events, process, remember,
recall, forget) and the value types it hands back.
"""

from remem.errors import (
    ConflictError,
    InvalidInput,
    NotFound,
    RefusedContent,
    RememError,
    SchemaTooNew,
    StoreCorrupt,
    StoreError,
)
from remem.memory import ImportResult, Memory, ProcessResult
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

__version__ = "0.1.0"

__all__ = [
    "Authority",
    "Candidate",
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
    "__version__",
]
