"""Scope as access domain for documents: pure rules of who may read and write which.

A document lies in one scope: the whole tenant (`tenant`), one actor's
(`actor:<name>`) or a namespace's, e.g. a team's (`namespace:<name>`). What
a principal may read is decided here and passed to the storage query as the
list of scope keys it may see:

- `tenant` documents: every key of the tenant;
- `actor:A` documents: a key for the whole tenant, or one narrowed to A;
- `namespace:N` documents: a key for the whole tenant, when the request names
  N. A key narrowed to one actor carries no namespace grant (keys have none
  yet), so it reads none.

Adding or removing a document of the tenant or of a namespace needs an admin key
for the whole tenant (they are shared, as a shared record is: read-only to the agent
runtime); one of `actor:A`, a key that may act on A.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from remem.errors import Forbidden, InvalidInput
from remem.policy.dataclasses import shown
from remem.policy.scope import Principal, check_name, named

ScopeKind = Literal["tenant", "actor", "namespace"]
SCOPE_HELP = "tenant, actor:NAME or namespace:NAME"


@dataclass(frozen=True, slots=True)
class DocScope:
    """The access domain of one document."""

    kind: ScopeKind
    name: str = ""

    def key(self) -> str:
        """How the store keys it: 'tenant', 'actor:<name>' or 'namespace:<name>'."""
        return "tenant" if self.kind == "tenant" else f"{self.kind}:{self.name}"


def parse_scope(text: object) -> DocScope:
    """A scope from its text ('tenant', 'actor:alice', 'namespace:team-a')."""
    if text == "tenant":
        return DocScope("tenant")
    if isinstance(text, str):
        kind, sep, name = text.partition(":")
        if sep and kind == "actor":
            return DocScope("actor", check_name("actor", name))
        if sep and kind == "namespace":
            return DocScope("namespace", check_name("namespace", name))
    raise InvalidInput(f"scope must be {SCOPE_HELP}; got {shown(text)}")


def may_read(who: Principal, scope: DocScope) -> bool:
    """Whether `who` may read the documents of `scope` (see the module docstring)."""
    if scope.kind == "tenant":
        return True
    if scope.kind == "actor":
        return who.allows(scope.name)
    return who.actor is None


def check_write(who: Principal, scope: DocScope) -> None:
    """Forbidden unless `who` may add or remove documents of `scope`."""
    if scope.kind == "actor":
        if not who.allows(scope.name):
            raise Forbidden(f"this API key may not act on actor {named(scope.name)}")
    elif who.actor is not None:
        raise Forbidden(
            f"documents of scope {named(scope.key())} need a key for the whole tenant; "
            "this key is for one actor"
        )
    elif not who.has_role("admin"):
        # shared by the whole tenant, as a shared record is: read-only to the agent
        # runtime, so an agent cannot replace or remove the tenant's policy documents
        raise Forbidden(
            f"adding, replacing or removing documents of scope {named(scope.key())} (shared by "
            f"the whole tenant) needs an admin key; this key is {who.role}"
        )


def readable_keys(who: Principal, actor: str | None, namespaces: Sequence[str] = ()) -> list[str]:
    """The scope keys a read by `who` for `actor` (None: the key's own, if any) sees:
    the tenant's, the actor's and those of the named namespaces. A namespace the key
    may not read is Forbidden (a request may narrow what it reads, never widen it)."""
    keys = ["tenant"]
    subject = actor if actor is not None else who.actor
    if subject is not None:
        check_name("actor", subject)
        if not who.allows(subject):
            raise Forbidden(f"this API key may not act on actor {named(subject)}")
        keys.append(DocScope("actor", subject).key())
    for ns in namespaces:
        scope = DocScope("namespace", check_name("namespace", ns))
        if not may_read(who, scope):
            raise Forbidden(
                f"this API key may not read the documents of namespace {named(ns)}: that needs "
                "a key for the whole tenant"
            )
        keys.append(scope.key())
    return list(dict.fromkeys(keys))


def listable_keys(who: Principal, scope: DocScope | None) -> list[str] | None:
    """For a listing: the one scope asked for (Forbidden when `who` may not read it), or
    None for every scope `who` may read (the store is asked per key)."""
    if scope is not None:
        if not may_read(who, scope):
            raise Forbidden(f"this API key may not read the documents of {named(scope.key())}")
        return [scope.key()]
    return None
