"""The HTTP service's request bodies: pydantic at the edge, validated before any work.

Field names follow the query parameters (`actor_id`, `session_id`) and, where
one exists, the matching Bedrock AgentCore Memory operation. Unknown fields
are refused, so a typo is a readable 422 rather than a silently ignored value.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from remem.policy.metadata import valid_filter, valid_metadata
from remem.policy.scope import valid_request_id
from remem.service.audit import REASON_MAX
from remem.service.keys import KEY_NAME_MAX
from remem.timeutil import TimeText as Time
from remem.writes.batch import FieldName, FieldValue, KindName, SensitivityName, Until, WriteItem

Name = Field(min_length=1, max_length=200)
RequestId = Field(default=None, min_length=1, max_length=200)
RequestIdStr = Annotated[str | None, AfterValidator(valid_request_id)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EventIn(_Body):
    """One event of a thread (CreateEvent)."""

    actor_id: str = Name
    session_id: str = Name
    role: Literal["user", "assistant", "tool", "system"]
    text: str = Field(min_length=1, max_length=100_000)
    time: Time = Field(default=None, max_length=64, description="ISO 8601; default now")
    event_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="client id, unique per tenant: the same event again is a no-op, "
        "a different event with a used id is a 409 conflict",
    )
    metadata: dict[str, Any] | None = None


class ImportBatchIn(_Body):
    """Rows of an import, checked as the import checks them; nothing is written."""

    events: list[dict[str, Any]] = Field(min_length=1, max_length=1000)


class EventBatchIn(_Body):
    """Several events, written in one transaction: all of them or none."""

    events: list[EventIn] = Field(min_length=1, max_length=1000)


class RetrieveIn(_Body):
    """RetrieveMemoryRecords: the recall packet for a query."""

    # a `RecallAsk`'s fields (`remem.recall.request`), three named otherwise on the wire
    query: str = Field(min_length=1, max_length=100_000)
    actor: str | None = Field(default=None, min_length=1, max_length=200, alias="actor_id")
    namespace: str | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description="narrow to a namespace under /tenants/{tenant}/actors/{actor}/",
    )
    k: int = Field(default=10, ge=1, le=1000, alias="top_k")
    budget: int = Field(default=1000, ge=1, le=1_000_000, alias="budget_tokens")
    as_of: Time = Field(
        default=None, max_length=64, description="ISO 8601: what was known and valid then"
    )
    known_at: Time = Field(
        default=None, max_length=64, description="ISO 8601: what was known then (default as_of)"
    )
    valid_at: Time = Field(
        default=None, max_length=64, description="ISO 8601: what held then (default as_of)"
    )
    include_events: bool = True
    explain: bool = False
    max_sensitivity: SensitivityName | None = None
    pin: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        default=None,
        max_length=20,
        description="fields looked up exactly and put first, in `pinned` (default: the "
        "configuration's [recall] pin)",
    )
    sources: list[Literal["memory", "documents"]] | None = Field(
        default=None,
        min_length=1,
        max_length=2,
        description="what the packet draws on (default: memory only); documents come after "
        "the memories in `documents`, inside the same budget",
    )
    document_namespaces: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=20, description="namespaces whose documents to read"
    )
    metadata: Annotated[dict[str, Any] | None, AfterValidator(valid_filter)] = Field(
        default=None,
        description="only the records whose metadata has each key with an equal value, e.g. "
        '{"topic": "travel"} (top-level keys; strings, numbers, booleans, null); no raw events',
    )


class CreateItem(_Body):
    """One explicit record to write (confirmed at once)."""

    request_id: RequestIdStr = RequestId
    actor_id: str | None = Field(default=None, min_length=1, max_length=200)
    text: str = Field(min_length=1, max_length=4000)
    kind: KindName = "semantic"
    field: FieldName = None
    value: FieldValue = None
    valid_until: Until = None
    sensitivity: SensitivityName = "normal"
    namespace: str | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description="an application's own namespace under /tenants/{tenant}/actors/{actor}/, "
        "where records are named by field: only the same field repeats or supersedes one",
    )
    metadata: Annotated[dict[str, Any] | None, AfterValidator(valid_metadata)] = Field(
        default=None,
        description="the application's JSON object kept with the record (at most 8 KB, "
        "4 levels, 64 keys; screened for secrets)",
    )

    def remembered(self) -> dict[str, Any]:
        """The keywords of `remember` beyond the actor (the key's writes are explicit)."""
        return self.model_dump(exclude={"request_id", "actor_id"})


class UpdateItem(_Body):
    """A correction of one record: the new text supersedes the old record."""

    request_id: RequestIdStr = RequestId
    record_id: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1, max_length=4000)
    valid_until: Time = Field(default=None, max_length=64)


def _why() -> Any:
    return Field(
        default=None,
        max_length=REASON_MAX,
        description="why it is erased: a reason or ticket reference, kept for the receipt",
    )


class DeleteItem(_Body):
    """One record to forget."""

    request_id: RequestIdStr = RequestId
    record_id: str = Field(min_length=1, max_length=200)
    reason: str | None = _why()


class BatchCreateIn(_Body):
    records: list[CreateItem] = Field(min_length=1, max_length=100)


class BatchUpdateIn(_Body):
    records: list[UpdateItem] = Field(min_length=1, max_length=100)


class BatchDeleteIn(_Body):
    records: list[DeleteItem] = Field(min_length=1, max_length=100)


class BatchWriteIn(_Body):
    records: list[WriteItem] = Field(min_length=1, max_length=1000)


class ProposeIn(_Body):
    """A procedure proposal; inactive until a reviewer approves it."""

    text: str = Field(min_length=1, max_length=4000)
    name: str | None = Field(default=None, min_length=1, max_length=200)
    actor_id: str | None = Field(
        default=None, min_length=1, max_length=200, description="omit: shared by the tenant"
    )


class RejectIn(_Body):
    reason: str = Field(default="", max_length=2000)


class KeyIn(_Body):
    """A new API key in the caller's tenant, no stronger than the caller's own."""

    actor_id: str | None = Field(default=None, min_length=1, max_length=200)
    role: Literal["agent", "reviewer", "admin"] = "agent"
    name: str | None = Field(
        default=None,
        max_length=KEY_NAME_MAX,
        description="whose key it is, for people: shown in the console, receipts and audit rows",
    )
