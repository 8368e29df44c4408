"""`Memory`'s export, deletion and re-embedding methods (a mixin): thin over
`remem.lifecycle.erasure` and `remem.lifecycle.reindex`.

Apart from `remem.memory.memory` so that the facade stays short; the erasure flow (and
the thread state it reaches) is imported when one of these is first called, not
when `Memory` is, so a process that only recalls never loads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from remem.memory.deps import Deps
from remem.memory.embedder import BoundEmbedder
from remem.policy.scope import check_name
from remem.store.roles import Asked, ForgetReport, Store
from remem.telemetry.hooks import observed
from remem.writes.checks import count

FILL_ALL = 1 << 62  # `reindex` fills every vector missing, however many

if TYPE_CHECKING:
    from remem.lifecycle.reindex import ReindexProgress, ReindexReport


class LifecycleMethods:
    """Export everything of an actor; forget a record or an actor; list deletions."""

    deps: Deps
    tenant: str
    store: Store
    _embedding: BoundEmbedder

    # -- export ------------------------------------------------------------------------

    def export(self, *, actor: str) -> Iterator[dict[str, Any]]:
        """Everything remem holds about one actor, as JSON-ready rows.

        One row per event (`"type": "event"`), per record with its full history
        (`"type": "record"`), and, where the store keeps thread state, per
        checkpoint and tool call, in a portable shape.
        """
        from remem.lifecycle import erasure

        return erasure.export(self.deps, actor)

    # -- deletion ---------------------------------------------------------------------

    @observed
    def forget(
        self,
        *,
        record_id: str | None = None,
        actor: str | None = None,
        vacuum: bool = False,
        asked: Asked | None = None,
    ) -> ForgetReport:
        """Erase one record, or everything of one actor, from every surface.

        Leaves a content-free tombstone so a pending or late extraction job
        cannot recreate it, then reads every surface back: `verified` is True
        only when nothing of it remains. Summaries that covered a forgotten
        record's events are erased and made again from what remains. On SQLite
        the erasure also reaches the file (no copy in free pages, the WAL or
        the full-text index); on PostgreSQL `vacuum` runs VACUUM on the tables
        it touched. Events added for an erased actor later start a new memory.
        `asked` (who asked, and why) is kept in the deletion job beside whose data
        it was, for its receipt (`remem.lifecycle.receipt`); a reason that repeats
        a word of what is erased is refused first (InvalidInput, nothing erased:
        `remem.lifecycle.reasons`).
        """
        from remem.lifecycle import erasure

        return erasure.forget(
            self.deps, record_id=record_id, actor=actor, vacuum=vacuum, asked=asked
        )

    def fresh_start(self, actor: str) -> dict[str, str] | None:
        """If `actor` was erased: `{"erased_at", "message"}` saying that events added
        since start a new memory (the erasure's tombstone covers only the events that
        arrived before it); None for an actor never erased."""
        from remem.lifecycle import erasure

        return erasure.fresh_start(self.deps, check_name("actor", actor))

    def deletions(self, limit: int = 100) -> list[dict[str, Any]]:
        """The tenant's deletion jobs, newest first, with what each removed and verified."""
        return self.store.erasure.deletions(self.tenant, count("limit", limit))

    # -- re-embedding ---------------------------------------------------------------------

    def reindex(
        self,
        *,
        batch: int = 64,
        dry_run: bool = False,
        max_batches: int | None = None,
        progress: Callable[[ReindexProgress], None] | None = None,
    ) -> ReindexReport:
        """Re-embed this tenant's records, events and document chunks whose vectors another
        embedder made, with this memory's embedder, `batch` texts at a time; then make
        the new vectors the index and remove the old ones, in one transaction.

        Resumes where a killed run stopped; `dry_run` only counts; `max_batches` stops
        after that many batches (run it again to go on); `progress` is called after each
        stored batch. Meanwhile recall with the new embedder is lexical only, and with
        the old one uses the old vectors. See `remem.lifecycle.reindex`.

        Once the index is the embedder's (switched now, or before), what was written
        without vectors is given them too (`ReindexReport.filled`): what a process
        still on the old embedder wrote after the switch, or an outage left out.
        """
        from dataclasses import replace

        from remem.lifecycle import reindex
        from remem.memory.backfill import fill_vectors

        report = reindex.reindex(self.deps, self._embedding.resolved(), batch=batch,
                                 dry_run=dry_run, max_batches=max_batches,
                                 progress=progress)  # fmt: skip
        self._embedding.reset()  # checked against the store as it is now, at next use
        if not dry_run and (report.switched or report.nothing_to_do):
            filled, _ = fill_vectors(self.deps, FILL_ALL)
            report = replace(report, filled=filled)
        return report

    def cancel_reindex(self) -> bool:
        """Drop this tenant's pending reindex and the new vectors it stored (the old vectors
        stay the index); whether one was pending."""
        dropped = self.store.reindexing.cancel(self.tenant)
        self._embedding.reset()
        return dropped
