"""Scope: who may act on which memory, decided from the principal, never from the text
of a request (DESIGN.md section 4).

Pure functions of data, the one copy every surface applies (the library, the
CLI, HTTP and MCP):

- names: `check_name`, `key_problem`, `namespace_problem`, `valid_request_id`;
- namespaces: built (`namespace_for`, `actor_prefix`, `session_namespace`) and
  parsed (`parse_namespace`) here only;
- principals: `Principal` (what a verified key allows; `operator` for the
  library and the CLI, a tenant-wide admin), roles, `refusal` / `authorize`
  for shared records, actor resolution (`actor_for`, `namespace_actor`),
  record visibility (`visible`);
- the deletion report every surface answers a forget with (`deletion_report`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from remem.errors import Forbidden, InvalidInput, NotFound, RefusedContent
from remem.model import Kind, Record
from remem.policy.dataclasses import refusal_reason, secret_kinds, shown
from remem.policy.folding import format_chars

# The subject of a tenant's shared records (procedures, policy). Names checked
# by `check_name` cannot start with "_", so no user can act as it.
SHARED_ACTOR = "_shared"

ROLES = ("agent", "reviewer", "admin")
_RANK = {role: i for i, role in enumerate(ROLES)}

# matched whole (fullmatch): `$` would also match before a final newline ("alice\n")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:+-]{0,199}")

# client keys (request ids, idempotency keys): printable ASCII without spaces, matched whole
_KEY = re.compile(r"[\x21-\x7e]+")
# namespaces: no spaces, line ends or control characters, matched whole
_NAMESPACE = re.compile(r"[^\s\x00-\x1f\x7f-\x9f]{1,1000}")

NAMESPACE_BY_KIND: dict[Kind, str] = {
    Kind.SEMANTIC: "facts",
    Kind.PREFERENCE: "preferences",
    Kind.SUMMARY: "summaries",
    Kind.EPISODIC: "episodes",
    Kind.PROCEDURAL: "procedures",
}


# -- names --------------------------------------------------------------------------------


def check_name(what: str, value: object) -> str:
    """Validate a tenant, actor or session name; return it unchanged."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise InvalidInput(
            f"{what} must be 1-200 characters of letters, digits and . _ @ : + - "
            f"starting with a letter or digit; got {shown(value)}"
        )
    return value


def named(value: object) -> str:
    """How an error names an id or a name a request sent: quoted when it is a well-formed
    name holding no secret (`'bob'`, `'rec_1'`), else only described, as `shown` does
    (a token sent where an id goes is never repeated)."""
    if isinstance(value, str) and _NAME.fullmatch(value) and not _name_secrets(value):
        return repr(value)
    return shown(value)


def stored_name(what: str, value: object) -> str:
    """`check_name` for a name a write stores (an actor, session, event id, workflow):
    also RefusedContent when it holds a secret, as every other stored string is
    screened (a token pasted where an id goes would be kept, listed and exported).
    Reads take `check_name` alone: a name stored before is still readable."""
    name = check_name(what, value)
    refuse_secret_in(what, name)
    return name


def refuse_secret_in(what: str, name: str) -> None:
    """RefusedContent naming `what` and the kinds of secret when `name` (a name or a
    client key a write stores) holds one; the name is never shown."""
    kinds = _name_secrets(name)
    if kinds:
        raise RefusedContent(refusal_reason(kinds, what=f"the {what}"))


_GLUE = re.compile(r"[._@:+-]")  # what joins the parts of a name: a part may be a token


@functools.lru_cache(maxsize=4096)
def _name_secrets(name: str) -> tuple[str, ...]:
    """The kinds of secret in a name, read whole and from after each joint: a token
    glued behind a prefix ("rec_ghp_...") is no token to a detector that wants it to
    start a word. At most 200 characters (`_NAME`) are read for each joint."""
    # actors and sessions repeat across a batch of events: screened once each
    kinds = secret_kinds(name)
    for joint in _GLUE.finditer(name[:200]):
        if kinds:
            break
        kinds = secret_kinds(name[joint.end() :])
    return tuple(kinds)


def key_problem(what: str, value: object, limit: int = 200) -> str | None:
    """Why `value` is no usable client key (a request id, an idempotency key), or None
    when it is one: 1-`limit` printable ASCII characters without spaces."""
    if isinstance(value, str) and len(value) <= limit and _KEY.fullmatch(value):
        return None
    got = shown(value)
    return f"{what} must be 1-{limit} printable ASCII characters without spaces; got {got}"


