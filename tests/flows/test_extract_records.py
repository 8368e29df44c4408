"""Records the offline extractor writes through `Memory`: readable, whose, and only facts.

Each case runs on SQLite and on PostgreSQL (`both_backends`, tests/support/backends.py).
"""

from __future__ import annotations

from remem import Memory
from tests.support.backends import both_backends
from tests.support.clock import at

pytestmark = both_backends


def _say(mem: Memory, text: str, day: float, speaker: str | None = None) -> str:
    meta = {"speaker": speaker} if speaker else None
    return mem.add_event(
        actor="u42", session="s1", role="user", text=text, time=at(day), metadata=meta
    )


def test_records_of_a_two_person_thread_name_their_speaker(mem: Memory) -> None:
    rows = [
        {"actor": "u42", "session": "s1", "role": "user", "time": at(0, hours=h),
         "text": f"{who}: {text}", "metadata": {"speaker": who}}
        for h, (who, text) in enumerate([
            ("Ines", "I just started a project to clean up the beach in my town."),
            ("Tomas", "That's great! My brother lives by the coast."),
            ("Ines", "I strongly dislike plastic cutlery."),
        ])
    ]  # fmt: skip
    mem.import_events(rows)
    mem.process()
    texts = sorted(r.text for r in mem.records(actor="u42"))
    assert texts == [
        "Ines just started a project to clean up the beach in their town",
        "Ines strongly dislikes plastic cutlery",
        "Tomas's brother lives by the coast",
    ]


def test_code_and_remarks_to_the_listener_leave_no_record(mem: Memory) -> None:
    _say(mem, "```js\n// I live in Paris\nconst myCity = 'Paris';\n```", 0)
    _say(mem, "I'm so grateful for everything you've done", 1)
    _say(mem, "If I won the lottery I would buy a farm", 2)
    mem.process()
    assert mem.records(actor="u42") == []


def test_two_dislikes_of_one_kind_of_thing_are_two_records(mem: Memory) -> None:
    _say(mem, "I dislike films with jump scares.", 0)
    _say(mem, "I dislike films with subtitles.", 1)
    mem.process()
    texts = sorted(r.text for r in mem.records(actor="u42"))
    assert texts == ["Dislikes films with jump scares", "Dislikes films with subtitles"]
