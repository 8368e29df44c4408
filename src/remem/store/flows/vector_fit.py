"""Vectors written only by the model of the index (issue 36): the check every vector write
makes inside its own transaction, once for both backends.

A process that bound its embedder before another process switched the index to another
model (`remem reindex` there) would otherwise go on writing vectors of the old model,
which no search of the new model compares with anything: what it wrote would be found
by words only, silently, and the store would hold two models' vectors again. So each
write of vectors (records', events', document chunks', and the late vectors of
`remem.store.flows.backfill`) first reads, in its transaction, the models whose vectors
the tenant holds (`vector_models`) and the reindex pending (`reindexes`), and stores its
vectors only when they `fit`; otherwise it writes its rows without vectors, which the
catch-up (`remem.memory.backfill`) embeds later with the index's model.

SQLite's write transaction holds the database's write lock, so the read and the write
see the same index. On PostgreSQL a writer takes a shared advisory lock of the tenant
(`VECTOR_FIT_LOCK`) before the read, and the switch and the cancel of a reindex take it
exclusively before they change the index, so a write's read sees the switch either
wholly done or not begun; while the tenant holds no vectors, its writers also take
turns on a second lock before the read (`VECTOR_FIRST_LOCK`), so that two first writers
of different models cannot both find the index empty.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from remem.store.flows.backend import Row, Tx

log = logging.getLogger("remem")

# the models held, and the model of the pending reindex, of one tenant (SQLite's marks;
# PostgreSQL's `remem.store.postgres.sql.VECTOR_FIT` takes its lock first)
VECTOR_FIT = """
SELECT 0 AS pending, model, dim FROM vector_models WHERE tenant = :tenant
UNION ALL SELECT 1 AS pending, model, dim FROM reindexes WHERE tenant = :tenant
"""


def fits(
    held: Iterable[tuple[str, int]], pending: tuple[str, int] | None, model: str, dim: int
) -> bool:
    """Whether vectors of `model` (`dim` numbers) may be stored beside the tenant's:
    the model of a pending reindex may (its vectors become the index at the switch); a
    model the tenant holds may, at its own dimension; another may only when the tenant
    holds no vectors at all (the first writer sets the model). Pure."""
    if pending is not None and pending == (model, dim):
        return True
    dims = dict(held)
    if model in dims:
        return dims[model] == dim
    return not dims


def vectors_fit(db: Tx, statements: Sequence[str], tenant: str, model: str,
                dims: Iterable[int]) -> bool:  # fmt: skip
    """Run `statements` (the backend's lock, if any, then the read of `VECTOR_FIT`) in
    the open transaction `db` and say whether vectors of `model` at each of `dims` fit
    (`fits`); logs a warning when they do not."""
    rows: Sequence[Row] = []
    for sql in statements:
        rows = db.execute(sql, {"tenant": tenant}).fetchall()
    held = [(str(r["model"]), int(r["dim"])) for r in rows if not r["pending"]]
    pending = next(((str(r["model"]), int(r["dim"])) for r in rows if r["pending"]), None)
    wanted = sorted(set(dims))
    if all(fits(held, pending, model, dim) for dim in wanted):
        return True
    log.warning(
        "tenant %r: vectors of %s were not stored: the index is %s's now (another process "
        "changed the embedder, `remem reindex`); the rows wait for the catch-up to embed "
        "them with that model. Restart this process with the new embedder",
        tenant, model, ", ".join(m for m, _ in held) or "another model",
    )  # fmt: skip
    return False
