"""A record's metadata, and the equality filters that select records by it.

An application may keep a small JSON object beside a record (`Record.metadata`):
where a framework's item came from, a category, a run id. remem stores it, returns
it, exports it and erases it with the record; it never reads meaning into it. The
rules, checked once for every surface (library, CLI, HTTP, MCP, adapters, batch
writes) by `check_metadata`:

- an object with string keys (or nothing: None and `{}` are no metadata);
- at most `MAX_METADATA_BYTES` of JSON, `MAX_METADATA_DEPTH` levels of nesting
  below the object, `MAX_METADATA_KEYS` keys in all (nested ones counted);
- every key 1-`MAX_KEY_CHARS` characters, with no format character (a zero-width
  space or a direction mark: category Cf) and no word mixing scripts ("h\\u043eme"
  with a Cyrillic "o"): each would make a second key that reads like the first,
  which a filter on the plain one would miss (`remem.policy.folding`);
- every key and string as every stored string (`remem.policy.text`): no NUL, no
  lone surrogate, put in Unicode NFC; a secret in a key or a value (or stated by
  one, `{"password": "..."}`) refuses the write (`remem.policy.dataclasses`).

A filter (`check_filter`) is an object of at most `MAX_FILTER_PAIRS` top-level keys,
each with a string, number, boolean or null: a record matches when its metadata
has every key with an equal value. Equal means of the same JSON type and value:
`1` matches `1` and `1.0`, never `true` or `"1"`; nested objects and lists are
kept but cannot be filtered on. `matches` is that rule in Python; both stores
write it in SQL (`remem.store.sqlite.sql`, `remem.store.postgres.scope`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from remem.errors import InvalidInput
from remem.policy.dataclasses import refuse_secrets, shown
from remem.policy.folding import format_chars, mixed_script_word
from remem.policy.text import check_json, check_text, nfc

MAX_METADATA_BYTES = 8 * 1024  # a record's metadata, as JSON (its text is 4,000 characters)
MAX_METADATA_DEPTH = 4  # levels of nesting below the object itself
MAX_METADATA_KEYS = 64  # keys in all, nested ones counted
MAX_KEY_CHARS = 100
MAX_FILTER_PAIRS = 16
_INT_LIMIT = 2**63  # a filter's integer is bound as an SQL integer

Scalar = str | int | float | bool | None
Pairs = tuple[tuple[str, Scalar], ...]


def check_metadata(value: object, what: str = "metadata", *, screen: bool = True) -> dict[str, Any]:
    """`value` as a record's metadata (keys and strings in NFC), `{}` for None or `{}`;
    InvalidInput saying what is wrong and where, or (with `screen`) RefusedContent for
    a secret."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{what} must be a JSON object; got {type(value).__name__}")
    if not value:
        return {}
    check_json(what, value, max_depth=MAX_METADATA_DEPTH, max_bytes=MAX_METADATA_BYTES)
    keys = list(_keys(value))
    if len(keys) > MAX_METADATA_KEYS:
        raise InvalidInput(
            f"{what} has {len(keys)} keys (nested ones counted); at most {MAX_METADATA_KEYS}: "
            "keep references to larger data instead"
        )
    for key in keys:
        check_key(what, key)
    clean: dict[str, Any] = nfc(dict(value))
    if screen:
        refuse_secrets({what: clean})
    # plain JSON values (a tuple is a list, a mapping a dict), as they will read back
    loaded: dict[str, Any] = json.loads(json.dumps(clean, ensure_ascii=False, default=dict))
    return loaded