def namespace_problem(value: object) -> str | None:
    """Why `value` is no usable namespace text, or None (where it may lie is the caller's)."""
    if isinstance(value, str) and _NAMESPACE.fullmatch(value):
        # invisible format characters (zero-width spaces and joiners, direction marks, a
        # byte-order mark) would make two namespaces that read the same
        if not format_chars(value):
            return None
    return (
        "namespace must be 1-1000 characters without spaces, line ends, control characters "
        "or invisible ones (zero-width characters, direction marks)"
    )


def valid_request_id(value: str | None) -> str | None:
    """A request id as given (None stays None); ValueError, as pydantic validators raise,
    for one that `key_problem` refuses. Used by every surface's batch model."""
    if value is not None and (problem := key_problem("request_id", value)) is not None:
        raise ValueError(problem)
    if value is not None and (kinds := _name_secrets(value)):
        raise ValueError(refusal_reason(kinds, what="the request_id"))  # kept in the ledger
    return value


# -- namespaces ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Namespace:
    """A parsed namespace: `/tenants/{tenant}/actors/{actor}/{rest}`."""

    tenant: str
    actor: str
    rest: str


def namespace_for(tenant: str, actor: str, kind: Kind) -> str:
    """The namespace a record of `kind` about `actor` lives in."""
    return f"{actor_prefix(tenant, actor)}{NAMESPACE_BY_KIND[kind]}"


def actor_prefix(tenant: str, actor: str) -> str:
    """The namespace prefix that holds everything about one actor."""
    return f"/tenants/{tenant}/actors/{actor}/"


def session_namespace(tenant: str, actor: str, session: str) -> str:
    """The namespace a raw event of one session is shown under in a recall packet."""
    return f"{actor_prefix(tenant, actor)}sessions/{session}"


def parse_namespace(namespace: str) -> Namespace:
    """The tenant, actor and rest of a namespace; InvalidInput for any other shape.

    The parts are taken as written (a name is checked where it is used, e.g.
    by `namespace_actor`): `/tenants/t/actors/a` and `/tenants/t/actors/a/facts`
    both parse, `/tenants/t/a` does not.
    """
    parts = namespace.split("/", 5)
    if len(parts) < 5 or parts[0] != "" or parts[1] != "tenants" or parts[3] != "actors":
        raise InvalidInput("namespace must look like /tenants/{tenant}/actors/{actor}/...")
    return Namespace(parts[2], parts[4], parts[5] if len(parts) > 5 else "")


# -- principals ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: what a verified key allows (`operator` for the library and CLI)."""

    key_id: str
    tenant: str
    actor: str | None  # None: every actor of the tenant
    role: str
    name: str | None = None  # the key's name, for people (receipts, audit rows)

    def has_role(self, role: str) -> bool:
        """Whether this principal holds `role` or a stronger one."""
        return _RANK[self.role] >= _RANK[role]

    def allows(self, actor: str) -> bool:
        """Whether this principal may act on `actor`'s memory."""
        return self.actor is None or self.actor == actor

    def may_see(self, record: Record | None, *, write: bool = False) -> bool:
        """Whether this principal may read (or, with `write`, change) a record.

        The tenant's shared procedures are readable by every key; only a
        tenant-wide admin may change them (`authorize`).
        """
        if record is None or record.tenant != self.tenant:
            return False
        if not (self.allows(record.actor) or record.actor == SHARED_ACTOR):
            return False
        return not write or refusal(self, "change", record.actor) is None


OPERATOR_KEY = "operator"


def operator(tenant: str) -> Principal:
    """The principal of the library and the CLI: the operator, a tenant-wide admin."""
    return Principal(OPERATOR_KEY, tenant, None, "admin")


Action = Literal["propose", "review", "change"]


