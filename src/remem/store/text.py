"""Text both store backends share: query words, stopwords, LIKE patterns, migrations.

Written once here and used by `remem.store.sqlite.store` and `remem.store.postgres.store`
(and by recall, which drops the same function words from a query): the word
splitter and stopword list decide what a lexical search looks for on either
backend, the LIKE escaping what a namespace prefix matches, and the migration
reader how each backend's numbered scripts are found and cut into statements.
"""

from __future__ import annotations

import re
from importlib import resources

WORD = re.compile(r"[^\W_]+", re.UNICODE)

# Function words match nearly every record and only add noise to an OR-query.
STOPWORDS = frozenset(
    """a about after again all am an and any are as at be been before being but by can could
    did do does doing don for from had has have having he her here hers him his how i i'm if
    in into is it its it's just me more most my no nor not of off on once only or other our
    ours out over own s same she should so some such t than that the their theirs them then
    there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours""".split()
)


def words(text: str, limit: int = 32) -> list[str]:
    """The lower-cased content words of a query, deduplicated, at most `limit`.

    Function words are dropped unless the query has nothing else.
    """
    found = WORD.findall(text.lower())
    content = [w for w in found if w not in STOPWORDS] or found
    seen: dict[str, None] = {}
    for w in content:
        if w not in seen:
            seen[w] = None
        if len(seen) >= limit:
            break
    return list(seen)


def like_prefix(prefix: str) -> str:
    """A LIKE pattern matching strings that start with `prefix`, wildcards escaped
    (with `ESCAPE '\\'` on both backends)."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


def read_migrations(folder: str) -> list[tuple[int, str]]:
    """The numbered scripts (`0001_name.sql`) of one migrations folder of `remem.store`,
    in order: `sqlite/migrations` or `postgres/migrations`."""
    found = []
    for item in (resources.files("remem.store") / folder).iterdir():
        if item.name.endswith(".sql"):
            found.append((int(item.name.split("_", 1)[0]), item.read_text()))
    return sorted(found)


def migration_names(folder: str) -> dict[int, str]:
    """The migrations of one folder (as `read_migrations`) by number: `0003_keys.sql`."""
    files = (resources.files("remem.store") / folder).iterdir()
    return {int(f.name.split("_", 1)[0]): f.name for f in files if f.name.endswith(".sql")}


def split_sql(script: str) -> list[str]:
    """Split a migration into statements (our SQL has no `--` or `;` in literals). A `;`
    inside a body stays in its statement: between `$$` quotes (a PostgreSQL function) or
    between a SQLite `CREATE TRIGGER`'s `BEGIN` and its `END`."""
    lines = [ln.split("--", 1)[0] for ln in script.splitlines()]
    statements: list[str] = []
    pending = ""
    for part in "\n".join(lines).split(";"):
        pending = f"{pending};{part}" if pending else part
        if not _in_body(pending) and pending.strip():
            statements.append(pending.strip())
            pending = ""
    if pending.strip():
        statements.append(pending.strip())
    return statements


_TRIGGER = re.compile(r"\s*CREATE\s+TRIGGER\b.*\bBEGIN\b", re.I | re.S)
_END = re.compile(r"\bEND\s*$", re.I)


def _in_body(statement: str) -> bool:
    """Whether `statement` stops inside a function's or a trigger's body."""
    if statement.count("$$") % 2:
        return True
    return bool(_TRIGGER.match(statement)) and not _END.search(statement)
