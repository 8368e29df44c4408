"""The detectors' screens skip no hit: `detect` finds exactly what running every detector
finds, over the secret samples of the policy tests (as written, re-cased, folded onto
non-ASCII letters the regular expressions fold, and inside ordinary turns), the tiny
LoCoMo and PrefEval files, and the development sets where this machine has them."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.embed.base import HashEmbedder
from remem.memory.memory import Memory
from remem.policy.dataclasses import find_secrets
from remem.policy.detectors import detect
from tests.support import DATA, secrets

DEV = [
    Path("/work/shared/datasets/locomo/locomo10-dev.json"),
    Path("/work/shared/datasets/prefeval/prefeval-dev.json"),
]
# The letters `re.IGNORECASE` folds onto ASCII ones where `str.lower` does not
FOLDS = str.maketrans({"s": "\u017f", "k": "\u212a", "K": "\u212a", "i": "\u0130"})


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)


def _secrets() -> list[str]:
    found: list[str] = []
    for name, value in vars(secrets).items():
        if name.isupper():
            found.extend(_strings(value))
    return list(dict.fromkeys(s for s in found if s.strip()))


def _turns(paths: list[Path]) -> list[str]:
    """What people said in these datasets: every string longer than a name or a date."""
    found = (s for p in paths for s in _strings(json.loads(p.read_text())) if len(s) > 24)
    return list(dict.fromkeys(found))


def _variants(secrets: list[str], turns: list[str]) -> list[str]:
    out = []
    for i, s in enumerate(secrets):
        out += [s.upper(), s.lower(), s.swapcase(), s.translate(FOLDS), "caf\u00e9 " + s]
        turn = turns[(i * 7919) % len(turns)]
        out += [f"{turn} {s}", f"{s} {turn}", turn[: len(turn) // 2] + s + turn[len(turn) // 2 :]]
    return out


def test_the_corpus_holds_secrets() -> None:
    secrets = _secrets()
    assert len(secrets) > 150
    assert sum(bool(find_secrets(s)) for s in secrets) > 100


def test_screened_detect_finds_what_every_detector_finds() -> None:
    secrets = _secrets()
    turns = _turns(sorted(DATA.glob("*.json")))
    texts = list(dict.fromkeys(secrets + turns + _variants(secrets, turns)))
    differ = [t for t in texts if list(detect(t)) != list(detect(t, screened=False))]
    assert differ == []


@pytest.mark.skipif(not all(p.exists() for p in DEV), reason="the development sets are not here")
def test_screened_detect_on_the_development_sets() -> None:
    turns = _turns(DEV)
    assert len(turns) > 5000
    differ = [t for t in turns if list(detect(t)) != list(detect(t, screened=False))]
    assert differ == []


FOLDED = [  # each is found only because the regular expressions fold these letters
    ("my pa\u017f\u017fword is hunter22", "password", "hunter22"),
    ("P\u0130N is 4821", "password", "4821"),
    ("my api \u212aey: Zx81kPq02LmNv77Ta9Qe", "api_key", "Zx81kPq02LmNv77Ta9Qe"),
    ("my \u017f\u017fn is 123-45-6789", "government_id", "123-45-6789"),
    ("caf\u00e9 BEARER abcdefgh12345678ijkl", "access_token", "abcdefgh12345678ijkl"),
]


@pytest.mark.parametrize(("text", "kind", "secret"), FOLDED)
def test_folded_letters_are_still_found(text: str, kind: str, secret: str) -> None:
    found = find_secrets(text)
    assert [(f.kind, text[f.start : f.end]) for f in found] == [(kind, secret)]


def test_events_keep_folded_secrets_only_redacted(db_path: Path) -> None:
    rows = [
        {"actor": "ann", "session": "s1", "role": "user", "text": text, "event_id": f"e{i}"}
        for i, (text, _, _) in enumerate(FOLDED)
    ]
    with Memory.open(db_path, embedder=HashEmbedder()) as mem:
        assert mem.add_events(rows) == [True] * len(FOLDED)
        stored_events = {e.id: e for e in mem.events(actor="ann")}
    for i, (text, kind, secret) in enumerate(FOLDED):
        event = stored_events[f"e{i}"]
        assert secret not in event.text
        # stored in NFC, as every stored string (a Kelvin sign is a K there)
        assert event.text == unicodedata.normalize(
            "NFC", text.replace(secret, f"[REDACTED:{kind}]")
        )
        assert event.metadata["redacted"] == [kind]
