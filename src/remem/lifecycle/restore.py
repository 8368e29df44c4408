"""Erasures after a restore: a database brought back from a backup holds what was
erased since the backup was taken; `replay` erases it again.

An erasure leaves a content-free tombstone (tenant, kind, key, time) in the database
it ran on. Before a restore, the tombstones of the database being replaced (or a
file of them, `remem erasures export`) are read; after it, every one that the
restored database lacks, or holds with an older time, is replayed in it:

- `actor`: the actor is forgotten again (everything of it in the backup predates
  the erasure, so nothing a fresh start stored after it is lost: that is not in the
  backup, and a tombstone the backup already holds is not replayed);
- `record` and `document`: forgotten again where the restored database has them;
- `event` (the source of a forgotten record): its text is emptied, even when the
  record it made is not in the backup;

and the tombstones are put back with their own times, so a late extraction job
cannot bring anything back. Every replayed erasure is a deletion job in the log,
like any other, and the files are scrubbed after (`Store.scrub_files`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from remem.errors import NotFound, RefusedContent
from remem.lifecycle.erasure import forget, forget_document
from remem.memory.deps import Deps
from remem.store.values import Tombstone


def to_replay(have: Iterable[Tombstone], marks: Iterable[Tombstone]) -> list[Tombstone]:
    """The marks a database holding `have` lacks, or holds with an older time; pure."""
    held = {(t.tenant, t.kind, t.key): t.created_at for t in have}
    out = []
    for m in marks:
        at = held.get((m.tenant, m.kind, m.key))
        if at is None or at < m.created_at:
            out.append(m)
    return out


def replay(deps: Deps, marks: Sequence[Tombstone]) -> dict[str, int]:
    """Erase again, in `deps.tenant`, what `marks` (a newer copy's tombstones) erased
    and this database still holds (see the module docstring); counts of what was
    replayed: actors, records, documents, events."""
    todo = [m for m in to_replay(deps.store.erasure.tombstones(), marks) if m.tenant == deps.tenant]
    counts = {"actors": 0, "records": 0, "documents": 0, "events": 0}
    kept = []
    for m in todo:
        try:
            if m.kind == "actor":
                forget(deps, actor=m.key)
                counts["actors"] += 1
            elif m.kind == "record":
                forget(deps, record_id=m.key)
                counts["records"] += 1
            elif m.kind == "document":
                forget_document(deps, m.key)
                counts["documents"] += 1
        except NotFound:  # not in the backup: its tombstone is put back below
            pass
        except RefusedContent:  # an actor "named" by a secret that names no one: not kept
            continue
        kept.append(m)
    counts["events"] = deps.store.erasure.restore_tombstones(deps.tenant, kept)
    deps.store.erasure.scrub_files(vacuum=True)
    return counts
