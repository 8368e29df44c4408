"""A standing preference the recall found applies by its own domains, whether or not it
was among the records nearest a domain's centre (`remem.recall.applies.POOL` of them), on
both backends.

The domain search reads only the `POOL` records nearest each domain; with more of the
person's records about the home than that, a preference about their dog that the
request's own searches found got no share of the bonus its neighbours got, and ranked
below them by that accident (PrefEval, 50 preferences per actor: "Does not want to crate
train their dog" for "How can I manage my dog's behaviour?").
"""

from __future__ import annotations

import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.ids import counter_ids
from remem.recall import applies
from tests.support.clock import Clock

REQUEST = "How should I train my dog?"  # home, by its words
HOME = [  # about the home, each in words of its own
    "Repaints the hallway every spring", "Hoovers the stairs on Sundays",
    "Keeps tomato seedlings on the kitchen windowsill", "Hates clutter on worktops",
    "Bought an oak dining table last year", "Irons shirts while listening to radio",
    "Grows roses along the front fence", "Washes windows with vinegar",
    "Prefers linen curtains to blinds", "Stores winter coats in the loft",
    "Fixes dripping taps without a plumber", "Sweeps the patio after storms",
    "Likes a firm mattress", "Has a wood-burning stove in the lounge",
    "Dislikes wallpaper with floral prints", "Composts vegetable peelings",
    "Mows the lawn every fortnight", "Keeps spare bulbs under the sink",
    "Cleans the oven twice a year", "Wants a bigger bathroom mirror",
    "Polishes brass door handles", "Folds towels into thirds",
    "Has a leaking gutter above the porch", "Waters houseplants on Mondays",
    "Avoids scented candles in the bedroom", "Hangs laundry outdoors when sunny",
    "Likes bookshelves built into alcoves", "Defrosts the freezer each autumn",
]  # fmt: skip


def test_a_found_preference_applies_though_the_domain_search_did_not_reach_it(
    db: str, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one record read near each domain's centre: the person's records about the home
    # outnumber what the search reads, as 50 preferences outnumber 25
    monkeypatch.setattr(applies, "POOL", 1)
    mem = Memory.open(db, embedder=HashEmbedder(), clock=clock, ids=counter_ids())
    try:
        for text in HOME:  # more records about the home than the domain search reads
            mem.remember(actor="ana", text=text, kind="preference")
        crate = mem.remember(
            actor="ana", text="Never lets the dog sleep in a crate", kind="preference"
        )
        assert len(mem.records(actor="ana", limit=1000)) > len(applies.DOMAINS)
        packet = mem.recall(actor="ana", query=REQUEST, explain=True)
        assert packet.explain is not None
        applying = {a["id"]: a["reason"] for a in packet.explain["applies"]}
        assert "home" in applying.get(crate.id, "")
    finally:
        mem.close()
