"""Data classes that must never be stored: secrets and government ids.

DESIGN §4: passwords, access tokens, API keys, recovery codes, payment card
numbers, bank account numbers and government ids are refused on every write
path, with a clear reason, and never logged. This module only decides.
`find_secrets` says where the secrets are, `redact` makes a text safe to process
and log, and `refusal_reason` says why a write was refused without repeating
the secret. `refuse_secrets` and `redact_json` apply them to every string of a
write: keys and values of JSON alike, a value also read as stated by its key
(`{"password": "x"}`).

What each class looks like, and what is knowingly missed, is in
`remem.policy.detectors`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from remem.errors import RefusedContent
from remem.policy.detectors import detect, iban_valid, luhn_valid
from remem.policy.text import json_strings

__all__ = [
    "KINDS",
    "REDACTED_MARK",
    "Finding",
    "find_secrets",
    "holds_secret",
    "iban_valid",
    "luhn_valid",
    "redact",
    "redact_json",
    "refusal_reason",
    "refuse_secrets",
    "secret_kinds",
    "shown",
]

KINDS: tuple[str, ...] = (
    "password",
    "api_key",
    "access_token",
    "private_key",
    "recovery_code",
    "payment_card",
    "bank_account",
    "government_id",
)

# How a refusal names each kind. Never the value itself.
_NAMES: dict[str, str] = {
    "password": "a password",
    "api_key": "an API key",
    "access_token": "an access token",
    "private_key": "a private key",
    "recovery_code": "a recovery code",
    "payment_card": "a payment card number",
    "bank_account": "a bank account number (IBAN)",
    "government_id": "a government id number",
}

# When two detectors claim the same span, the more specific kind names it.
_PRIORITY: dict[str, int] = {
    "private_key": 8,
    "payment_card": 7,
    "bank_account": 6,
    "government_id": 5,
    "api_key": 4,
    "access_token": 3,
    "recovery_code": 2,
    "password": 1,
}


@dataclass(frozen=True, slots=True)
class Finding:
    """A secret found in a text: `text[start:end]` is the secret itself."""

    kind: str
    start: int
    end: int

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown secret kind {self.kind!r}; expected one of {KINDS}")
        if not 0 <= self.start < self.end:
            raise ValueError(f"a finding needs 0 <= start < end; got {self.start}, {self.end}")


# -- the public functions ---------------------------------------------------------------------


def _merge(findings: Iterable[Finding]) -> list[Finding]:
    """Overlapping findings become one covering them all, named by the most specific kind."""
    merged: list[Finding] = []
    for f in sorted(findings, key=lambda f: (f.start, -f.end)):
        if merged and f.start < merged[-1].end:
            prev = merged[-1]
            kind = max(prev, f, key=lambda g: (g.end - g.start, _PRIORITY[g.kind])).kind
            merged[-1] = Finding(kind, prev.start, max(prev.end, f.end))
        else:
            merged.append(f)
    return merged


def find_secrets(text: str) -> list[Finding]:
    """Where `text` holds data that remem must never store.

    Returns findings in text order, none overlapping; empty when the text is
    clean. `text[f.start:f.end]` is the secret itself (for a stated secret,
    the value without its label), so that `redact` keeps the context.
    """
    return _merge(Finding(kind, start, end) for kind, start, end in detect(text))


def redact(text: str, findings: Sequence[Finding] | None = None) -> str:
    """`text` with each secret replaced by `[REDACTED:<kind>]`.

    With `findings` omitted the text is scanned here; pass the findings from
    `find_secrets` to avoid scanning twice. The result is safe to log and to
    process further, and says what kind of secret was there.
    """
    spans = find_secrets(text) if findings is None else _merge(findings)
    parts: list[str] = []
    last = 0
    for f in spans:
        parts.append(text[last : f.start])
        parts.append(f"[REDACTED:{f.kind}]")
        last = max(last, f.end)
    parts.append(text[last:])
    return "".join(parts)


def refusal_reason(findings: Iterable[Finding | str], what: str = "the text") -> str:
    """A one-line message naming the kinds of secret found in `what`, never the secrets.

    Takes findings, or kinds (from `secret_kinds`). Kinds are named once each,
    in the order they first appear. Raises ValueError for none: there is
    nothing to refuse.
    """
    kinds = list(dict.fromkeys(f if isinstance(f, str) else f.kind for f in findings))
    if not kinds:
        raise ValueError("refusal_reason needs at least one finding")
    names = [_NAMES[k] for k in kinds]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"refused: {what} contains {listed}; remem never stores secrets"


def shown(value: object) -> str:
    """How an error message names a refused input without repeating it: a string by its
    length (or the kinds of secret it holds), anything else by its type; None, True and
    False by name. A value sent in the wrong place may be a secret (a password typed as
    a name, a card number as a time), so no refused value is quoted back."""
    if isinstance(value, str):
        kinds = secret_kinds(value)
        if kinds:
            names = " and ".join(dict.fromkeys(_NAMES[k] for k in kinds))
            return f"a value holding {names} (not shown)"
        return f"a text of {len(value)} characters (not shown)"
    if value is None or isinstance(value, bool):
        return repr(value)
    return f"a value of type {type(value).__name__} (not shown)"


REDACTED_MARK = "[REDACTED:"


def holds_secret(text: str, field: str | None = None, value: str | None = None) -> bool:
    """Whether a candidate carries a secret, or the placeholder of a redacted one, in its
    text, its field or its value (the value also read as stated by its field)."""
    parts = [p for p in (text, field, value) if p]
    if any(REDACTED_MARK in p for p in parts):
        return True
    stated = {field: value} if field and value else value
    return bool(secret_kinds(text) or secret_kinds(field) or secret_kinds(stated))


# -- every stored string --------------------------------------------------------------------


def _findings_in(key: str | None, text: str) -> list[Finding]:
    """The secrets of a string, read also as the value stated by its key ("password": "x")."""
    found = find_secrets(text)
    if key:
        prefix = f"{key}: "
        for f in find_secrets(prefix + text):
            if f.end > len(prefix):
                found.append(Finding(f.kind, max(f.start - len(prefix), 0), f.end - len(prefix)))
    return _merge(found)


def secret_kinds(value: object) -> list[str]:
    """The kinds of secret anywhere in a string or JSON value (keys included), in order."""
    kinds: dict[str, None] = {}
    for key, text in json_strings(value):
        for f in _findings_in(key, text):
            kinds.setdefault(f.kind)
    return list(kinds)


def refuse_secrets(fields: Mapping[str, object]) -> None:
    """Raise RefusedContent when any of the named values holds a secret.

    `fields` maps what a value is ("text", "value", "reason") to a string or
    JSON value (None is skipped). The message names the field and the kinds of
    secret, never the secret itself.
    """
    for what, value in fields.items():
        if value is None:
            continue
        kinds = secret_kinds(value)
        if kinds:
            raise RefusedContent(refusal_reason(kinds, what=f"the {what}"))


def redact_json(value: object) -> tuple[object, list[str]]:
    """A JSON value with every secret in its strings and keys redacted, and the kinds found."""
    kinds: dict[str, None] = {}

    def clean(key: str | None, item: object) -> object:
        if isinstance(item, str):
            found = _findings_in(key, item)
            kinds.update(dict.fromkeys(f.kind for f in found))
            return redact(item, found) if found else item
        if isinstance(item, Mapping):
            return {str(clean(None, str(k))): clean(str(k), v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [clean(None, v) for v in item]
        return item

    return clean(None, value), list(kinds)
