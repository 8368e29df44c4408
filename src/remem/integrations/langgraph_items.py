"""How a LangGraph store item lies in remem: pure functions, no I/O, no LangGraph import.

An item `(namespace, key, value)` of actor A in tenant T is one remem record chain:

- remem namespace: `/tenants/T/actors/A/langgraph/` then each label of the item's
  namespace, percent-encoded, followed by `/` (so the prefix `("users", "a")`
  never matches `("users", "ab")`);
- field: `langgraph:` and a digest of the namespace and key, the record's name
  (a later put about the same field supersedes the record, history kept);
- value: the item as JSON (`Stored`): namespace, key, the value exactly as put,
  when the item was first put, and a digest of what it holds;
- text: what recall matches, the value's indexed text (`index_text`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from remem.errors import InvalidInput
from remem.policy.dataclasses import shown
from remem.policy.scope import actor_prefix
from remem.policy.text import check_json, check_text
from remem.timeutil import parse_time
from remem.writes.checks import MAX_RECORD_CHARS, MAX_VALUE_CHARS

FIELD_PREFIX = "langgraph:"
SPACE = "langgraph/"
MAX_STORED_CHARS = MAX_VALUE_CHARS  # a record's value, on every surface
MAX_NAMESPACE_CHARS = 1000
# keys that say what a value is made of, not what it is about: not put before it
PLAIN_KEYS = frozenset("text content value data memory body message".split())

Namespace = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Stored:
    """An item as a record's value holds it."""

    namespace: Namespace
    key: str
    value: dict[str, Any]
    digest: str  # of the indexed text and the value: what a repeated put compares
    created_at: datetime | None = None  # when the item was first put (None: this record)
    ttl: float | None = None  # minutes, as put

    def dumps(self) -> str:
        """The record value: canonical JSON."""
        body: dict[str, Any] = {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "digest": self.digest,
        }
        if self.created_at is not None:
            body["created_at"] = self.created_at.isoformat()
        if self.ttl is not None:
            body["ttl"] = self.ttl
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        if len(text) > MAX_STORED_CHARS:
            raise InvalidInput(
                f"item {self.key!r} is {len(text)} characters as stored (its value, key and "
                f"namespace as JSON); the limit is {MAX_STORED_CHARS}: keep large values "
                "elsewhere and store a reference"
            )
        return text


def loads(value: str | None) -> Stored | None:
    """The item a record's value holds, or None for a record that holds none."""
    if not value:
        return None
    try:
        body = json.loads(value)
        created = body.get("created_at")
        return Stored(
            namespace=tuple(str(label) for label in body["namespace"]),
            key=str(body["key"]),
            value=dict(body["value"]),
            digest=str(body["digest"]),
            created_at=None if created is None else parse_time(created),
            ttl=body.get("ttl"),
        )
    except (ValueError, KeyError, TypeError, AttributeError, InvalidInput):
        return None


def check_op(namespace: Sequence[object], key: object | None, limit: object = 0,
             offset: object = 0) -> None:  # fmt: skip
    """InvalidInput for what LangGraph's own checks let through and remem cannot store
    or read back: a key that is not a string, a NUL or a lone surrogate in a key or a
    label, a negative or non-integer limit or offset."""
    for label in namespace:
        if isinstance(label, str):
            check_text(f"namespace label {label!r}", label)
    if key is not None:
        if not isinstance(key, str):
            raise InvalidInput(f"an item's key must be a string; got {type(key).__name__}")
        check_text("an item's key", key)
    for what, n in (("limit", limit), ("offset", offset)):
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise InvalidInput(f"{what} must be an integer of 0 or more; got {shown(n)}")


def check_value(key: str, value: Mapping[str, Any]) -> dict[str, Any]:
    """The value as it will be read back: a JSON object (InvalidInput otherwise)."""
    if not isinstance(value, Mapping):
        raise InvalidInput(f"the value of item {key!r} must be a dict; got {type(value).__name__}")
    loaded: dict[str, Any] = json.loads(check_json(f"the value of item {key!r}", value))
    return loaded


