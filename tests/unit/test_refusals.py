"""What the catch-up of vectors sets aside stays bounded however many tenants there are
(`remem.memory.refusals`): per tenant and embedder, in all across tenants (the oldest of
any tenant go first), and in tenant-embedder pairs (the least recently looked up go)."""

from __future__ import annotations

import logging

import pytest

from remem.memory import refusals
from remem.memory.refusals import Aside, Refusals


@pytest.fixture(autouse=True)
def quiet(caplog: pytest.LogCaptureFixture) -> None:
    """Each text set aside is logged; tens of thousands of lines are not what is tested."""
    caplog.set_level(logging.ERROR, logger="remem")


def fill(held: Refusals, tenants: int, each: int) -> list[tuple[Aside, str]]:
    """Set `each` texts aside for each of `tenants` tenants, tenant after tenant: every
    (aside, id), oldest first."""
    added = []
    for t in range(tenants):
        aside = held.of(f"tenant-{t}", "embed-x")
        for i in range(each):
            aside.add("record", f"r-{t}-{i}", f"actor-{t}", "too long")
            added.append((aside, f"r-{t}-{i}"))
    return added


def test_the_whole_is_bounded_across_many_tenants_and_the_oldest_go_first() -> None:
    held = Refusals(most=1_000, asides=10_000, each=100)
    added = fill(held, tenants=500, each=10)  # 5,000 texts of 500 tenants
    assert held.held() == 1_000
    assert sum(len(a.refused) for a, _ in {id(a): (a, "") for a, _ in added}.values()) == 1_000
    kept = [a.has("record", i) for a, i in added]
    assert kept == [False] * 4_000 + [True] * 1_000  # the newest 1,000, of any tenant
    assert held.of("tenant-0", "embed-x").of_actor("actor-0") == []
    assert len(held.of("tenant-499", "embed-x").of_actor("actor-499")) == 10


def test_the_constants_bound_a_service_with_many_tenants() -> None:
    held = Refusals()
    per = refusals.MAX_HELD // 400
    fill(held, tenants=500, each=per)  # a quarter more than the whole may hold
    assert held.held() == refusals.MAX_HELD
    assert held.pairs() == 500
    assert not held.of("tenant-0", "embed-x").refused
    assert len(held.of("tenant-499", "embed-x").refused) == per


def test_one_tenant_keeps_at_most_its_own_bound() -> None:
    held = Refusals(most=1_000, asides=10, each=50)
    added = fill(held, tenants=1, each=120)
    aside = held.of("tenant-0", "embed-x")
    assert len(aside.refused) == 50 and held.held() == 50
    assert [aside.has("record", i) for _, i in added] == [False] * 70 + [True] * 50
    # the whole counts what the tenant dropped too
    aside.drop("record", added[-1][1])
    assert held.held() == 49 and not aside.has("record", added[-1][1])


def test_the_pairs_are_bounded_and_the_least_recently_looked_up_go() -> None:
    held = Refusals(most=1_000, asides=3, each=50)
    fill(held, tenants=3, each=2)
    first = held.of("tenant-0", "embed-x")  # looked up again: now the most recent
    fill_more = held.of("tenant-9", "embed-x")
    fill_more.add("record", "r-9", "actor-9", "too long")
    assert held.pairs() == 3
    assert held.of("tenant-0", "embed-x") is first and first.has("record", "r-0-1")
    assert held.held() == 2 + 2 + 1  # tenant-1's went with its pair
    gone = held.of("tenant-1", "embed-x")  # made anew: asked once more
    assert not gone.refused and gone.resume == (0, 0)


def test_an_aside_let_go_during_a_pass_stays_out_of_the_whole() -> None:
    held = Refusals(most=10, asides=1, each=5)
    passing = held.of("tenant-0", "embed-x")
    held.of("tenant-1", "embed-x")  # lets tenant-0's go while its pass holds it
    for i in range(8):
        passing.add("record", f"r-{i}", "actor", "too long")
    assert len(passing.refused) == 5  # its own bound still holds
    assert held.held() == 0
    other = held.of("tenant-1", "embed-x")
    for i in range(12):
        other.add("record", f"s-{i}", "actor", "too long")
    assert held.held() == 5 and len(other.refused) == 5


def test_a_reason_is_cut_and_an_aside_alone_keeps_its_own_bound() -> None:
    alone = Aside()
    for i in range(refusals.MAX_REFUSALS + 5):
        alone.add("event", f"e-{i}", None, "x" * 1_000)
    assert len(alone.refused) == refusals.MAX_REFUSALS
    assert not alone.has("event", "e-0") and alone.has("event", f"e-{refusals.MAX_REFUSALS + 4}")
    assert len(alone.refused[("event", "e-9")].reason) == refusals.MAX_REASON
