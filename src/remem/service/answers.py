"""The HTTP service's answers, as pydantic models: what the OpenAPI document promises.

Each route names its model (`response_model`), so the document is typed and a generated
client gets named, typed methods. The models mirror the values' `as_dict` (remem.model,
remem.facts.lookup, the stores' documents and keys) field for field; they forbid other
fields, so an answer that drifts from its model fails in the tests rather than
silently dropping a field (`tests/surfaces/http/test_openapi.py`).

Every error is `ErrorBody`; `errors(...)` lists the statuses a route can answer with it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- errors ------------------------------------------------------------------------------


class ErrorDetail(_Answer):
    code: str = Field(description="stable, e.g. invalid_input, not_found, forbidden")
    message: str = Field(description="what was wrong and what to do")


class ErrorBody(_Answer):
    """Every error the service answers: `{"error": {"code", "message"}}`."""

    error: ErrorDetail


_SAYS = {
    400: "a page cursor this list did not hand out (or another list's or query's)",
    401: "no valid API key (send Authorization: Bearer KEY)",
    403: "outside the key's scope or role",
    404: "no such id for this key",
    408: "the request body did not arrive in time",
    409: "a conflict: an id used for something else, or a request still running",
    413: "the request body is over the service's limit",
    422: "malformed JSON, fields or query parameters, or content refused (a secret)",
    503: "the database cannot answer now, or too many bodies are being received (Retry-After)",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The `responses` of a route: `ErrorBody` under each status it can answer."""
    return {s: {"model": ErrorBody, "description": _SAYS[s]} for s in statuses}


# every route: a body may be too slow or too large (remem.service.bodies), and the
# database may not answer; every route with a key: 401, and 422 for its inputs
ANY = (408, 413, 503)
KEYED = (401, 408, 413, 422, 503)

# -- service ------------------------------------------------------------------------------


class Health(_Answer):
    status: Literal["ok"]
    warnings: list[str] | None = None


class Readiness(_Answer):
    status: Literal["ready", "not_ready"]
    checks: dict[str, bool] = Field(description="database, migrations, embedder, worker")
    schema_version: int
    embedder: str | None = Field(description="the embedder's name; None: lexical recall only")
    worker: Literal["running", "stopped", "elsewhere"]
    lag_seconds: float | None = Field(
        description="age of the oldest pending extraction job, when this process runs one"
    )
    pending_jobs: int | None = None


# -- events and jobs ----------------------------------------------------------------------


class FreshStart(_Answer):
    erased_at: str
    message: str


class EventCreated(_Answer):
    event_id: str
    created: bool
    fresh_start: FreshStart | None = None


class EventsCreated(_Answer):
    events: list[EventCreated]


class ImportDigests(_Answer):
    """The content digests an import makes the ids of rows without one from (None: the
    row has its own id), up to the first invalid row, which `error` names (`index`:
    its 0-based position in the batch)."""

    digests: list[str | None]
    index: int | None = None
    error: ErrorDetail | None = None


class EventOut(_Answer):
    event_id: str
    actor_id: str
    session_id: str
    role: str
    text: str
    time: str
    metadata: dict[str, Any] | None


class EventsPage(_Answer):
    events: list[EventOut]
    next_cursor: str | None


class JobCounts(_Answer):
    pending: int
    running: int
    done: int
    failed: int


class JobOut(_Answer):
    id: int
    event_id: str
    strategy: str
    status: str
    attempts: int
    last_error: str | None
    run_after: str | None
    updated_at: str


class JobList(_Answer):
    jobs: list[JobOut]
    next_cursor: str | None = None


class Retried(_Answer):
    retried: int


class Processed(_Answer):
    jobs_done: int
    records_added: int
    records_updated: int
    noops: int
    late: int
    refused: int
    skipped_tombstoned: int
    failed: int
    dropped_references: int


# -- records ------------------------------------------------------------------------------


class SourceOut(_Answer):
    type: str
    event_ids: list[str]
    strategy: str
    extractor: str


