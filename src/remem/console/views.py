"""How the console arranges what the API answers: pure functions of JSON-ready data.

Nothing here reads a store or decides scope; the pages get their data from the
same functions the HTTP routes are (`remem.service.routes`) and shape it here.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from remem.timeutil import parse_time

# the status filter of an actor's memory: its name, what it shows
STATUS_FILTERS = {
    "active": "active now",
    "expired": "active, but past valid-until",
    "superseded": "replaced by a newer record",
    "invalid": "invalidated, not replaced",
    "proposed": "waiting for review",
    "all": "every status",
}


def record_state(rec: Mapping[str, Any], now: datetime) -> str:
    """The one status-filter word that describes a record now."""
    status = rec["status"]
    if status == "active":
        until = rec.get("valid_until")
        return "expired" if until is not None and parse_time(until) <= now else "active"
    if status == "invalid":
        return "superseded" if rec.get("superseded_by") else "invalid"
    return str(status)


def filter_records(
    records: Iterable[Mapping[str, Any]],
    now: datetime,
    *,
    kind: str = "",
    status: str = "active",
    namespace: str = "",
) -> list[dict[str, Any]]:
    """The records that pass the filters, each with its `state` (see `record_state`)."""
    out = []
    for rec in records:
        state = record_state(rec, now)
        if status != "all" and state != status:
            continue
        if kind and rec["kind"] != kind:
            continue
        if namespace and rec["namespace"] != namespace:
            continue
        out.append({**rec, "state": state})
    return out


def by_kind(records: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Records grouped by kind, kinds in alphabetical order, each group as given."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for rec in records:
        groups.setdefault(str(rec["kind"]), []).append(rec)
    return sorted(groups.items())


def conflicted(profile: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The fields of a profile in conflict, each with its candidate values."""
    return {
        f["field"]: list(f.get("candidates", []))
        for f in profile.get("facts", [])
        if f.get("status") == "conflict"
    }


def timeline(chain: Sequence[Mapping[str, Any]], current: str) -> list[dict[str, Any]]:
    """A supersession chain, oldest first, as the steps of a timeline: each record's
    validity span and whether it is the one being looked at."""
    return [
        {
            "id": rec["id"],
            "text": rec["text"],
            "status": rec["status"],
            "valid_from": rec["valid_from"],
            "valid_until": rec.get("valid_until"),
            "here": rec["id"] == current,
        }
        for rec in chain
    ]


def explain_rows(explain: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every candidate a recall weighed, in the order it first appears: its lexical
    (bm25) and vector (cosine) scores, and whether it was selected or why not."""
    rows: dict[str, dict[str, Any]] = {}

    def row(cid: str) -> dict[str, Any]:
        return rows.setdefault(
            cid, {"id": cid, "bm25": None, "cosine": None, "outcome": "", "reasons": []}
        )

    for hit in explain.get("lexical", []):
        row(hit["id"])["bm25"] = hit.get("bm25")
    for hit in explain.get("vector", []):
        row(hit["id"])["cosine"] = hit.get("cosine")
    for cid in [*explain.get("events_lexical", []), *explain.get("events_vector", [])]:
        row(cid)
    for cid in explain.get("selected", []):
        row(cid)["outcome"] = "selected"
    for drop in explain.get("rejected", []):
        entry = row(drop["id"])
        entry["reasons"].append(drop.get("reason", ""))
    for entry in rows.values():
        if not entry["outcome"]:
            entry["outcome"] = "dropped" if entry["reasons"] else "not ranked"
    return list(rows.values())


def diff(old: str, new: str) -> list[tuple[str, str]]:
    """A word diff from `old` to `new`, as runs: ("+", added words), ("-", removed words)
    or (" ", words in both), in reading order (stored text is one line: words, not lines).

    `difflib.SequenceMatcher` with its junk heuristic, not `ndiff`: ndiff pairs similar
    words character by character, about cubic in the words changed (two texts of 571
    similar words took 52 s); this is milliseconds for the 2,000 words a record holds."""
    a, b = old.split(), new.split()
    runs: list[tuple[str, str]] = []

    def add(sign: str, words: list[str]) -> None:
        if not words:
            return
        if runs and runs[-1][0] == sign:
            runs[-1] = (sign, " ".join([runs[-1][1], *words]))
        else:
            runs.append((sign, " ".join(words)))

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if tag == "equal":
            add(" ", a[i1:i2])
        else:
            add("-", a[i1:i2])
            add("+", b[j1:j2])
    return runs


def deletions_for(jobs: Iterable[Mapping[str, Any]], actor: str | None) -> list[Mapping[str, Any]]:
    """The deletion jobs a key may see: every one for a key of the whole tenant; for a
    key of one actor, only the erasures of that actor's data (its own, or a record's of
    it: a job logged before schema 11 names no actor for a record, and is not shown)."""
    if actor is None:
        return list(jobs)
    return [j for j in jobs if j.get("actor") == actor]