def refusal(who: Principal, action: Action, actor: str) -> str | None:
    """Why `who` may not `action` a record about `actor` (SHARED_ACTOR: the tenant's
    shared records), or None when it may. Pure: the one rule every surface applies.

    propose  a record for an actor the key allows; a shared one needs a tenant-wide key
    review   approve or reject: a reviewer for an actor it allows; a shared proposal
             needs a tenant-wide reviewer
    change   update or forget one record: one of an actor the key allows; a shared
             record needs a tenant-wide admin
    """
    shared = actor == SHARED_ACTOR
    if action == "review" and not who.has_role("reviewer"):
        return f"reviewing a procedure needs a reviewer key; this key is {who.role}"
    if shared:
        if who.actor is not None:
            what = {"propose": "proposing", "review": "reviewing", "change": "changing"}[action]
            return (
                f"{what} a procedure shared by the whole tenant needs a key for the whole "
                f"tenant; this key is for actor {who.actor!r}"
            )
        if action == "change" and not who.has_role("admin"):
            return (
                "changing or forgetting a record shared by the whole tenant needs an admin "
                f"key; this key is {who.role}"
            )
        return None
    if not who.allows(actor):
        return f"this API key may not act on actor {actor!r}"
    return None


def authorize(who: Principal, action: Action, actor: str) -> None:
    """Raise Forbidden unless `who` may `action` a record about `actor` (see `refusal`)."""
    reason = refusal(who, action, actor)
    if reason is not None:
        raise Forbidden(reason)


def need_role(who: Principal, role: str) -> None:
    """Forbidden unless `who` holds `role` or a stronger one."""
    if not who.has_role(role):
        article = "an" if role[:1] in "aeiou" else "a"
        raise Forbidden(f"this operation needs {article} {role} key; this key is {who.role}")


def need_tenant_wide(who: Principal) -> None:
    """Forbidden unless `who` is a key for the whole tenant."""
    if who.actor is not None:
        raise Forbidden("this needs a key for the whole tenant; this key is for one actor")


# -- actors and records --------------------------------------------------------------------


def allow(who: Principal, actor: str, *, what: str = "actor_id") -> str:
    """`actor`, a valid name `who` may act on; InvalidInput or Forbidden otherwise."""
    check_name(what, actor)
    if not who.allows(actor):
        raise Forbidden(f"this API key may not act on actor {named(actor)}")
    return actor


def actor_for(who: Principal, actor_id: str | None, *, what: str = "actor_id") -> str:
    """The actor a request names, or the key's own; never one the key does not allow."""
    if actor_id is None:
        if who.actor is None:
            raise InvalidInput(f"{what} is required with a key for the whole tenant")
        return who.actor
    return allow(who, actor_id, what=what)


def namespace_actor(who: Principal, namespace: str) -> str:
    """The actor whose namespace this is; another tenant's namespace is Forbidden."""
    parsed = parse_namespace(namespace)
    if parsed.tenant != who.tenant:
        raise Forbidden("this API key may not read another tenant's namespace")
    return allow(who, parsed.actor)


def recall_actor(who: Principal, actor_id: str | None, namespace: str | None) -> str:
    """The actor a key's recall reads: the one named, else the owner of `namespace`
    (another tenant's is Forbidden; one of another actor than `actor_id` is refused),
    else the key's own; never one the key does not allow."""
    if namespace is not None:
        owner = namespace_actor(who, namespace)
        if actor_id is not None and actor_id != owner:
            raise InvalidInput("namespace belongs to another actor than actor_id")
        actor_id = owner
    return actor_for(who, actor_id)


def visible(
    who: Principal,
    record: Record | None,
    record_id: str,
    *,
    write: bool = False,
    noun: str = "record",
) -> Record:
    """`record` (looked up by `record_id`) if `who` may see it, and with `write` change it:
    NotFound for none or one outside the key's scope (its existence is not revealed),
    Forbidden for a shared record the key may only read."""
    if record is None or not who.may_see(record):
        raise NotFound(f"no {noun} {named(record_id)} for this API key")
    if write:
        authorize(who, "change", record.actor)
    return record


# -- deletion reports ----------------------------------------------------------------------


class DeletionOutcome(Protocol):
    """What a deletion reports (the store's `ForgetReport`)."""

    @property
    def deleted(self) -> dict[str, int]: ...
    @property
    def verified(self) -> bool: ...
    @property
    def remaining(self) -> dict[str, int]: ...
    @property
    def job_id(self) -> int | None: ...
    @property
    def attempts(self) -> int: ...


def deletion_report(report: DeletionOutcome) -> dict[str, Any]:
    """The fields every surface answers a forget with, in this order."""
    return {
        "deleted": report.deleted,
        "verified": report.verified,
        "remaining": report.remaining,
        "job_id": report.job_id,
        "attempts": report.attempts,
    }
