"""Data classes that must never be stored: secrets and government ids.

DESIGN §4: passwords, access tokens, API keys, recovery codes, payment card
numbers and government ids are refused on every write path, with a clear
reason, and never logged. This module only decides. `find_secrets` says where
the secrets are, `redact` makes a text safe to process and log, and
`refusal_reason` says why a write was refused without repeating the secret.

Two sorts of evidence are used:

- shapes that are secrets wherever they appear: vendor key and token formats
  (OpenAI, AWS, GitHub, GitLab, Slack, Stripe, Google), JWTs, `Bearer` tokens,
  credentials inside URLs, PEM private key blocks, Luhn-valid card numbers and
  US social security numbers;
- values *stated as* secrets: "my password is ...", "api key: ...", "PIN is
  ...", "recovery codes: ...", "passport number is ...". Without the label an
  ordinary word or number is left alone, which keeps dates, prices, phone and
  order numbers out.

Known limits. A secret with neither a known shape nor a label is missed ("it's
hunter2"), and so is one split across words or spelled out. A stated password
is one token unless quoted ("my password is correct horse" finds "correct").
Card numbers must carry a network's prefix and length (see `_card_network`)
and be grouped as cards print them, so a card run into other digits may be
missed, while about one in ten other numbers of such a prefix and length pass
Luhn and are flagged (a 16-digit membership number starting with 5, say). Any
ddd-dd-dddd in the issued SSN ranges is taken for an SSN, part numbers included.
Placeholders ("[REDACTED:password]", "${DB_PASSWORD}", "********") are not
secrets, so redacted text scans clean. A stated value that merely looks like a
secret ("my password is banana") is flagged: refusing a harmless text costs
less than storing a secret.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

KINDS: tuple[str, ...] = (
    "password",
    "api_key",
    "access_token",
    "private_key",
    "recovery_code",
    "payment_card",
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
    "government_id": "a government id number",
}

# When two detectors claim the same span, the more specific kind names it.
_PRIORITY: dict[str, int] = {
    "private_key": 7,
    "payment_card": 6,
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


Span = tuple[int, int]
ValueFn = Callable[[str, int], Span | None]

_I = re.IGNORECASE
_WORD_START = r"(?<![A-Za-z0-9])"  # labels may follow "_": OPENAI_API_KEY, DB_PASSWORD
_TOKEN_START = r"(?<![A-Za-z0-9_])"
_TOKEN_END = r"(?![A-Za-z0-9_])"
# "password: x", "password = x", "password is x", "passwords were: x", '"password": "x"'
_SEP = r"""["']?(?:\s*[:=]\s*|\s+(?:is|was|are|were)\b\s*:?\s*)"""
# "password for gmail is", "password to the wifi is", "api key for my work account:"
_FOR = r"(?:\s+(?:for|to|on|at|of)\s+[\w.@'-]+(?:\s+[\w.@'-]+){0,2}?)?"
# "passport number x", "passport no. is x", "passport # x", "passport: x"
_ID_SEP = rf"(?:(?:\s+(?:number|no\.?|num|id)|\s*#)(?:{_SEP}|\s*)|{_SEP})"

# -- shapes: secrets wherever they appear -----------------------------------------------------

_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
    ),
    # OpenAI sk-..., sk-proj-..., Anthropic sk-ant-...
    ("api_key", re.compile(_TOKEN_START + r"sk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}")),
    ("api_key", re.compile(_TOKEN_START + r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}" + _TOKEN_END)),
    ("api_key", re.compile(_TOKEN_START + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("api_key", re.compile(_TOKEN_START + r"AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])")),
    ("access_token", re.compile(_TOKEN_START + r"gh[pousr]_[A-Za-z0-9]{36,255}" + _TOKEN_END)),
    ("access_token", re.compile(_TOKEN_START + r"github_pat_[A-Za-z0-9_]{22,255}")),
    ("access_token", re.compile(_TOKEN_START + r"glpat-[A-Za-z0-9_-]{20,}")),
    ("access_token", re.compile(_TOKEN_START + r"xox[baprse]-[A-Za-z0-9-]{10,}")),
    ("access_token", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+")),
    (
        "access_token",
        re.compile(_TOKEN_START + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    ),
    (
        "access_token",
        re.compile(r"\bbearer\s+(?P<v>(?=[A-Za-z0-9._~+/-]*[0-9])[A-Za-z0-9._~+/-]{16,}=*)", _I),
    ),
    ("password", re.compile(r"\bauthorization\s*:\s*basic\s+(?P<v>[A-Za-z0-9+/]{8,}={0,2})", _I)),
    # scheme://user:password@host
    ("password", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:(?P<v>[^\s:/@]+)@", _I)),
    # US SSN; area 000, 666 and 9xx, group 00 and serial 0000 are never issued.
    (
        "government_id",
        re.compile(
            r"(?<![A-Za-z0-9_-])(?!000|666|9)[0-9]{3}-(?!00)[0-9]{2}-(?!0000)[0-9]{4}"
            r"(?![A-Za-z0-9_]|-[0-9])"
        ),
    ),
)

# -- values stated as secrets -------------------------------------------------------------------

_QUOTE_PAIRS = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019"}
_TRAILING = ".,;:)]}\"'\u201d\u2019"
# Words that follow "password is" in ordinary talk about a password.
_FUNCTION_WORDS = frozenset(
    """
    a an the my your his her their our its this that these those it there here what which
    not never always still also now just only too very so really pretty quite same being
    going getting due about like in on at for from with by into over under something
    nothing somewhere
    """.split()
)
_NOT_A_PASSWORD = _FUNCTION_WORDS | frozenset(
    """
    different wrong right correct incorrect invalid valid expired expiring changed reset
    locked saved stored kept written managed required mandatory optional needed missing
    empty blank weak strong long short secure insecure safe unsafe easy hard simple complex
    complicated random unique temporary new old set sent case-sensitive sensitive
    compromised leaked known unknown forgotten lost updated
    """.split()
)
# Not a secret but a stand-in for one: "[REDACTED:password]" (our own output, so that
# redacted text scans clean), "<password>", "${DB_PASSWORD}", "$DB_PASSWORD", "********".
_PLACEHOLDER = re.compile(
    r"\[REDACTED(?::\w+)?\]|<[^<>]*>|\$?\{+[^{}]*\}+|\$[A-Z_][A-Z0-9_]*|%\w+%|[*\u2022\u25cf.xX]+"
)
_NON_SPACE = re.compile(r"\S+")
_KEY_CHARS = re.compile(r"[A-Za-z0-9_\-./+=~]+")
_DIGITS_VALUE = re.compile(r"[0-9]{4,12}(?![0-9A-Za-z])")
_SSN_VALUE = re.compile(
    r"(?!000|666|9)[0-9]{3}(?P<s>[- ]?)(?!00)[0-9]{2}(?P=s)(?!0000)[0-9]{4}(?![0-9])"
)
_ID_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*(?: [A-Z0-9]{1,6}(?![A-Za-z0-9]))*")
_CODE = re.compile(r"[A-Za-z0-9]{3,}(?:-[A-Za-z0-9]{2,})*(?![A-Za-z0-9-])")
_CODE_GAP = re.compile(r"[\s,;]+(?:and\s+)?")
_MNEMONIC = re.compile(r"[a-z]+(?:[ ,]+[a-z]+){11,23}\b")
_CLAUSE = re.compile(r"[^\n.;!?,]+")


def _quoted(text: str, pos: int) -> Span | None:
    """The inside of a quoted value starting at `pos`, if one does."""
    if pos < len(text) and text[pos] in _QUOTE_PAIRS:
        close = text.find(_QUOTE_PAIRS[text[pos]], pos + 1)
        if close > pos + 1 and "\n" not in text[pos + 1 : close]:
            return pos + 1, close
    return None


def _is_placeholder(text: str, start: int, end: int) -> bool:
    """Whether a stand-in for a secret starts at `start` and covers the value."""
    m = _PLACEHOLDER.match(text, start)
    return m is not None and m.end() >= end


def _strip_trailing(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1] in _TRAILING:
        end -= 1
    return end


def _password_value(text: str, pos: int) -> Span | None:
    if quoted := _quoted(text, pos):
        placeholder = _is_placeholder(text, *quoted)
        return quoted if quoted[1] - quoted[0] >= 3 and not placeholder else None
    m = _NON_SPACE.match(text, pos)
    if not m:
        return None
    start = m.start()
    end = _strip_trailing(text, start, m.end())
    value = text[start:end]
    if len(value) < 4 or value.lower() in _NOT_A_PASSWORD or _is_placeholder(text, start, end):
        return None
    return start, end


def _phrase_value(text: str, pos: int) -> Span | None:
    if quoted := _quoted(text, pos):
        pos, end = quoted
    elif m := _CLAUSE.match(text, pos):
        end = _strip_trailing(text, pos, m.end())
        while end > pos and text[end - 1].isspace():
            end -= 1
    else:
        return None
    first = text[pos:end].split(" ", 1)[0].lower()
    if end - pos < 8 or first in _FUNCTION_WORDS or _is_placeholder(text, pos, end):
        return None
    return pos, end


def _digits_value(text: str, pos: int) -> Span | None:
    if quoted := _quoted(text, pos):
        pos = quoted[0]
    m = _DIGITS_VALUE.match(text, pos)
    return m.span() if m else None


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _key_value(text: str, pos: int) -> Span | None:
    """A long, high-entropy string of letters and digits: what keys and tokens look like."""
    if quoted := _quoted(text, pos):
        start, end = quoted
        if not _KEY_CHARS.fullmatch(text, start, end):
            return None
    else:
        m = _KEY_CHARS.match(text, pos)
        if not m:
            return None
        start, end = m.start(), m.end()
        while end > start and text[end - 1] == ".":
            end -= 1
    value = text[start:end]
    if len(value) < 16 or _entropy(value) < 3.0:
        return None
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return None
    return start, end


def _codes_value(text: str, pos: int) -> Span | None:
    """One or more recovery codes: tokens that carry digits, or long upper-case groups."""
    start = end = -1
    while m := _CODE.match(text, pos):
        code = m.group()
        if not (any(c.isdigit() for c in code) or (code.isupper() and len(code) >= 8)):
            break
        start = m.start() if start < 0 else start
        end = m.end()
        gap = _CODE_GAP.match(text, end)
        if not gap:
            break
        pos = gap.end()
    return (start, end) if start >= 0 else None


def _mnemonic_value(text: str, pos: int) -> Span | None:
    """A wallet seed phrase: 12 to 24 lower-case words."""
    m = _MNEMONIC.match(text, pos)
    return m.span() if m else None


def _id_value(text: str, pos: int) -> Span | None:
    """An id number: letters and digits, possibly in space-separated upper-case groups."""
    if quoted := _quoted(text, pos):
        pos = quoted[0]
    m = _ID_VALUE.match(text, pos)
    if not m:
        return None
    first = m.group().split(" ", 1)[0]
    if not (any(c.isdigit() for c in first) or (first.isalpha() and first.isupper())):
        return None
    if len(first) > 3 and not any(c.isdigit() for c in first):
        return None
    alnum = [c for c in m.group() if c.isalnum()]
    if len(alnum) < 5 or sum(c.isdigit() for c in alnum) < 2:
        return None
    return m.span()


def _ssn_value(text: str, pos: int) -> Span | None:
    m = _SSN_VALUE.match(text, pos)
    return m.span() if m else None


def _label_kind(kind: str) -> Callable[[re.Match[str]], str]:
    return lambda _m: kind


def _key_kind(m: re.Match[str]) -> str:
    label = m.group("label").lower()
    if "token" in label:
        return "access_token"
    return "private_key" if "private" in label else "api_key"


_KEY_LABEL = (
    _WORD_START + r"(?P<label>(?:aws[_ ])?secret[_ -](?:access[_ -])?key|access[_ -]key"
    r"|api[_ -]?(?:key|secret)|client[_ -]secret|(?:signing|encryption|private)[_ -]key"
    r"|(?:(?:access|auth|bearer|refresh|session|api|oauth|id)[_ -]?)?tokens?|secret)"
)
_NATIONAL_LABEL = (
    _WORD_START + r"(?:national\s+(?:id(?:entity|entification)?|insurance)(?:\s+card)?"
    r"|(?:id|identity)\s+card|citizen\s+id|social\s+insurance|tax\s+(?:id|identification)"
    r"|drivers?['\u2019]?s?\s+licen[cs]e|driving\s+licen[cs]e|aadhaa?r|personnummer"
    r"|(?-i:DL|TIN|ITIN|NINO|NIN|SIN|CPF|DNI|NIE|PESEL|BSN))"
)

_STATED: tuple[tuple[Callable[[re.Match[str]], str], re.Pattern[str], ValueFn], ...] = (
    (
        _label_kind("password"),
        re.compile(_WORD_START + r"(?:pass(?:word|wd|code)s?|pwd|pw)" + _FOR + _SEP, _I),
        _password_value,
    ),
    (
        _label_kind("password"),
        re.compile(
            r"\b(?:set|change[sd]?|reset|update[sd]?)\s+(?:my\s+|the\s+|our\s+)?(?:[\w-]+\s+)?"
            r"pass(?:word|code)\s+to\s+",
            _I,
        ),
        _password_value,
    ),
    (
        _label_kind("password"),
        re.compile(_WORD_START + r"passphrase" + _FOR + _SEP, _I),
        _phrase_value,
    ),
    (
        _label_kind("password"),
        re.compile(_WORD_START + r"pin(?:\s*(?:code|number|no\.?))?" + _FOR + _SEP, _I),
        _digits_value,
    ),
    # "passcode 551234", "PIN 4821": a bare number right after the label
    (
        _label_kind("password"),
        re.compile(_WORD_START + r"(?:passcode|pin(?:\s*code)?)\s+(?=[0-9]{4,12}\b)", _I),
        _digits_value,
    ),
    (_key_kind, re.compile(_KEY_LABEL + _FOR + _SEP, _I), _key_value),
    (
        _label_kind("recovery_code"),
        re.compile(
            _WORD_START + r"(?:recovery|backup|2fa|two[- ]factor|mfa|otp|one[- ]time|scratch"
            r"|emergency)(?:\s+(?:backup|recovery|login|security))?\s+(?:codes?|keys?)"
            + _FOR
            + _SEP,
            _I,
        ),
        _codes_value,
    ),
    (
        _label_kind("recovery_code"),
        re.compile(
            _WORD_START + r"(?:seed|recovery|mnemonic|backup|wallet)\s+(?:phrase|words)" + _SEP,
            _I,
        ),
        _mnemonic_value,
    ),
    (
        _label_kind("government_id"),
        re.compile(
            _WORD_START + r"(?:ssn|social\s+security(?:\s+(?:number|no\.?))?)(?:\s*#)?"
            rf"(?:{_SEP}|\s*)",
            _I,
        ),
        _ssn_value,
    ),
    (_label_kind("government_id"), re.compile(_WORD_START + r"passport" + _ID_SEP, _I), _id_value),
    (_label_kind("government_id"), re.compile(_NATIONAL_LABEL + _ID_SEP, _I), _id_value),
)

# -- payment cards ----------------------------------------------------------------------------

# A run of digit groups separated by single spaces or dashes, not part of a word, a
# phone number ("+44 ...") or a decimal ("3.14"). Atomic, so a run is never cut short.
_DIGIT_RUN = re.compile(
    r"(?<![A-Za-z0-9_+])(?<![0-9][.,])(?>[0-9]+(?:[ -][0-9]+)*+)(?![A-Za-z0-9_])"
)
_DIGITS = re.compile(r"[0-9]+")


def luhn_valid(digits: str) -> bool:
    """Whether a string of ASCII digits passes the Luhn check that card numbers carry."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = ord(ch) - 48
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _card_network(digits: str) -> bool:
    """Whether the prefix and length belong to a card network that issues them.

    Visa 4 (13, 16, 19 digits), Mastercard 2221-2720 and 51-55, Maestro and
    Discover 5x/6x (16-19), Amex 34/37 (15), Diners 30/36/38/39 (14, 16), JCB 35
    (16-19). Narrower than "13-19 digits" so that EAN-13 product codes, ISBNs
    and millisecond timestamps mostly stay out.
    """
    n, first, two = len(digits), digits[0], int(digits[:2])
    if first == "2":
        return n == 16 and 2221 <= int(digits[:4]) <= 2720
    if first == "3":
        if two in (34, 37):
            return n == 15
        if two in (30, 36, 38, 39):
            return n in (14, 16)
        return two == 35 and 16 <= n <= 19
    if first == "4":
        return n in (13, 16, 19)
    return first in "56" and 16 <= n <= 19


def _card_window(run: str, groups: list[Span]) -> bool:
    """Whether these consecutive digit groups are laid out like a card number."""
    digits = "".join(run[a:b] for a, b in groups)
    if not 13 <= len(digits) <= 19 or not _card_network(digits):
        return False
    if len(groups) > 1:
        seps = {run[groups[k][1] : groups[k + 1][0]] for k in range(len(groups) - 1)}
        if len(seps) != 1 or groups[0][1] - groups[0][0] != 4:
            return False  # cards print as 4-4-4-4, 4-6-5 or 4-6-4, one separator throughout
        if any(not 3 <= b - a <= 6 for a, b in groups[1:]):
            return False
    return luhn_valid(digits)


def _cards(text: str) -> Iterable[Finding]:
    for run_match in _DIGIT_RUN.finditer(text):
        run, offset = run_match.group(), run_match.start()
        groups = [m.span() for m in _DIGITS.finditer(run)]
        i = 0
        while i < len(groups):
            # The longest card starting at group i; 19 digits make at most 6 groups.
            for j in range(min(len(groups), i + 6) - 1, i - 1, -1):
                if _card_window(run, groups[i : j + 1]):
                    yield Finding("payment_card", offset + groups[i][0], offset + groups[j][1])
                    i = j
                    break
            i += 1


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
    found: list[Finding] = []
    for kind, pattern in _SHAPES:
        for m in pattern.finditer(text):
            start, end = m.span("v") if "v" in pattern.groupindex else m.span()
            if end > start:
                found.append(Finding(kind, start, end))
    for kind_of, pattern, value_of in _STATED:
        for m in pattern.finditer(text):
            if span := value_of(text, m.end()):
                found.append(Finding(kind_of(m), *span))
    found.extend(_cards(text))
    return _merge(found)


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


def refusal_reason(findings: Iterable[Finding]) -> str:
    """A one-line message naming the kinds of secret found, never the secrets.

    Kinds are named once each, in the order they first appear. Raises
    ValueError for no findings: there is nothing to refuse.
    """
    kinds = list(dict.fromkeys(f.kind for f in findings))
    if not kinds:
        raise ValueError("refusal_reason needs at least one finding")
    names = [_NAMES[k] for k in kinds]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"refused: the text contains {listed}; remem never stores secrets"


REDACTED_MARK = "[REDACTED:"


def holds_secret(text: str) -> bool:
    """Whether a candidate carries a secret, or the placeholder of a redacted one."""
    return REDACTED_MARK in text or bool(find_secrets(text))