def valid_metadata(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """`check_metadata`'s shape check for the surfaces' pydantic models: ValueError, as
    pydantic validators raise (the write path screens for secrets); None stays None."""
    if value is None:
        return None
    try:
        return check_metadata(value, screen=False)
    except InvalidInput as exc:
        raise ValueError(str(exc)) from None


def valid_filter(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """`check_filter` for the surfaces' pydantic models: ValueError for a bad filter."""
    if value is None:
        return None
    try:
        check_filter(value)
    except InvalidInput as exc:
        raise ValueError(str(exc)) from None
    return value


def json_filter(text: str | None) -> dict[str, Any] | None:
    """A filter sent as JSON text (a query parameter, a CLI option), checked; None for
    none. InvalidInput when it is no JSON object of scalars."""
    if text is None or not text.strip():
        return None
    try:
        value = json.loads(text)
    except ValueError:
        raise InvalidInput(
            f'a metadata filter is a JSON object such as {{"topic": "travel"}}; got {shown(text)}'
        ) from None
    check_filter(value)
    return dict(value)


def check_key(what: str, key: str) -> str:
    """`key` if it is a usable metadata key; InvalidInput naming `what` otherwise."""
    check_text(f"{what} key", key)
    if not key or len(key) > MAX_KEY_CHARS:
        raise InvalidInput(f"{what} keys are 1-{MAX_KEY_CHARS} characters; got one of {len(key)}")
    if invisible := format_chars(key):
        at, char = invisible[0]
        raise InvalidInput(
            f"a {what} key ({shown(key)}) holds an invisible format character (U+{ord(char):04X} "
            f"at position {at}): it would read like another key; remove it"
        )
    if mixed := mixed_script_word(key):
        word, scripts = mixed
        raise InvalidInput(
            f"{what} key mixes {' and '.join(scripts)} letters in the word {json.dumps(word)}, "
            "which reads like a word of one script; write each word in one script"
        )
    return key


def _keys(value: object) -> list[str]:
    """Every key of a JSON value, nested ones included."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            found.extend(str(k) for k in item)
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


def check_filter(value: object) -> Pairs:
    """A metadata filter as sorted (key, value) pairs; `()` for None or `{}`.
    InvalidInput for anything but an object of scalars with usable keys."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise InvalidInput(
            f'a metadata filter must be a JSON object such as {{"topic": "travel"}}; '
            f"got {type(value).__name__}"
        )
    if len(value) > MAX_FILTER_PAIRS:
        raise InvalidInput(
            f"a metadata filter has at most {MAX_FILTER_PAIRS} keys; got {len(value)}"
        )
    pairs: list[tuple[str, Scalar]] = []
    for key, item in value.items():
        if not isinstance(key, str):
            raise InvalidInput(f"metadata filter keys are strings; got {shown(key)}")
        check_key("metadata filter", key)
        pairs.append((nfc(key), _scalar(key, item)))
    return tuple(sorted(pairs, key=lambda p: p[0]))


def _scalar(key: str, item: object) -> Scalar:
    if item is None or isinstance(item, bool):
        return item
    if isinstance(item, int):
        if not -_INT_LIMIT <= item < _INT_LIMIT:
            raise InvalidInput(f"metadata filter ({shown(key)}): integers are 64-bit; got {item}")
        return item
    if isinstance(item, float):
        check_json(f"metadata filter ({shown(key)})", item)  # refuses NaN and infinities
        return item
    if isinstance(item, str):
        return nfc(check_text(f"metadata filter ({shown(key)})", item))
    raise InvalidInput(
        f"metadata filter ({shown(key)}) must be a string, number, boolean or null (equality "
        f"on a top-level key); got {type(item).__name__}"
    )


def same(stored: object, wanted: Scalar) -> bool:
    """Whether a stored metadata value equals a filter's: same JSON type, equal value."""
    if wanted is None:
        return stored is None
    if isinstance(wanted, bool) or isinstance(stored, bool):
        return type(stored) is bool and stored is wanted
    if isinstance(wanted, int | float):
        return isinstance(stored, int | float) and stored == wanted
    return isinstance(stored, str) and stored == wanted


def matches(metadata: Mapping[str, Any], pairs: Pairs) -> bool:
    """Whether a record's metadata has every pair's key with an equal value."""
    if not pairs:  # no filter, as in most recalls: each candidate is asked
        return True
    return all(key in metadata and same(metadata[key], want) for key, want in pairs)


def json_type(value: Scalar) -> str:
    """How SQLite's `json_each` names a filter value's type ('number' for either kind)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "number"
    return "text"
