"""Which words of a request are evidence of what it asks for (`remem.recall.rank`):
not the words it asks with, and not the words a long text holds by its length."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from remem.model import Authority, Kind, Record, Sensitivity, Source, Status
from remem.policy.applies import asking_words
from remem.recall.fusion import length_share, without_asking, word_evidence
from remem.recall.gather import Gathered
from remem.recall.query import understand
from remem.recall.rank import rank
from remem.recall.request import RecallRequest
from remem.store.roles import Hit, Scope

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def record(rid: str, text: str, kind: Kind = Kind.PREFERENCE) -> Record:
    when = NOW - timedelta(days=30)
    return Record(
        id=rid, tenant="t", actor="alice", namespace="/tenants/t/actors/alice", kind=kind,
        text=text, source=Source("explicit", ()), authority=Authority.CONFIRMED,
        sensitivity=Sensitivity.NORMAL, valid_from=when, created_at=when, updated_at=when,
        status=Status.ACTIVE,
    )  # fmt: skip


def order(
    query: str, records: list[Record], words: set[str], cosines: dict[str, float]
) -> list[str]:
    g = Gathered(
        request=RecallRequest(Scope("t", "alice"), query, k=10, budget=1000),
        query=understand(query),
        lexical=tuple(Hit(r.id, 1.0) for r in records if r.id in words),
        vector=tuple(cosines.items()),
        records={r.id: r for r in records},
    )
    return [it.id for it in rank(g, NOW).items]


@pytest.mark.parametrize(
    ("request_text", "left"),
    [
        (
            "What are some good first pets for a young family like ours?",
            "first pets for a young family ours",
        ),
        (
            "Can you recommend some options for a trip to Lisbon?",
            "can you some for a trip to lisbon",
        ),
        ("I'm looking for a gift for my sister", "i m a gift my sister"),
        ("What are some must-watch series for me?", "must watch series for me"),
        ("Can you recommend some?", "Can you recommend some?"),  # nothing else: as it was
    ],
)
def test_the_words_a_request_asks_with_are_left_out(request_text: str, left: str) -> None:
    words = understand(request_text).words
    assert without_asking(words, asking_words(request_text)) == left


def test_a_request_asked_with_like_ranks_by_meaning_past_it() -> None:
    # "like" of "a young family like ours" is held by a preference of the same kind of
    # thing ("pets") that says "does not like"; the one that should shape it, nearer in
    # meaning, holds neither
    q = "What are some good first pets for a young family like ours to consider?"
    recs = [
        record("flea", "Does not like using commercial flea and tick treatments on their pets"),
        record("dander", "Is allergic to pet dander, so they can only have hypoallergenic animals"),
    ]
    assert order(q, recs, {"flea", "dander"}, {"flea": 0.40, "dander": 0.43}) == [
        "dander",
        "flea",
    ]


PASTED = (
    "This paper reports an initial study of prompt programming for building interface "
    "mock-ups. We asked whether a large language model could make a working prototype "
    "faster than designers do by hand, and ran an exploratory study with twelve "
    "designers over two weeks. With the model in the loop they built functional "
    "prototypes in a third of the time, tested them with users earlier and understood "
    "sooner how the new functions would fit into their design. We describe the tool, "
    "the study and its limits, and discuss what a prototyping process built around "
    "such models could look like for small teams that have no engineers of their own, "
    "and for larger ones whose engineers are scarce. We close with open questions."
)


def test_a_long_text_holding_a_requests_words_by_its_length_does_not_lead() -> None:
    q = "How can I make learning a new programming language more engaging?"
    recs = [
        record("paper", PASTED, kind=Kind.SEMANTIC),
        record("gamified", "Strongly dislikes gamified learning approaches"),
        *(record(f"r{i}", f"Short note number {i}", kind=Kind.SEMANTIC) for i in range(4)),
    ]
    cosines = {"paper": 0.20, "gamified": 0.39} | {f"r{i}": 0.16 for i in range(4)}
    assert order(q, recs, {"paper", "gamified"}, cosines)[0] == "gamified"


def test_length_share_is_bm25s_length_normalisation_at_most_one() -> None:
    assert length_share(10, 20.0) == 1.0 == length_share(20, 20.0)
    assert length_share(40, 20.0) == pytest.approx(2.2 / (1 + 1.2 * 1.75))
    texts = {"long": PASTED, "short": "a new language", "x": "hello", "y": "hi there"}
    plain = word_evidence("a new programming language", texts)
    scaled = word_evidence("a new programming language", texts, by_length=True)
    assert scaled["short"] == plain["short"]
    assert 0 < scaled["long"] < plain["long"] / 2
