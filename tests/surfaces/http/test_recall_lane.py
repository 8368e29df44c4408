"""The recall lane (`remem.service.onehop.RecallHop`): a server process runs at most
`recall_threads` recalls at once, the others wait their turn, and no other route waits
behind them. Served by a real uvicorn on loopback; the embedder is remem's deterministic
`HashEmbedder`, whose query embedding here also counts the recalls inside it at once and
can be held until the test lets it go. Batch writes have a lane of their own
(`BatchLane`), tested the same way on the records' embeddings."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from remem.errors import InvalidInput
from remem.service.http import create_app
from remem.service.lane import default_recall_threads
from tests.support.lane import Gate
from tests.support.servers import key_for, serving

RETRIEVE = "/v1/memories/retrieve"
CREATE = "/v1/memories/batch-create"


def _asked(http: httpx.Client, i: int) -> int:
    body = {"actor_id": "ana", "query": f"where does Ana live {i}"}
    return http.post(RETRIEVE, json=body, timeout=60).status_code


def _most_at_once(tmp_path: Path, threads: int) -> int:
    db = str(tmp_path / f"lane{threads}.db")
    gate = Gate(hold=0.15)
    app = create_app(db, embedder=gate, worker=False, recall_threads=threads)
    with serving(app, key_for(db)) as http, ThreadPoolExecutor(4) as pool:
        made = http.post(
            CREATE, json={"records": [{"actor_id": "ana", "text": "Ana lives in Faro"}]}
        )
        assert made.status_code == 200, made.text
        assert list(pool.map(lambda i: _asked(http, i), range(4))) == [200] * 4
    return gate.most


def test_one_recall_thread_runs_the_recalls_one_at_a_time(tmp_path: Path) -> None:
    assert _most_at_once(tmp_path, 1) == 1
    assert _most_at_once(tmp_path, 3) >= 2  # the same requests overlap given room


def test_a_write_does_not_wait_behind_a_full_lane(tmp_path: Path) -> None:
    db = str(tmp_path / "held.db")
    gate = Gate()
    app = create_app(db, embedder=gate, worker=False, recall_threads=1)
    with serving(app, key_for(db)) as http, ThreadPoolExecutor(2) as pool:
        gate.open.clear()
        first = pool.submit(_asked, http, 1)
        assert gate.entered.acquire(timeout=30)  # the one recall thread is held
        second = pool.submit(_asked, http, 2)
        body = {"records": [{"actor_id": "ana", "text": "Ana lives in Faro"}]}
        made = http.post(CREATE, json=body, timeout=10)
        assert made.status_code == 200, made.text  # written while the lane is full
        assert not first.done() and not second.done()
        assert gate.inside == 1  # the second recall waits outside
        gate.open.set()
        assert (first.result(timeout=30), second.result(timeout=30)) == (200, 200)
    assert gate.most == 1


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_recall_threads_must_be_a_whole_number_of_at_least_one(tmp_path: Path, bad: object) -> None:
    with pytest.raises(InvalidInput, match="recall_threads"):
        create_app(str(tmp_path / "x.db"), worker=False, recall_threads=bad)  # type: ignore[arg-type]


def test_the_default_shares_the_cores_among_the_workers() -> None:
    one = default_recall_threads()
    assert one >= 1
    assert default_recall_threads(2) == max(1, one // 2)
    assert default_recall_threads(10_000) == 1


def test_batch_writes_run_in_a_lane_of_their_own(tmp_path: Path) -> None:
    """One batch thread: a second batch waits outside (holding no thread) while the
    first is held, and the routes beside them are served meanwhile."""
    db = str(tmp_path / "batches.db")
    gate = Gate(records=True)
    gate.open.clear()
    app = create_app(db, embedder=gate, worker=False, batch_threads=1)

    def batch(i: int) -> int:
        body = {"records": [{"actor_id": "ana", "text": f"Ana keeps {i} cats"}]}
        return http.post(CREATE, json=body, timeout=60).status_code

    with serving(app, key_for(db)) as http, ThreadPoolExecutor(3) as pool:
        first = pool.submit(batch, 1)
        assert gate.entered.acquire(timeout=30)  # the one batch thread is held
        rest = [pool.submit(batch, 2), pool.submit(batch, 3)]
        assert http.get("/v1/memories", params={"actor_id": "ana"}).status_code == 200
        assert _asked(http, 1) == 200  # a recall is not held either
        assert gate.inside == 1 and not any(f.done() for f in [first, *rest])
        gate.open.set()
        assert [f.result(timeout=30) for f in [first, *rest]] == [200] * 3
        listed = http.get("/v1/memories", params={"actor_id": "ana"}).json()
    assert gate.most == 1
    texts = sorted(r["text"] for r in listed["records"])
    assert texts == [f"Ana keeps {i} cats" for i in (1, 2, 3)]


@pytest.mark.parametrize("bad", [0, 2.0, False])
def test_batch_threads_must_be_a_whole_number_of_at_least_one(tmp_path: Path, bad: object) -> None:
    with pytest.raises(InvalidInput, match="batch_threads"):
        create_app(str(tmp_path / "x.db"), worker=False, batch_threads=bad)  # type: ignore[arg-type]