def digest(text: str, value: Mapping[str, Any]) -> str:
    """What an item holds, in 24 hex digits: equal for an equal text and value only."""
    body = json.dumps([text, value], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(body.encode()).hexdigest()[:24]


def field_of(namespace: Namespace, key: str) -> str:
    """The record field that names one item."""
    body = json.dumps([list(namespace), key], separators=(",", ":"), ensure_ascii=False)
    return FIELD_PREFIX + hashlib.sha256(body.encode()).hexdigest()[:40]


def space_of(tenant: str, actor: str, labels: Sequence[str]) -> str:
    """The remem namespace of an item namespace, or the prefix of every one under `labels`."""
    path = "".join(quote(label, safe="") + "/" for label in labels)
    space = f"{actor_prefix(tenant, actor)}{SPACE}{path}"
    if len(space) > MAX_NAMESPACE_CHARS:
        raise InvalidInput(
            f"namespace {tuple(labels)!r} is too long: {len(space)} characters in remem "
            f"(at most {MAX_NAMESPACE_CHARS})"
        )
    return space


def index_text(value: Mapping[str, Any], texts: Iterable[str] | None, key: str) -> str:
    """The text recall matches: the given texts (LangGraph's `index` fields), else every
    string, number and boolean of the value in order, each after the keys that lead to
    it (`{"food": "vegetarian"}` is "food: vegetarian", `{"diet": {"type": "vegan"}}`
    "diet type: vegan": a key names what its value is about, and a query asks by it;
    `PLAIN_KEYS` such as "text" and "content" name nothing and are left out); the key
    when there are none."""
    found = list(texts) if texts is not None else list(_leaves(value, ""))
    text = "\n".join(t for t in (s.strip() for s in found) if t)
    return (text or key)[:MAX_RECORD_CHARS]


def _leaves(value: object, path: str) -> Iterable[str]:
    if isinstance(value, str | bool | int | float):
        said = value if isinstance(value, str) else json.dumps(value)
        yield f"{path}: {said}" if path and said.strip() else said
    elif isinstance(value, Mapping):
        for k, v in value.items():
            named = "" if str(k).casefold() in PLAIN_KEYS else str(k)
            yield from _leaves(v, f"{path} {named}".strip())
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _leaves(v, path)


# -- matching ------------------------------------------------------------------------------

_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


FILTER_DEPTH = 32  # the deepest a filter's objects may nest (a stored value may nest 4)


def check_filter(where: Mapping[str, Any] | None, depth: int = 0) -> None:
    """InvalidInput for a filter that uses an operator LangGraph does not define, names
    a key that is not a string, or nests deeper than `FILTER_DEPTH` (a RecursionError,
    and an AttributeError for a number as a key, before)."""
    if depth == 0 and _nests_past(where, FILTER_DEPTH):
        raise InvalidInput(f"a filter nests at most {FILTER_DEPTH} objects or lists deep")
    for key, cond in (where or {}).items():
        if not isinstance(key, str):
            raise InvalidInput(f"a filter's keys are strings; got {type(key).__name__}")
        if isinstance(cond, Mapping):
            for op in cond:
                if not isinstance(op, str):
                    raise InvalidInput(f"a filter's keys are strings; got {type(op).__name__}")
                if op.startswith("$") and op not in _OPERATORS:
                    raise InvalidInput(
                        f"filter operator {op!r} is unknown; use one of {', '.join(_OPERATORS)}"
                    )
                if not op.startswith("$"):
                    check_filter({op: cond[op]}, depth + 1)


def _nests_past(value: object, most: int) -> bool:
    """Whether objects and lists nest in `value` more than `most` deep (read without
    recursion, so any depth is answered)."""
    level: list[object] = [value]
    for _ in range(most + 1):
        level = [
            v
            for x in level
            for v in (
                x.values() if isinstance(x, Mapping) else x if isinstance(x, list | tuple) else ()
            )
            if isinstance(v, Mapping | list | tuple)
        ]
        if not level:
            return False
    return True


def matches(value: Mapping[str, Any], where: Mapping[str, Any] | None) -> bool:
    """Whether a value passes a LangGraph filter: every key equal (objects compared
    field by field, lists whole), or passing its `$eq` ... `$lte` operators."""
    return all(_compare(value.get(k), cond) for k, cond in (where or {}).items())


def _compare(have: Any, cond: Any) -> bool:
    if isinstance(cond, Mapping):
        if any(str(k).startswith("$") for k in cond):
            return all(_operator(have, op, arg) for op, arg in cond.items())
        return isinstance(have, Mapping) and all(_compare(have.get(k), v) for k, v in cond.items())
    if isinstance(cond, list | tuple):
        return (
            isinstance(have, list | tuple)
            and len(have) == len(cond)
            and all(_compare(h, c) for h, c in zip(have, cond, strict=True))
        )
    return bool(have == cond)


def _operator(have: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(have == arg)
    if op == "$ne":
        return bool(have != arg)
    if not _number(have) or not _number(arg):
        return False  # an order needs two numbers
    # compared as they are: Python orders any int against any float exactly, where
    # float(10**400) is an OverflowError
    ordered: dict[str, bool] = {
        "$gt": have > arg, "$gte": have >= arg, "$lt": have < arg, "$lte": have <= arg,
    }  # fmt: skip
    return ordered[op]


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def namespace_matches(namespace: Namespace, kind: str, path: Sequence[str]) -> bool:
    """LangGraph's namespace condition: `path` ("*" for any label) at the start
    (`kind` "prefix") or the end ("suffix") of `namespace`."""
    if len(namespace) < len(path):
        return False
    if kind == "prefix":
        pairs = zip(namespace, path, strict=False)
    else:
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    return all(p == "*" or n == p for n, p in pairs)
