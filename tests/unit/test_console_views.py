"""The console's pure arrangement of API data (`remem.console.views`), case by case."""

from __future__ import annotations

from datetime import UTC, datetime

from remem.console import views

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _rec(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": "rec_1",
        "kind": "semantic",
        "namespace": "/tenants/t/actors/a/facts",
        "status": "active",
        "valid_until": None,
        "superseded_by": None,
    }
    return {**base, **kw}


def test_record_states_name_expired_and_superseded_apart() -> None:
    assert views.record_state(_rec(), NOW) == "active"
    assert views.record_state(_rec(valid_until="2026-05-31T00:00:00+00:00"), NOW) == "expired"
    assert views.record_state(_rec(valid_until="2026-06-02T00:00:00+00:00"), NOW) == "active"
    assert views.record_state(_rec(status="invalid", superseded_by="rec_2"), NOW) == "superseded"
    assert views.record_state(_rec(status="invalid"), NOW) == "invalid"
    assert views.record_state(_rec(status="proposed"), NOW) == "proposed"


def test_filters_combine() -> None:
    recs = [
        _rec(id="a"),
        _rec(id="b", kind="preference"),
        _rec(id="c", status="invalid", superseded_by="a"),
        _rec(id="d", namespace="/tenants/t/actors/a/app"),
    ]
    ids = [r["id"] for r in views.filter_records(recs, NOW)]
    assert ids == ["a", "b", "d"]
    assert [r["id"] for r in views.filter_records(recs, NOW, kind="preference")] == ["b"]
    assert [r["id"] for r in views.filter_records(recs, NOW, status="superseded")] == ["c"]
    assert [r["id"] for r in views.filter_records(recs, NOW, status="all")] == list("abcd")
    only = views.filter_records(recs, NOW, namespace="/tenants/t/actors/a/app")
    assert [r["id"] for r in only] == ["d"]


def test_explain_rows_merge_scores_and_every_reason() -> None:
    explain = {
        "lexical": [{"id": "rec_1", "bm25": 1.5}],
        "vector": [{"id": "rec_1", "cosine": 0.4}, {"id": "rec_2", "cosine": 0.1}],
        "events_lexical": ["evt_1"],
        "selected": ["rec_1"],
        "rejected": [
            {"id": "rec_2", "reason": "weak match"},
            {"id": "rec_2", "reason": "over budget"},
        ],
    }
    rows = {r["id"]: r for r in views.explain_rows(explain)}
    assert rows["rec_1"] == {
        "id": "rec_1", "bm25": 1.5, "cosine": 0.4, "outcome": "selected", "reasons": []
    }  # fmt: skip
    assert rows["rec_2"]["outcome"] == "dropped"
    assert rows["rec_2"]["reasons"] == ["weak match", "over budget"]
    assert rows["evt_1"]["outcome"] == "not ranked"


def test_word_diff_runs() -> None:
    assert views.diff("a b c", "a x c") == [(" ", "a"), ("-", "b"), ("+", "x"), (" ", "c")]
    assert views.diff("", "new text") == [("+", "new text")]
    assert views.diff("keep this old one", "keep this new one") == [
        (" ", "keep this"), ("-", "old"), ("+", "new"), (" ", "one"),
    ]  # fmt: skip


def test_word_diff_of_two_long_similar_texts_is_bounded() -> None:
    """ndiff paired similar words letter by letter: about cubic, 52 s for two texts of 571
    such words (a proposal an agent key may make). Each text's words come back, in order."""
    import string
    import threading

    letters = string.ascii_letters + string.digits
    old = " ".join(f"xxxx{c}{end}" for end in "abcdefghij" for c in letters)[:4000]
    new = " ".join(f"xxxx{letters[7 * i % 62]}{end}" for end in "uvwxyz" for i in range(62))
    got: list[list[tuple[str, str]]] = []
    worker = threading.Thread(target=lambda: got.append(views.diff(old, new)), daemon=True)
    worker.start()
    worker.join(timeout=10)  # ndiff: minutes; this: milliseconds
    assert got, "the diff of two texts of 572 and 372 similar words ran past 10 s"
    (runs,) = got
    assert " ".join(w for sign, w in runs if sign != "+") == old
    assert " ".join(w for sign, w in runs if sign != "-") == new


def test_a_key_for_one_actor_sees_only_that_actors_erasures() -> None:
    jobs = [
        {"id": 1, "target": "actor", "key": "alice", "actor": "alice"},
        {"id": 2, "target": "actor", "key": "bob", "actor": "bob"},
        {"id": 3, "target": "record", "key": "rec_9", "actor": None},  # before schema 11
        {"id": 4, "target": "record", "key": "rec_8", "actor": "alice"},
        {"id": 5, "target": "record", "key": "rec_7", "actor": "bob"},
    ]
    assert [j["id"] for j in views.deletions_for(jobs, None)] == [1, 2, 3, 4, 5]
    assert [j["id"] for j in views.deletions_for(jobs, "alice")] == [1, 4]


def test_a_failed_deletion_without_a_result_renders_as_not_verified() -> None:
    from remem.console.web import templates

    failed = {
        "id": 7,
        "target": "actor",
        "key": "alice",
        "status": "failed",
        "attempts": 3,
        "result": {},  # what the store keeps for a deletion that never finished
        "last_error": "the database went away",
        "created_at": "2026-06-01T00:00:00+00:00",
    }
    html = (
        templates()
        .get_template("erasure.html")
        .render(
            {
                "title": "Erasure",
                "who": None,
                "csrf": "",
                "notes": [],
                "error": None,
                "deletions": [failed],
                "receipt": failed,
            }
        )
    )
    assert html.count("not verified") == 2 and "the database went away" in html
