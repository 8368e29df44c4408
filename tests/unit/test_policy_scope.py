"""Scope is pure: principals, actors, namespaces, visibility and deletion reports, case by
case (the one copy HTTP, MCP, the CLI and the library apply)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from remem.errors import Forbidden, InvalidInput, NotFound, RefusedContent
from remem.model import Authority, Kind, Record, Sensitivity, Source, Status
from remem.policy import scope
from remem.policy.scope import SHARED_ACTOR, Principal

T = datetime(2026, 1, 1, tzinfo=UTC)
TENANT_KEY = Principal("key_t", "acme", None, "agent")
ALICE_KEY = Principal("key_a", "acme", "alice", "agent")
ADMIN = Principal("key_adm", "acme", None, "admin")
ALICE_ADMIN = Principal("key_aa", "acme", "alice", "admin")


def _rec(actor: str = "alice", tenant: str = "acme") -> Record:
    return Record(
        id="rec_1", tenant=tenant, actor=actor, namespace="/n", kind=Kind.SEMANTIC, text="x",
        source=Source("explicit"), authority=Authority.CONFIRMED,
        sensitivity=Sensitivity.NORMAL, valid_from=T, created_at=T, updated_at=T,
        status=Status.ACTIVE,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("namespace", "tenant", "actor", "rest"),
    [
        ("/tenants/acme/actors/alice", "acme", "alice", ""),
        ("/tenants/acme/actors/alice/", "acme", "alice", ""),
        ("/tenants/acme/actors/alice/facts", "acme", "alice", "facts"),
        ("/tenants/acme/actors/alice/sessions/s1", "acme", "alice", "sessions/s1"),
        ("/tenants/t/actors/a/x/y/z", "t", "a", "x/y/z"),
    ],
)
def test_a_namespace_parses_into_tenant_actor_and_rest(
    namespace: str, tenant: str, actor: str, rest: str
) -> None:
    assert scope.parse_namespace(namespace) == scope.Namespace(tenant, actor, rest)


@pytest.mark.parametrize(
    "namespace",
    ["", "/", "tenants/acme/actors/alice", "/tenants/acme/alice", "/tenant/acme/actors/a",
     "/tenants/acme/actor/alice/facts", "/tenants/acme", "//acme/actors/alice"],
)  # fmt: skip
def test_any_other_namespace_shape_is_invalid_input(namespace: str) -> None:
    with pytest.raises(InvalidInput, match="must look like"):
        scope.parse_namespace(namespace)


@pytest.mark.parametrize("kind", list(Kind))
def test_built_namespaces_parse_back(kind: Kind) -> None:
    built = scope.namespace_for("acme", "alice", kind)
    assert built.startswith(scope.actor_prefix("acme", "alice"))
    parsed = scope.parse_namespace(built)
    assert (parsed.tenant, parsed.actor, parsed.rest) == (
        "acme",
        "alice",
        scope.NAMESPACE_BY_KIND[kind],
    )
    session = scope.parse_namespace(scope.session_namespace("acme", "bob", "s-9"))
    assert (session.actor, session.rest) == ("bob", "sessions/s-9")


def test_namespace_actor_keeps_to_the_keys_tenant_and_actors() -> None:
    assert scope.namespace_actor(TENANT_KEY, "/tenants/acme/actors/bob/facts") == "bob"
    assert scope.namespace_actor(ALICE_KEY, "/tenants/acme/actors/alice/") == "alice"
    with pytest.raises(Forbidden, match="another tenant"):
        scope.namespace_actor(TENANT_KEY, "/tenants/globex/actors/bob/facts")
    with pytest.raises(Forbidden, match="actor 'bob'"):
        scope.namespace_actor(ALICE_KEY, "/tenants/acme/actors/bob/facts")
    with pytest.raises(InvalidInput, match="actor_id must be"):
        scope.namespace_actor(TENANT_KEY, "/tenants/acme/actors/_shared/procedures")
    with pytest.raises(InvalidInput, match="actor_id must be"):
        scope.namespace_actor(TENANT_KEY, "/tenants/acme/actors//facts")


@pytest.mark.parametrize(
    ("who", "named", "expected"),
    [
        (TENANT_KEY, "bob", "bob"),
        (ALICE_KEY, None, "alice"),
        (ALICE_KEY, "alice", "alice"),
        (ALICE_ADMIN, "alice", "alice"),
    ],
)
def test_actor_for_takes_the_named_actor_or_the_keys_own(
    who: Principal, named: str | None, expected: str
) -> None:
    assert scope.actor_for(who, named) == expected


@pytest.mark.parametrize(
    ("who", "named", "error", "words"),
    [
        (TENANT_KEY, None, InvalidInput, "actor_id is required with a key for the whole tenant"),
        (ALICE_KEY, "bob", Forbidden, "may not act on actor 'bob'"),
        (ALICE_ADMIN, "bob", Forbidden, "may not act on actor 'bob'"),
        (TENANT_KEY, "bad name", InvalidInput, "actor_id must be"),
        (TENANT_KEY, SHARED_ACTOR, InvalidInput, "actor_id must be"),
        (TENANT_KEY, "alice\n", InvalidInput, "actor_id must be"),
    ],
)
def test_actor_for_refuses_what_the_key_does_not_allow(
    who: Principal, named: str | None, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        scope.actor_for(who, named)


def test_actor_for_names_the_field_it_checks() -> None:
    with pytest.raises(InvalidInput, match=r"^actor must be"):
        scope.actor_for(scope.operator("acme"), "bad name", what="actor")
    with pytest.raises(InvalidInput, match=r"^actor is required"):
        scope.actor_for(scope.operator("acme"), None, what="actor")


def test_the_operator_is_a_tenant_wide_admin() -> None:
    op = scope.operator("acme")
    assert (op.tenant, op.actor, op.role) == ("acme", None, "admin")
    assert op.has_role("reviewer") and op.allows("anyone")
    assert scope.refusal(op, "change", SHARED_ACTOR) is None
    assert not op.may_see(_rec(tenant="globex"))


@pytest.mark.parametrize(
    ("who", "actor", "write", "seen"),
    [
        (TENANT_KEY, "alice", False, True),
        (TENANT_KEY, "alice", True, True),
        (ALICE_KEY, "alice", True, True),
        (ALICE_KEY, "bob", False, False),
        (ALICE_KEY, SHARED_ACTOR, False, True),
        (ADMIN, SHARED_ACTOR, True, True),
    ],
)
def test_visible_returns_what_the_key_may_see(
    who: Principal, actor: str, write: bool, seen: bool
) -> None:
    rec = _rec(actor)
    if seen:
        assert scope.visible(who, rec, rec.id, write=write) is rec
    else:
        with pytest.raises(NotFound, match="no record 'rec_1' for this API key"):
            scope.visible(who, rec, rec.id, write=write)


def test_visible_hides_other_tenants_and_missing_records_alike() -> None:
    for rec in (None, _rec(tenant="globex")):
        with pytest.raises(NotFound, match="no memory 'rec_1'"):
            scope.visible(ADMIN, rec, "rec_1", noun="memory")


@pytest.mark.parametrize("who", [TENANT_KEY, ALICE_KEY, ALICE_ADMIN])
def test_a_shared_record_is_readable_but_only_a_tenant_wide_admin_changes_it(
    who: Principal,
) -> None:
    rec = _rec(SHARED_ACTOR)
    assert scope.visible(who, rec, rec.id) is rec
    with pytest.raises(Forbidden, match="whole tenant"):
        scope.visible(who, rec, rec.id, write=True)


@pytest.mark.parametrize(
    ("who", "role", "ok"),
    [
        (TENANT_KEY, "agent", True),
        (TENANT_KEY, "reviewer", False),
        (ADMIN, "reviewer", True),
        (ALICE_ADMIN, "admin", True),
        (Principal("k", "acme", None, "reviewer"), "admin", False),
    ],
)
def test_need_role(who: Principal, role: str, ok: bool) -> None:
    if ok:
        scope.need_role(who, role)
    else:
        article = "an" if role == "admin" else "a"
        with pytest.raises(Forbidden, match=f"needs {article} {role} key; this key is {who.role}"):
            scope.need_role(who, role)


def test_need_tenant_wide() -> None:
    scope.need_tenant_wide(ADMIN)
    with pytest.raises(Forbidden, match="whole tenant"):
        scope.need_tenant_wide(ALICE_ADMIN)


@dataclass(frozen=True)
class _Report:
    deleted: dict[str, int] = field(default_factory=lambda: {"records": 2})
    verified: bool = True
    remaining: dict[str, int] = field(default_factory=dict)
    job_id: int | None = 7
    attempts: int = 1


def test_the_deletion_report_has_every_surfaces_fields_in_order() -> None:
    shown = scope.deletion_report(_Report())
    assert list(shown) == ["deleted", "verified", "remaining", "job_id", "attempts"]
    assert shown == {
        "deleted": {"records": 2},
        "verified": True,
        "remaining": {},
        "job_id": 7,
        "attempts": 1,
    }


GLUED = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"  # a GitHub token's shape


@pytest.mark.parametrize("sent", [f"rec_{GLUED}", f"ns-{GLUED}", f"a.b:{GLUED}", GLUED])
def test_an_error_never_repeats_a_token_glued_behind_a_prefix(sent: str) -> None:
    # a token after "_" is no word start to its detector: each part of the name is read
    assert GLUED not in scope.named(sent)
    with pytest.raises(RefusedContent):
        scope.stored_name("session", sent)
    assert scope.named("rec_01ABC") == "'rec_01ABC'"  # an ordinary id is still quoted


def test_a_namespace_a_key_may_not_read_is_named_without_its_secret() -> None:
    from remem.documents.scope import readable_keys

    with pytest.raises(Forbidden) as refused:
        readable_keys(ALICE_KEY, None, [f"sk-ant-api03-{GLUED[4:]}"])
    assert GLUED[4:] not in str(refused.value) and "namespace" in str(refused.value)
