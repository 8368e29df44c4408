"""The records a lookup by field reads: the field's own, and its family's.

`fact`, `pin` and `records(field=...)` ask for a field by the name a person would
use. The field's own records are read by every name they were stored under
(`remem.policy.fields.stored_names`); a name that is also a family's
(`remem.policy.fields.family_of`: "allergies", "diet", "pets", "family", "job",
"devices", in the singular, the plural and common synonyms) reads the family's
fields too, by their names and by the family keys' heads ("allergy:"), each read
by the store's index on the field.
"""

from __future__ import annotations

from collections.abc import Callable

from remem.model import Record
from remem.policy.fields import family_of, stored_field, stored_names
from remem.store.roles import RecordStore, Scope


def records_about(
    records: RecordStore, scope: Scope, field: str, own: Callable[[str], list[Record]] | None = None
) -> list[Record]:
    """Active and invalid records of `scope` about a canonical `field` or its family,
    each once, in the order read (the field's own first). `own` reads the records of one
    stored name (default: the newest 10,000 of it, `RecordStore.records_by_field`); a
    lookup passes the read of what it needs (those held at a time, the active ones)."""
    read = own or (lambda stored: records.records_by_field(scope, stored))
    family = family_of(field)
    names = [field, *(family.exact if family else ())]
    found = [r for name in dict.fromkeys(names) for stored in stored_names(name)
             for r in read(stored)]  # fmt: skip
    if family is not None:
        for prefix in family.prefixes:
            found += [
                r
                for r in records.records_by_field_prefix(scope, prefix)
                if r.field and family.holds(stored_field(r.field))
            ]
    once: dict[str, Record] = {}
    for r in found:
        once.setdefault(r.id, r)
    return list(once.values())
