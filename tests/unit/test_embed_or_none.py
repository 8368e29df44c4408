"""`embed_or_none` lets a write go on without vectors when a local model fails on its
texts, and logs why in a bounded line (`REASON_MOST`): a model's message may echo a
100,000-character input, which is not written whole to the log."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from remem.embed.base import HashEmbedder, Vectors, embed_or_none


class Echoing(HashEmbedder):
    """A local model whose error repeats the input it could not take."""

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise ValueError(f"cannot tokenize {texts[0]!r}")


def test_a_local_models_failure_is_logged_in_a_bounded_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    text = "my passport number is in the desk drawer " * 2500  # 105,000 characters
    model = Echoing(8)
    with caplog.at_level(logging.WARNING, logger="remem"):
        assert embed_or_none(model, [text]) == [None]
    (line,) = [r.getMessage() for r in caplog.records]
    assert "ValueError" in line
    assert len(line) < 400, f"a log line of {len(line):,} characters"
    assert getattr(model, "missed", False)
