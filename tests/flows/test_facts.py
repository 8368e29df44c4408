"""Exact facts by structured lookup (issue 21): `Memory.fact`, `Memory.profile`, pinned
facts in recall, the field vocabulary, bi-temporal as-of; the library and the CLI on
both backends (HTTP and MCP: tests/surfaces/http/test_service.py and
tests/surfaces/mcp/test_mcp.py, each case on SQLite and on PostgreSQL)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from remem import Memory
from remem.cli.main import main
from remem.config.config import load_config
from remem.embed import HashEmbedder
from remem.errors import InvalidInput
from remem.ids import counter_ids
from remem.policy.fields import VOCABULARY, canonical_field
from remem.store.roles import Store
from remem.store.sqlite.store import SQLiteStore
from tests.support.clock import Clock

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture
def target(db: str) -> str:
    """A new database on each backend (the `db` fixture of tests/conftest.py)."""
    return db


def _store(target: str) -> Store:
    if target.startswith("postgres"):
        from remem.store.postgres.store import PostgresStore

        return PostgresStore(target, max_size=4)
    return SQLiteStore(target)


@pytest.fixture
def fmem(target: str, clock: Clock) -> Iterator[Memory]:
    m = Memory(_store(target), embedder=HashEmbedder(), clock=clock, ids=counter_ids())
    try:
        yield m
    finally:
        m.close()


def say(mem: Memory, clock: Clock, text: str, actor: str = "ana") -> None:
    """A user turn now, extracted at once by the offline extractor."""
    mem.add_event(actor=actor, session="s1", role="user", text=text, time=clock())
    mem.process()


# -- the vocabulary ----------------------------------------------------------------------


def test_canonical_field_folds_synonyms_and_keeps_free_fields() -> None:
    assert canonical_field("home") == canonical_field("City") == "home city"
    assert canonical_field("  Home   City ") == "home city"
    assert canonical_field("tz") == canonical_field("time zone") == "timezone"
    assert canonical_field("occupation") == "role"
    assert canonical_field("hometown") == "origin"  # where they are from, not where they live
    assert canonical_field("relation:wife") == "partner"
    assert canonical_field("Favourite  Band") == "favourite band"  # free, normalised
    assert canonical_field("allergy:peanut") == "allergy:peanut"  # a family key, kept
    with pytest.raises(InvalidInput):
        canonical_field("   ")
    words = [w for f in VOCABULARY for w in (f.name, *f.synonyms)]
    assert len(words) == len(set(words)), "a word may mean one field only"


def test_live_in_and_home_is_set_one_field_and_a_move_supersedes_it(
    fmem: Memory, clock: Clock
) -> None:
    say(fmem, clock, "I live in Porto")
    clock.advance(days=1)
    say(fmem, clock, "My home is Porto")
    homes = [r for r in fmem.records(actor="ana") if r.field == "home city"]
    assert [r.value for r in homes] == ["Porto"]  # one field: the second was a repeat
    before = clock()
    clock.advance(days=10)
    say(fmem, clock, "I moved to Lyon")

    by_home, by_name = (
        fmem.fact(actor="ana", field="home"),
        fmem.fact(actor="ana", field="home city"),
    )
    assert by_home == by_name
    assert by_name.status == "found" and by_name.found is not None
    assert by_name.found.value == "Lyon"
    assert fmem.get(by_name.found.record_id).supersedes == homes[0].id
    old = fmem.fact(actor="ana", field="city", as_of=before)
    assert old.found is not None and old.found.value == "Porto"
    assert old.found.record_id == homes[0].id
    # known now, about then: the superseded record still says where she lived
    hindsight = fmem.fact(actor="ana", field="home", valid_at=before)
    assert hindsight.found is not None and hindsight.found.record_id == homes[0].id


def test_remember_field_synonym_is_the_same_field(fmem: Memory, clock: Clock) -> None:
    first = fmem.remember(actor="ana", text="Ana's timezone is Europe/Lisbon", field="Time Zone",
                          value="Europe/Lisbon")  # fmt: skip
    assert first.field == "timezone"
    clock.advance(hours=1)
    second = fmem.remember(actor="ana", text="Ana is on Paris time", field="tz",
                           value="Europe/Paris")  # fmt: skip
    assert second.supersedes == first.id
    got = fmem.fact(actor="ana", field="timezone")
    assert got.found is not None and got.found.record_id == second.id


def test_a_new_statement_of_a_field_without_a_value_supersedes_the_old(
    fmem: Memory, clock: Clock
) -> None:
    # with no value the text is the value: "tea" is a new one, not a repeat of "coffee"
    drink = "favourite drink"
    first = fmem.remember(actor="ana", text="Ana's favourite drink is coffee", field=drink)
    clock.advance(hours=1)
    again = fmem.remember(actor="ana", text="Ana's favourite drink is Coffee.", field=drink)
    assert again.id == first.id  # the same statement, restated
    clock.advance(hours=1)
    second = fmem.remember(actor="ana", text="Ana's favourite drink is tea", field=drink)
    assert second.id != first.id and second.supersedes == first.id
    assert [r.text for r in fmem.records(actor="ana")] == ["Ana's favourite drink is tea"]
    got = fmem.fact(actor="ana", field=drink)
    assert got.found is not None and got.found.record_id == second.id


# -- one field: found, conflict, not found -----------------------------------------------


def test_lower_authority_later_value_is_a_conflict_with_provenance(
    fmem: Memory, clock: Clock
) -> None:
    confirmed = fmem.remember(actor="ana", text="Ana lives in Lisbon", field="home city",
                              value="Lisbon")  # fmt: skip
    clock.advance(days=30)
    say(fmem, clock, "I moved to Porto.")  # newer, only inferred
    got = fmem.fact(actor="ana", field="home")
    assert got.status == "conflict" and got.found is None
    assert [c.value for c in got.candidates] == ["Lisbon", "Porto"]  # authority first
    assert got.candidates[0].record_id == confirmed.id
    assert [c.authority for c in got.candidates] == ["confirmed", "inferred"]
    assert got.candidates[1].source["event_ids"]
    data = got.as_dict()
    assert data["status"] == "conflict" and data["value"] is None
    assert fmem.fact(actor="ana", field="diet").status == "not_found"
    assert fmem.fact(actor="bob", field="home").status == "not_found"  # another actor


def test_expired_and_erased_facts_are_not_found(fmem: Memory, clock: Clock) -> None:
    start = clock()
    fmem.remember(actor="ana", text="Ana's budget is $500 this week", field="budget",
                  value="$500", valid_until=start + timedelta(days=7))  # fmt: skip
    diet = fmem.remember(actor="ana", text="Ana is vegetarian", field="diet", value="vegetarian")
    clock.advance(days=8)
    assert fmem.fact(actor="ana", field="budget").status == "not_found"  # expired
    then = fmem.fact(actor="ana", field="budget", as_of=start + timedelta(days=1))
    assert then.found is not None and then.found.value == "$500"
    assert fmem.forget(record_id=diet.id).verified
    assert fmem.fact(actor="ana", field="diet").status == "not_found"
    # erased is erased: not even an as-of read before the erasure brings it back
    assert fmem.fact(actor="ana", field="diet", as_of=start).status == "not_found"


def test_as_of_is_known_then_and_valid_then(fmem: Memory, clock: Clock) -> None:
    t0 = clock()
    fmem.remember(actor="ana", text="Ana lives in Porto", field="home city", value="Porto")
    clock.advance(days=10)
    # said on day 2, written on day 10: the agent did not know it on day 5
    fmem.add_event(actor="ana", session="s1", role="user", text="I moved to Lyon",
                   time=t0 + timedelta(days=2))  # fmt: skip
    fmem.process()
    day5 = t0 + timedelta(days=5)
    believed = fmem.fact(actor="ana", field="home", as_of=day5)
    assert believed.found is not None and believed.found.value == "Porto"
    # what is known now about day 5
    hindsight = fmem.fact(actor="ana", field="home", valid_at=day5)
    assert hindsight.status == "conflict" or (
        hindsight.found is not None and hindsight.found.value == "Lyon"
    )
    assert "Lyon" in [c.value for c in hindsight.candidates]
    assert fmem.fact(actor="ana", field="home", as_of=t0 - timedelta(days=1)).status == (
        "not_found"
    )
    # records list as of day 5: the Lyon record did not exist yet
    assert [r.value for r in fmem.records(actor="ana", as_of=day5) if r.field] == ["Porto"]
    with pytest.raises(InvalidInput):
        fmem.fact(actor="ana", field="home", as_of="yesterday-ish")


# -- the profile -------------------------------------------------------------------------


def test_profile_orders_by_authority_then_recency_marks_conflicts_and_cuts(
    fmem: Memory, clock: Clock
) -> None:
    say(fmem, clock, "I'm vegetarian")  # inferred
    clock.advance(hours=1)
    tz = fmem.remember(actor="ana", text="Ana's timezone is Europe/Lisbon", field="timezone",
                       value="Europe/Lisbon")  # fmt: skip
    clock.advance(hours=1)
    lang = fmem.remember(actor="ana", text="Ana wants replies in Portuguese", field="language",
                         value="Portuguese", sensitivity="personal")  # fmt: skip
    clock.advance(hours=1)
    home = fmem.remember(actor="ana", text="Ana lives in Lisbon", field="home", value="Lisbon")
    clock.advance(days=2)
    say(fmem, clock, "I moved to Porto.")
    prof = fmem.profile(actor="ana")
    fields = [f.field for f in prof.facts]
    assert fields == ["home city", "language", "timezone", "diet"]
    assert prof.facts[0].status == "conflict"
    assert prof.as_dict()["conflicts"] == ["home city"]
    assert prof.facts[1].found is not None and prof.facts[1].found.record_id == lang.id
    assert prof.facts[2].found is not None and prof.facts[2].found.record_id == tz.id
    assert home.id in [c.record_id for c in prof.facts[0].candidates]
    assert prof.tokens == sum(f.tokens for f in prof.facts)

    cut = fmem.profile(actor="ana", budget=prof.facts[0].tokens + prof.facts[1].tokens)
    assert [f.field for f in cut.facts] == ["home city", "language"]
    assert cut.tokens <= cut.budget and cut.dropped == 2
    normal = fmem.profile(actor="ana", max_sensitivity="normal")
    assert "language" not in [f.field for f in normal.facts]
    with pytest.raises(InvalidInput):
        fmem.profile(actor="ana", budget=0)


# -- pinned facts in recall --------------------------------------------------------------


def test_pinned_facts_head_the_packet_inside_the_budget_and_are_not_repeated(
    fmem: Memory, clock: Clock
) -> None:
    tz = fmem.remember(actor="ana", text="Ana's timezone is Europe/Lisbon", field="timezone",
                       value="Europe/Lisbon")  # fmt: skip
    fmem.remember(actor="ana", text="Ana likes window seats on long flights")
    packet = fmem.recall(actor="ana", query="timezone window seats", pin=["tz", "diet"],
                         budget=200, explain=True)  # fmt: skip
    assert [p.id for p in packet.pinned] == [tz.id]
    assert packet.pinned[0].text == "timezone: Europe/Lisbon"
    assert "pinned" in packet.pinned[0].flags
    assert tz.id not in [r.id for r in packet.records]  # not repeated among the ranked
    assert any("window" in r.text for r in packet.records)
    assert packet.tokens == sum(i.tokens for i in (*packet.pinned, *packet.records))
    assert packet.tokens <= 200
    assert any("'diet'" in n for n in packet.notes)  # a pinned field with no value
    assert packet.explain is not None
    assert [p["field"] for p in packet.explain["pinned"]] == ["timezone", "diet"]
    assert packet.as_dict()["pinned"][0]["id"] == tz.id
    # never through similarity: the query need not name it
    other = fmem.recall(actor="ana", query="window seats", pin=["timezone"])
    assert [p.id for p in other.pinned] == [tz.id]
    # a budget the pinned facts fill leaves no room for ranked records
    tight = fmem.recall(actor="ana", query="window seats", pin=["timezone"],
                        budget=packet.pinned[0].tokens)  # fmt: skip
    assert [p.id for p in tight.pinned] == [tz.id] and tight.records == ()
    with pytest.raises(InvalidInput):
        fmem.recall(actor="ana", query="x", pin="timezone")  # type: ignore[arg-type]
    # a pinned value above the caller's clearance stays out, as ranked records do
    fmem.remember(actor="ana", text="Ana speaks Portuguese", field="language",
                  value="Portuguese", sensitivity="sensitive")  # fmt: skip
    cleared = fmem.recall(actor="ana", query="x", pin=["language"], max_sensitivity="personal")
    assert cleared.pinned == () and any("'language'" in n for n in cleared.notes)
    assert len(fmem.recall(actor="ana", query="x", pin=["language"]).pinned) == 1
    # a pinned field in conflict: both values, each flagged
    fmem.remember(actor="ana", text="Ana lives in Lisbon", field="home city", value="Lisbon")
    clock.advance(days=1)
    say(fmem, clock, "I moved to Porto.")
    both = fmem.recall(actor="ana", query="window seats", pin=["home"])
    assert [p.text for p in both.pinned] == ["home city: Lisbon", "home city: Porto"]
    assert all("conflict" in p.flags for p in both.pinned)


def test_default_pin_set_comes_from_the_configuration(
    tmp_path: Path, target: str, clock: Clock
) -> None:
    conf = tmp_path / "remem.toml"
    conf.write_text('[recall]\npin = ["Time Zone", "language"]\n')
    assert load_config(conf).recall.pin == ["timezone", "language"]
    with Memory(_store(target), embedder=None, clock=clock, config=conf) as m:
        tz = m.remember(actor="ana", text="Ana's timezone is UTC", field="tz", value="UTC")
        assert [p.id for p in m.recall(actor="ana", query="anything at all").pinned] == [tz.id]
        assert m.recall(actor="ana", query="anything", pin=[]).pinned == ()


# -- the CLI, on both backends -----------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], db: str, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main(["--db", db, *args, "--json"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    return code, json.loads(lines[0])


def test_cli_fact_profile_and_pin(
    capsys: pytest.CaptureFixture[str], target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")
    code, _ = _cli(capsys, target, "remember", "--actor", "ana", "--text", "Ana lives in Lisbon",
                   "--field", "City", "--value", "Lisbon")  # fmt: skip
    assert code == 0
    code, got = _cli(capsys, target, "fact", "get", "--actor", "ana", "--field", "home")
    assert code == 0 and got["fact"]["status"] == "found" and got["fact"]["value"] == "Lisbon"
    rec_id = got["fact"]["record_id"]
    code, missing = _cli(capsys, target, "fact", "get", "--actor", "ana", "--field", "diet")
    assert code == 3 and missing["fact"]["status"] == "not_found"

    _cli(capsys, target, "event", "add", "--actor", "ana", "--session", "s", "--role", "user",
         "--text", "I moved to Porto")  # fmt: skip
    _cli(capsys, target, "process")
    code, clash = _cli(capsys, target, "fact", "get", "--actor", "ana", "--field", "home city")
    assert code == 4 and clash["fact"]["status"] == "conflict"
    assert [c["value"] for c in clash["fact"]["candidates"]] == ["Lisbon", "Porto"]

    code, prof = _cli(capsys, target, "profile", "--actor", "ana")
    assert code == 0 and prof["conflicts"] == ["home city"]
    assert rec_id in [c["record_id"] for c in prof["facts"][0]["candidates"]]

    code, packet = _cli(capsys, target, "recall", "--actor", "ana", "--query", "seats",
                        "--pin", "home", "--budget", "100")  # fmt: skip
    assert code == 0 and rec_id in [p["id"] for p in packet["pinned"]]
    assert packet["tokens"] <= 100

    code, bad = _cli(capsys, target, "fact", "get", "--actor", "ana", "--field", "home",
                     "--as-of", "not a time")  # fmt: skip
    assert code == 1 and bad["error"]["code"] == "invalid_input"
    code, bad = _cli(capsys, target, "profile", "--actor", "ana", "--known-at", "soon")
    assert code == 1 and bad["error"]["code"] == "invalid_input"
    code, early = _cli(capsys, target, "fact", "get", "--actor", "ana", "--field", "home",
                       "--as-of", "2000-01-01T00:00:00Z")  # fmt: skip
    assert code == 3 and early["fact"]["status"] == "not_found"


def test_llm_semantic_prompt_and_schema_name_the_vocabulary() -> None:
    from remem.extract.llm import prompt_for
    from remem.extract.schemas import Fact

    text, version = prompt_for("semantic", None)
    described = Fact.model_json_schema()["properties"]["attribute"]["description"]
    assert version == "semantic/3"
    for common in VOCABULARY:
        assert common.name in text and common.name in described, common.name
    assert canonical_field("home_city") == "home city"  # how the model's slug arrives


def test_demo_shows_the_profile_before_and_after_the_update(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMEM_MINILM_DIR", "/nonexistent")
    code, out = _cli(capsys, str(tmp_path / "demo.db"), "demo")
    assert code == 0

    def home(label: str) -> list[str]:
        facts = out["profile"][label]["facts"]
        return [f["value"] for f in facts if f["field"] == "home city"]

    assert home("before") == ["Lisbon"] and home("after") == ["Porto"]
    assert out["fact"]["status"] == "found" and out["fact"]["value"] == "Porto"


def test_the_names_of_a_field_are_its_name_and_synonyms_and_nothing_for_a_family_key() -> None:
    from remem.policy.fields import field_names

    assert "where i live" in field_names("home city")
    assert field_names("home") == field_names("home city")  # an extractor's key, read as it
    assert field_names("favourite band") == ("favourite band",)  # a free field: its own name
    assert field_names("likes:hiking") == () and field_names("allergy:peanut") == ()


def test_an_animal_of_the_family_goes_by_pets() -> None:
    from remem.policy.fields import field_names

    assert "pets" in field_names("relation:dog") and "pet" in field_names("relation:cat")
    assert field_names("relation:sister") == ()  # its text says "sister"
