"""The one check of stored strings and JSON, and the secret screening that walks with it."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from remem.errors import InvalidInput, RefusedContent
from remem.policy.dataclasses import redact_json, refuse_secrets, secret_kinds
from remem.policy.text import check_json, check_text, json_strings


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a\x00b", "NUL character (\\x00) at position 1"),
        ("ab\ud800", "lone surrogate (\\ud800) at position 2"),
        ("\udfff", "lone surrogate (\\udfff) at position 0"),
        (b"bytes", "must be a string; got bytes"),
    ],
)
def test_check_text_names_the_field_and_the_position(value: Any, message: str) -> None:
    with pytest.raises(InvalidInput, match=r"^reason ") as info:
        check_text("reason", value)
    assert message in str(info.value)


def test_check_text_keeps_every_other_string() -> None:
    text = "caf\u00e9 \U0001f600 \t\n tab, emoji, newline and \u202e bidi"
    assert check_text("text", text) is text


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"a": {"b": ["x", "y\x00"]}}, 'meta["a"]["b"][1] contains a NUL'),
        ({"a\ud800": 1}, 'meta key "a\\ud800"'),
        ({"k" * 60 + "\x00": 1}, '..." contains a NUL'),
        ([{"n": float("nan")}], 'meta[0]["n"] is nan'),
        ({"x": {1, 2}}, 'meta["x"] holds a set'),
        ({"x": b"b"}, 'meta["x"] holds a bytes'),
        ({2: "x"}, "non-string key 2"),
    ],
)
def test_check_json_says_where_the_problem_is(value: Any, where: str) -> None:
    with pytest.raises(InvalidInput) as info:
        check_json("meta", value)
    assert where in str(info.value)


def test_check_json_bounds_depth_and_size_and_returns_canonical_json() -> None:
    deep: Any = 1
    for _ in range(5):
        deep = [deep]
    assert check_json("m", deep, max_depth=5) == "[[[[[1]]]]]"
    with pytest.raises(InvalidInput, match="nests deeper than 4 levels"):
        check_json("m", deep, max_depth=4)
    with pytest.raises(InvalidInput, match="is 13 bytes of JSON; at most 10"):
        check_json("m", {"a": "12345"}, max_bytes=10)
    with pytest.raises(InvalidInput, match="number JSON cannot carry"):
        check_json("m", {"a": 10**5000})
    proxy = MappingProxyType({"b": 1, "a": (True, None, 1.5)})
    assert check_json("m", proxy) == '{"a":[true,null,1.5],"b":1}'


def test_json_strings_walks_keys_and_values_with_their_key() -> None:
    found = sorted(json_strings({"a": ["x", {"b": "y"}], "c": "z", "n": 1}), key=repr)
    assert found == sorted(
        [(None, "a"), (None, "x"), (None, "b"), ("b", "y"), (None, "c"), ("c", "z"), (None, "n")],
        key=repr,
    )


def test_secrets_are_found_in_keys_values_and_values_stated_by_their_key() -> None:
    assert secret_kinds({"password": "hunter2x7"}) == ["password"]
    assert secret_kinds({"x": ["my pin is 4821"]}) == ["password"]
    assert secret_kinds({"4111 1111 1111 1111": "card"}) == ["payment_card"]
    assert secret_kinds({"password": "required", "note": "ok"}) == []
    value, kinds = redact_json({"password": "hunter2x7", "list": ["ok", "pw: s3cr3t!"], "n": 2})
    assert value == {
        "password": "[REDACTED:password]",
        "list": ["ok", "pw: [REDACTED:password]"],
        "n": 2,
    }
    assert kinds == ["password"]


def test_refuse_secrets_names_the_first_field_and_never_the_secret() -> None:
    refuse_secrets({"text": "Alice drinks tea", "value": None})
    with pytest.raises(RefusedContent) as info:
        refuse_secrets({"text": "fine", "reason": "the password is hunter2x7"})
    assert str(info.value).startswith("refused: the reason contains a password")
    assert "hunter2x7" not in str(info.value)
