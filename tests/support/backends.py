"""Running a library test on both backends: mark it `both_backends`, and the `mem` and
`db_path` fixtures (tests/conftest.py) give it a SQLite file, then a fresh PostgreSQL
database of the session's server."""

from __future__ import annotations

import pytest

BACKENDS = ("sqlite", "postgres")

both_backends = pytest.mark.parametrize("db_backend", BACKENDS, indirect=True)
