"""Procedural memory: proposed by the runtime, active only once a reviewer approves."""

from __future__ import annotations

import pytest

from remem import InvalidInput, Memory, Status
from remem.errors import ConflictError


def test_a_proposal_is_never_recalled_until_approved(mem: Memory) -> None:
    rec = mem.propose_procedure(text="Refunds over $100 need a manager's approval", name="refunds")
    assert rec.status is Status.PROPOSED
    packet = mem.recall(actor="alice", query="refund approval manager")
    assert rec.id not in [it.id for it in packet.records]
    assert mem.procedures() == []
    approved = mem.approve(rec.id, reviewer="dana")
    assert approved.status is Status.ACTIVE
    packet = mem.recall(actor="alice", query="refund approval manager")
    assert packet.records[0].id == rec.id and packet.records[0].kind == "procedural"
    (hist_propose, hist_approve) = mem.history(rec.id)
    assert (hist_propose.action, hist_propose.by) == ("PROPOSE", "agent")
    assert (hist_approve.action, hist_approve.by) == ("APPROVE", "dana")


def test_shared_procedures_reach_every_actor_but_actor_ones_do_not(mem: Memory) -> None:
    shared = mem.propose_procedure(text="Always confirm the travel dates before booking")
    own = mem.propose_procedure(text="Book Bob's travel with the corporate card", actor="bob")
    mem.approve(shared.id, reviewer="dana")
    mem.approve(own.id, reviewer="dana")
    alice = [it.id for it in mem.recall(actor="alice", query="booking travel").records]
    bob = [it.id for it in mem.recall(actor="bob", query="booking travel card").records]
    assert shared.id in alice and own.id not in alice
    assert shared.id in bob and own.id in bob


def test_a_new_version_supersedes_the_approved_one(mem: Memory) -> None:
    first = mem.propose_procedure(text="Escalate after 2 days", name="esc")
    v1 = mem.approve(first.id, reviewer="dana")
    v2 = mem.propose_procedure(text="Escalate after 1 day", name="esc")
    assert [r.id for r in mem.procedures()] == [v1.id]  # still v1 until v2 is approved
    mem.approve(v2.id, reviewer="erin")
    assert [r.id for r in mem.procedures()] == [v2.id]
    old = mem.get(v1.id)
    assert old.status is Status.INVALID and old.superseded_by == v2.id
    assert {r.id for r in mem.procedures(all=True)} == {v1.id, v2.id}


def test_rejected_proposal_stays_inactive_with_its_reason(mem: Memory) -> None:
    rec = mem.propose_procedure(text="Skip identity checks for returning customers")
    rejected = mem.reject(rec.id, reviewer="dana", reason="violates KYC policy")
    assert rejected.status is Status.INVALID
    assert mem.history(rec.id)[-1].reason == "violates KYC policy"
    assert mem.recall(actor="alice", query="identity checks customers").records == ()
    with pytest.raises(ConflictError, match="not a proposal"):
        mem.approve(rec.id, reviewer="dana")
    with pytest.raises(ConflictError, match="invalid, not a proposal"):
        mem.reject(rec.id, reviewer="dana", reason="twice")


def test_only_proposals_can_be_reviewed(mem: Memory) -> None:
    rec = mem.remember(actor="alice", text="Prefers tea")
    with pytest.raises(ConflictError, match="active, not a proposal"):
        mem.approve(rec.id, reviewer="dana")
    with pytest.raises(InvalidInput):
        mem.propose_procedure(text="  ")
    with pytest.raises(InvalidInput):
        mem.approve(rec.id, reviewer="")


def test_remember_cannot_write_a_procedure(mem: Memory) -> None:
    with pytest.raises(InvalidInput, match="procedural"):
        mem.remember(actor="alice", text="Always refund everything", kind="procedural")
