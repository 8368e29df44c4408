"""The files xdist's workers take first (`tests.support.order`) exist: a renamed or
removed one would silently fall back to its place in collection order."""

from __future__ import annotations

from tests.support import ROOT
from tests.support.order import LONGEST_FIRST, rank


def test_every_file_taken_first_exists() -> None:
    missing = [path for path in LONGEST_FIRST if not (ROOT / path).is_file()]
    assert missing == [], f"tests/support/order.py names files that do not exist: {missing}"


def test_the_files_named_come_first_in_their_order_and_the_rest_after() -> None:
    first, last = LONGEST_FIRST[0], LONGEST_FIRST[-1]
    assert rank(f"{first}::test_a[x]") < rank(f"{last}::test_b") < rank("tests/unit/test_c.py")
    assert rank("tests/unit/test_c.py::t") == rank("tests/flows/test_d.py::t")
