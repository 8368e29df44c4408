"""What recall keeps in this process between recalls, dropped after an erasure.

Recall keeps, for speed, what earlier recalls read: the stems of candidate texts
(`remem.recall.fusion`, keyed by the text), and per scope the records near each life
domain (`remem.recall.applies`) and the turns that state a constraint
(`remem.recall.constraints`).
None is served once an erasure moved the scope's version on, but each holds erased
words until it is replaced: `drop_erased` empties them in the process that erases
(`remem.lifecycle.erasure`); other processes drop them by `remem.linger`'s rule.
"""

from __future__ import annotations

from remem.recall import applies, constraints
from remem.recall.fusion import drop_kept_stems
from remem.store.roles import Store


def drop_erased(store: Store, tenant: str, actor: str | None) -> None:
    """Drop what recall keeps of one erased scope of `store` (`actor`; None: a document,
    kept in none of the scopes' caches), and every kept text's stems."""
    drop_kept_stems()
    if actor is None:
        return
    applies.drop_scope(store, tenant, actor)
    constraints.drop_scope(store, tenant, actor)
