"""What a stored string or JSON value may be: one check for every write path.

Every string remem stores (event text and metadata, a record's text, field,
value and strategy, a procedure, a rejection's reason, thread state) passes
`check_text` or `check_json` before it reaches a store, so that what was
accepted can always be read back, listed and exported, on either backend:

- no NUL character (PostgreSQL text cannot hold one) and no lone surrogate
  (`"\\ud800"`: not Unicode, so it cannot be encoded as UTF-8 or sent as JSON);
- JSON values are JSON: objects with string keys, lists, strings, finite
  numbers, booleans and null; never NaN or Infinity, bytes, sets or objects;
- bounded: at most `max_depth` levels of nesting and `max_bytes` of JSON.

Every string a write stores is also put in Unicode NFC by `nfc` ("Malmö" typed
precomposed or decomposed is one value, one field, one key), at the step each
kind of write passes once: consolidation for records, the event check for
events, the reviews for reasons, document parsing for documents.

A value that breaks a rule is refused with `InvalidInput` naming where it is
(`event metadata["a"][0]`); nothing is stored. `json_strings` walks every
string of a JSON value, keys included: the secret screening in
`remem.policy.dataclasses` walks with it.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

from remem.errors import InvalidInput

MAX_JSON_DEPTH = 32
MAX_METADATA_BYTES = 64 * 1024  # an event's metadata, as JSON

_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")

_V = TypeVar("_V")


def nfc(value: _V) -> _V:
    """`value` with every string in Unicode NFC: a string itself, or the keys and
    strings of a JSON value (mappings become dicts, tuples stay tuples); anything else
    unchanged. Text already in NFC (nearly all) is returned as it is. InvalidInput for
    an object whose keys would become one."""
    if isinstance(value, str):
        if value.isascii() or unicodedata.is_normalized("NFC", value):
            return value
        out: Any = unicodedata.normalize("NFC", value)
    elif isinstance(value, Mapping):
        out = {nfc(k): nfc(v) for k, v in value.items()}
        if len(out) < len(value):
            raise InvalidInput(
                "an object has two keys that differ only in how their accents are encoded "
                "(Unicode NFC and NFD); keep one"
            )
    elif isinstance(value, list):
        out = [nfc(v) for v in value]
    elif isinstance(value, tuple):
        out = tuple(nfc(v) for v in value)
    else:
        return value
    return out  # type: ignore[no-any-return]


def check_text(what: str, value: str) -> str:
    """`value` unchanged, or InvalidInput when it holds a NUL or a lone surrogate."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string; got {type(value).__name__}")
    bad = _BAD_CHAR.search(value)
    if bad is not None:
        at = bad.start()
        if bad.group() == "\x00":
            problem = f"a NUL character (\\x00) at position {at}"
        else:
            code = f"\\u{ord(bad.group()):04x}"
            problem = f"a lone surrogate ({code}) at position {at}, which is not valid Unicode"
        raise InvalidInput(f"{what} contains {problem}; remove it (nothing was stored)")
    return value


def check_json(
    what: str,
    value: object,
    *,
    max_depth: int = MAX_JSON_DEPTH,
    max_bytes: int | None = None,
) -> str:
    """`value` as canonical JSON (sorted keys), or InvalidInput saying what is wrong where.

    Checks every key and string with `check_text`, refuses non-JSON values and
    non-finite numbers, and bounds the nesting (`max_depth` levels) and the size
    (`max_bytes` of UTF-8 JSON, when given).
    """
    _walk(what, value, max_depth, 0)
    try:
        text = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain
        )
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise InvalidInput(f"{what} holds a number JSON cannot carry here ({exc})") from None
    if max_bytes is not None:
        size = len(text.encode())
        if size > max_bytes:
            raise InvalidInput(
                f"{what} is {size} bytes of JSON; at most {max_bytes} (store large values "
                "elsewhere and keep a reference)"
            )
    return text


def json_strings(value: object) -> Iterator[tuple[str | None, str]]:
    """Every string of a JSON value, keys included, as (key, string) pairs.

    A string under an object key comes with that key (so "password": "x" can be
    read as a stated secret); keys themselves, and strings in lists, come with
    None. Walks values that passed `check_json`.
    """
    stack: list[tuple[str | None, object]] = [(None, value)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, str):
            yield key, item
        elif isinstance(item, Mapping):
            for k, v in item.items():
                yield None, str(k)
                stack.append((str(k), v))
        elif isinstance(item, Sequence) and not isinstance(item, bytes | bytearray):
            stack.extend((None, v) for v in item)


def _walk(where: str, value: object, max_depth: int, depth: int) -> None:
    if depth > max_depth:
        raise InvalidInput(
            f"{where.split('[', 1)[0]} nests deeper than {max_depth} levels; flatten it"
        )
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, str):
        check_text(where, value)
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{where} is {value}, which JSON cannot represent")
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidInput(f"{where} has a non-string key {k!r:.40}; JSON keys are strings")
            check_text(f"{where} key {_show(k)}", k)
            _walk(f"{where}[{_show(k)}]", v, max_depth, depth + 1)
        return
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _walk(f"{where}[{i}]", v, max_depth, depth + 1)
        return
    raise InvalidInput(f"{where} holds a {type(value).__name__}, which is not JSON")


def _plain(value: object) -> object:
    """What `json.dumps` cannot take itself but `_walk` let through: any other mapping."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON")  # unreachable after _walk


def _show(key: str) -> str:
    """A key as a message may show it: quoted, escaped, and short."""
    shown = json.dumps(key[:40])  # escapes NUL and surrogates rather than printing them
    return shown if len(key) <= 40 else shown[:-1] + '..."'
