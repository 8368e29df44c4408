"""The cases of `tests/test_extract_records.py`, run on PostgreSQL (a fresh database of
the session's server per test, see `tests.pg_helpers`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from remem import Memory
from remem.embed import HashEmbedder
from remem.ids import counter_ids
from tests import pg_helpers

from .conftest import Clock
from .test_extract_records import (  # noqa: F401  (collected here, on PostgreSQL)
    test_code_and_remarks_to_the_listener_leave_no_record,
    test_records_of_a_two_person_thread_name_their_speaker,
    test_two_dislikes_of_one_kind_of_thing_are_two_records,
)


@pytest.fixture
def mem(pg_admin_dsn: str, clock: Clock) -> Iterator[Memory]:
    with pg_helpers.fresh_database(pg_admin_dsn) as dsn:
        url = pg_helpers.as_url(dsn)
        with Memory.open(url, embedder=HashEmbedder(), clock=clock, ids=counter_ids()) as m:
            yield m