class RecordOut(_Answer):
    id: str
    tenant: str
    actor: str
    namespace: str
    kind: str
    text: str
    field: str | None
    value: str | None
    authority: str
    sensitivity: str
    status: str
    valid_from: str | None
    valid_until: str | None
    created_at: str | None
    updated_at: str | None
    supersedes: str | None
    superseded_by: str | None
    flags: list[str]
    source: SourceOut
    metadata: dict[str, Any] = Field(
        description="the application's JSON object kept with the record ({}: none)"
    )


class RecordList(_Answer):
    records: list[RecordOut]
    next_cursor: str | None = None


class HistoryOut(_Answer):
    record_id: str
    action: str
    at: str | None
    text: str | None
    status: str
    related_id: str | None
    reason: str
    by: str


class History(_Answer):
    history: list[HistoryOut]


class Deletion(_Answer):
    """A verified erasure: what was removed, and whether reading back found nothing."""

    record_id: str | None = None
    actor_id: str | None = None
    document_id: str | None = None
    deleted: dict[str, int]
    verified: bool
    remaining: dict[str, int]
    job_id: int | None
    attempts: int


class ItemResult(_Answer):
    """One item of a batch write: its own status, and the record or the error."""

    request_id: str | None
    status: int
    record_id: str | None = None
    supersedes: str | None = None
    record: RecordOut | None = None
    error: ErrorDetail | None = None
    replayed: bool | None = None
    deleted: dict[str, int] | None = None
    verified: bool | None = None
    remaining: dict[str, int] | None = None
    job_id: int | None = None
    attempts: int | None = None


class WriteResult(ItemResult):
    """One item of a mixed batch (`write_records`): its operation beside its outcome."""

    op: str


class WriteBatchResult(_Answer):
    results: list[WriteResult]
    succeeded: int
    failed: int


class BatchResult(_Answer):
    results: list[ItemResult]
    succeeded: int
    failed: int


class DeletionJob(BaseModel):
    """One logged deletion job (`remem deletions`); a backend's other columns are left out."""

    model_config = ConfigDict(extra="ignore")

    id: int
    target: str
    key: str
    status: str
    attempts: int
    result: dict[str, Any] | None
    last_error: str | None
    created_at: str | None
    actor: str | None = None
    requested_by: str | None = None
    requester: str | None = None
    reason: str | None = None


class Requester(_Answer):
    key_id: str | None
    name: str | None


class DeletionReceipt(_Answer):
    """An erasure's receipt (`remem.lifecycle.receipt`): ids and counts, no erased content."""

    receipt_version: int
    deletion_id: int
    tenant: str
    target: str
    target_id: str
    actor: str | None
    requested_by: Requester
    reason: str | None
    requested_at: str
    finished_at: str | None
    status: str
    attempts: int
    failed_attempts: bool
    verified: bool
    removed: dict[str, int]
    remaining: dict[str, int]


class DeletionList(_Answer):
    deletions: list[DeletionJob]
    next_cursor: str | None = None


# -- recall -------------------------------------------------------------------------------


class PacketItemOut(_Answer):
    id: str
    text: str
    kind: str
    namespace: str
    status: str
    source_date: str | None
    source: dict[str, Any]
    score: float
    tokens: int
    flags: list[str]
    metadata: dict[str, Any] | None = Field(
        default=None, description="the record's metadata, when it has some"
    )


class DocumentItemOut(_Answer):
    id: str
    kind: Literal["document_chunk"]
    document_id: str
    title: str
    source_uri: str | None
    version: int
    position: dict[str, Any]
    span: list[int]
    text: str
    score: float
    tokens: int
    flags: list[str]


class Conflict(_Answer):
    field: str
    record_ids: list[str]
    values: list[str]
    question: str


class PacketOut(_Answer):
    """The recall packet; `context` is the same packet as prompt text (`Packet.as_prompt`)."""

    pinned: list[PacketItemOut]
    records: list[PacketItemOut]
    conflicts: list[Conflict]
    tokens: int
    budget: int
    notes: list[str]
    documents: list[DocumentItemOut] | None = None
    explain: dict[str, Any] | None = None
    context: str = Field(description="the packet rendered for a model's prompt")


# -- facts --------------------------------------------------------------------------------


class FactValueOut(_Answer):
    record_id: str
    value: str | None
    kind: str
    namespace: str
    text: str
    authority: str
    sensitivity: str
    source_date: str | None
    valid_from: str | None
    valid_until: str | None
    known_since: str | None
    source: dict[str, Any]
    field: str = Field(description="the field it is the value of: one of a family's, for a family")


