"""An erasure asked for over HTTP, and its row in the audit log, in that order: the one
sequence behind forgetting a subject (`admin.forget_subject`) and a record (`DELETE
/v1/memories/{id}`, a batch's delete)."""

from __future__ import annotations

from typing import Any

from remem.policy import scope
from remem.policy.scope import Principal
from remem.service import audit
from remem.service.audit import asked
from remem.service.routes.deps import Service


def erase(
    svc: Service,
    who: Principal,
    via: str | None,
    reason: str | None,
    *,
    actor: str,
    record_id: str | None = None,
) -> dict[str, Any]:
    """Forget `record_id` (an actor's record), or everything of `actor` when it is None,
    keeping who asked and why (`reason`) in the deletion job; then note the erasure, its
    job and whether it was verified in the audit log as `actor`'s. The answer's fields
    are `scope.deletion_report`'s. A refused erasure (a reason that repeats what is
    erased, `remem.lifecycle.reasons`) erases nothing and notes nothing."""
    report = svc.memory(who.tenant).forget(
        record_id=record_id,
        actor=actor if record_id is None else None,
        asked=asked(who, reason, via),
    )
    done = str(report.job_id)
    audit.note(svc.store.audit, who, "erase", via, actor=actor, target=done,
               verified=report.verified)  # fmt: skip
    return scope.deletion_report(report)
