"""A statement's fields are checked alike by the HTTP create item and the batch item: both
name `remem.writes.batch`'s KindName, SensitivityName, FieldName, FieldValue and Until."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from remem.service.schemas import CreateItem
from remem.writes.batch import WriteItem

STATEMENTS: list[dict[str, Any]] = [
    {"field": ""},
    {"field": "x" * 201},
    {"field": "home\u200bcity"},  # a zero-width space: a look-alike field
    {"field": 5},
    {"field": "home city", "value": "v" * 5000},
    {"value": 5},
    {"valid_until": "x" * 65},
    {"valid_until": "not a time"},
    {"kind": "procedural"},
    {"sensitivity": "secret"},
    {
        "field": "home city",
        "value": "Porto",
        "valid_until": "2030-01-01T00:00:00+00:00",
        "kind": "preference",
        "sensitivity": "personal",
    },
    {"field": None, "value": None, "valid_until": None},
]


def _answer(model: type[BaseModel], statement: dict[str, Any]) -> object:
    body = {"actor_id": "ann", "text": "Ann lives in Porto", **statement}
    try:
        item = model.model_validate(body)
    except ValidationError as exc:
        return [(e["loc"], e["type"], e["msg"]) for e in exc.errors()]
    return {name: getattr(item, name) for name in statement}


@pytest.mark.parametrize("statement", STATEMENTS)
def test_the_create_item_and_the_batch_item_answer_a_statement_alike(
    statement: dict[str, Any],
) -> None:
    assert _answer(CreateItem, statement) == _answer(WriteItem, statement)


def test_the_statements_tell_good_from_bad() -> None:
    answers = [_answer(CreateItem, s) for s in STATEMENTS]
    assert sum(isinstance(a, list) for a in answers) == len(STATEMENTS) - 2
