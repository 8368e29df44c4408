"""A PostgreSQL URL's password never reaches an error: the driver quotes a URL it cannot
read whole, and remem's message says what it quoted without the password."""

from __future__ import annotations

import pytest

from remem import Memory
from remem.errors import StoreError
from remem.store.postgres.backend import without_passwords


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("postgresql://u:SECRETPW123@[::1/db", "postgresql://u:***@[::1/db"),
        (
            'in URI: "postgres://ana:p%40ss@h:5/db" there',
            'in URI: "postgres://ana:***@h:5/db" there',
        ),
        ("host=h password=s3cret user=u", "host=h password=*** user=u"),
        ("password = 'a b\\' c' user=u", "password = *** user=u"),
        ("postgresql://u@h/db and postgresql://h/db", "postgresql://u@h/db and postgresql://h/db"),
    ],
)
def test_passwords_are_taken_out_of_quoted_urls(given: str, shown: str) -> None:
    assert without_passwords(given) == shown


def test_a_url_the_driver_cannot_read_is_refused_without_its_password() -> None:
    with pytest.raises(StoreError) as caught:
        Memory.open("postgresql://u:SECRETPW123@[::1/db")
    assert "SECRETPW123" not in str(caught.value) and "u:***@" in str(caught.value)
