"""The MiniLM embedders under concurrent calls: small calls made at once are merged into
one forward pass (`remem.batching`), and each caller still gets its own texts' vectors,
as it would alone (up to rounding)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest

from remem.embed.base import Embedder, embed_queries
from remem.embed.minilm.embedder import MiniLMEmbedder
from tests.support.embed import TEXTS, minilm_or_skip, packaged_or_skip, row_cosines

QUERIES = [f"{text} (query {i})" for i, text in enumerate(TEXTS[1:9] * 3)]


def _concurrently(
    embedder: Embedder, embed: Callable[[list[str]], np.ndarray]
) -> dict[int, np.ndarray]:
    """Each query embedded by a thread of its own, 24 threads started together."""
    out: dict[int, np.ndarray] = {}
    start = threading.Barrier(len(QUERIES))

    def work(i: int) -> None:
        start.wait()
        out[i] = embed([QUERIES[i]])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(QUERIES))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    return out


def _float32_queries() -> Embedder:
    """The float32 model with float32 queries: what it merges is its query encoder's."""
    return MiniLMEmbedder(minilm_or_skip().path, query="float32")


@pytest.mark.model
@pytest.mark.parametrize("make", [_float32_queries, packaged_or_skip], ids=["float32", "int8"])
def test_each_concurrent_caller_gets_its_own_vector(make: Callable[[], Embedder]) -> None:
    alone = embed_queries(make(), QUERIES)  # one caller, every query: the reference
    embedder = make()
    embedder.embed(["load the model first"])
    got = _concurrently(embedder, lambda texts: embed_queries(embedder, texts))
    together = np.vstack([got[i] for i in range(len(QUERIES))])
    assert row_cosines(together, alone).min() >= 0.99999
    # and some of them were merged (24 threads released at once on a 2-core machine)
    assert getattr(embedder, "merged_batches", 0) >= 1


@pytest.mark.model
def test_int8_queries_do_not_depend_on_what_runs_beside_them() -> None:
    """The default int8 query encoder quantises each matmul's input over the batch, so
    it embeds each query alone: the same bytes whatever else is embedded at once."""
    embedder = minilm_or_skip()
    alone = np.vstack([embed_queries(embedder, [q]) for q in QUERIES])
    in_one_call = embed_queries(minilm_or_skip(), [QUERIES[0], TEXTS[0] * 20, *QUERIES[1:]])
    np.testing.assert_array_equal(np.delete(in_one_call, 1, axis=0), alone)
    fresh = minilm_or_skip()
    fresh.embed(["load the model first"])
    got = _concurrently(fresh, lambda texts: embed_queries(fresh, texts))
    np.testing.assert_array_equal(np.vstack([got[i] for i in range(len(QUERIES))]), alone)