class FactOut(_Answer):
    field: str
    status: Literal["found", "conflict", "not_found"]
    value: str | None
    record_id: str | None
    source_date: str | None
    authority: str | None
    sensitivity: str | None
    valid_from: str | None
    valid_until: str | None
    known_at: str | None
    valid_at: str | None
    candidates: list[FactValueOut]


class ProfileFact(FactOut):
    tokens: int


class ProfileOut(_Answer):
    actor: str
    known_at: str | None
    valid_at: str | None
    facts: list[ProfileFact]
    conflicts: list[str]
    tokens: int
    budget: int | None
    dropped: int
    capped: int = Field(
        description="0: every record about a field was read; else the newest this many only"
    )
    note: str | None = Field(description="said when capped: older fields may be missing")


# -- documents ----------------------------------------------------------------------------


class DocumentOut(_Answer):
    id: str
    scope: str
    scope_kind: str
    scope_name: str | None
    title: str
    source_uri: str | None
    format: str
    content_hash: str
    version: int
    version_id: str
    history: list[dict[str, Any]]
    sensitivity: str
    flags: list[str]
    chars: int
    chunks: int
    created_at: str
    updated_at: str


class ChunkOut(_Answer):
    id: str
    document_id: str
    ordinal: int
    position: dict[str, Any]
    span: list[int]
    text: str
    chunk_hash: str
    flags: list[str]


class DocumentAdded(_Answer):
    status: str = Field(description="added, unchanged or updated")
    chunks: dict[str, int] = Field(description="chunks added, kept and removed")
    document: DocumentOut


class DocumentList(_Answer):
    documents: list[DocumentOut]
    next_cursor: str | None = None


class DocumentRead(_Answer):
    document: DocumentOut
    chunks: list[ChunkOut]


class DocumentHits(_Answer):
    documents: list[DocumentItemOut]


# -- subjects and keys --------------------------------------------------------------------


class SubjectExport(_Answer):
    actor_id: str
    rows: list[dict[str, Any]]


class KeyOut(_Answer):
    id: str
    name: str | None = Field(default=None, description="whose key it is, for people")
    tenant: str
    actor: str | None
    role: str
    created_at: str
    revoked_at: str | None


class NewKey(KeyOut):
    key: str = Field(description="the secret: shown in this answer only")


class KeyList(_Answer):
    keys: list[KeyOut]
    next_cursor: str | None = None


# -- the audit log ------------------------------------------------------------------------


class AuditRow(_Answer):
    """One row of the audit log (`remem.service.audit`): ids and counts, never content."""

    id: int
    at: str
    key_id: str | None = Field(description="the key that acted; null: the operator at the CLI")
    action: Literal[
        "read", "recall", "search", "transcript", "export", "erase", "approve", "reject",
        "key_create", "key_revoke",
    ]  # fmt: skip
    actor: str | None = Field(description="whose memory; null: none")
    target: str | None = Field(description="a record, deletion job, key or session id")
    detail: dict[str, str | int | bool] = Field(
        description="the surface (api, console, mcp, cli), counts; at the CLI the OS user"
    )


class AuditLog(_Answer):
    rows: list[AuditRow]
    retention_days: int = Field(description="rows older are pruned ($REMEM_AUDIT_DAYS)")
    next_cursor: str | None = None


# -- thread state -----------------------------------------------------------------------


class CheckpointOut(_Answer):
    """`Checkpoint.as_dict()` with its tenant (remem.thread.checkpoints)."""

    tenant: str
    workflow: str
    actor: str
    version: int
    step: str | None
    completed_steps: list[str]
    pending_approval: dict[str, Any] | None
    tool_call_id: str | None
    idempotency_key: str | None
    artifacts: list[Any]
    last_verified_outcome: Any
    data: dict[str, Any]
    created_at: str
    updated_at: str
    expires_at: str | None


class CheckpointAnswer(_Answer):
    checkpoint: CheckpointOut


class CheckpointsPage(_Answer):
    checkpoints: list[CheckpointOut]
    next_cursor: str | None


class CheckpointsDeleted(_Answer):
    deleted: int = Field(description="how many checkpoints were deleted")
