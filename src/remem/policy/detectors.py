"""Where each class of secret is in a text: the detectors behind `remem.policy.dataclasses`.

Two sorts of evidence are used:

- shapes that are secrets wherever they appear: vendor key and token formats
  (OpenAI, AWS, GitHub, GitLab, Slack, Stripe, Google, npm, Hugging Face,
  remem's own `rk_` keys), JWTs, `Bearer` tokens, credentials inside URLs, PEM
  private key blocks, `0x` + 64 hex digits (an Ethereum-style private key, unless
  introduced as a transaction, block or hash), an AWS secret access key next to
  its access key id, Luhn-valid card numbers, mod-97-valid IBANs and US social
  security numbers;
- values *stated as* secrets: "my password is ...", "api key: ...", "PIN is
  ...", "recovery codes: ...", "passport number is ...", "login: bob / ...",
  "login with password ...", and password labels in German, French, Spanish,
  Portuguese, Dutch, Swedish, Norwegian, Danish, Finnish, Polish and Italian
  ("Passwort: ...", "mot de passe : ...", "contraseña: ...", "senha: ...",
  "wachtwoord: ..."). Without the label an ordinary word or number is left
  alone, which keeps dates, prices, phone and order numbers out.

Known limits. A secret with neither a known shape nor a label is missed ("it's
hunter2"), and so is one spelled out in words. A stated password is one token
unless quoted ("my password is correct horse" finds "correct"). Labels that are
also ordinary words ("pass: ...", "login with password ...") need a value that
looks made up (letters with digits, or a symbol). 64 hex digits without `0x`
and without a "private key" or "secret key" label are left alone: that is what
every SHA-256 digest looks like. Card numbers must carry a network's prefix and
length (see `_card_network`) and be grouped as cards print them (one separator
throughout: a space, two or three spaces, a dash or a dot; or one digit at a
time), so a card run into other digits may be missed, while about one in ten
other numbers of such a prefix and length pass Luhn and are flagged (a 16-digit
membership number starting with 5, say). Any ddd-dd-dddd in the issued SSN
ranges is taken for an SSN, part numbers included. Placeholders
("[REDACTED:password]", "${DB_PASSWORD}", "********") are not secrets, so
redacted text scans clean. A stated value that merely looks like a secret ("my
password is banana") is flagged: refusing a harmless text costs less than
storing a secret.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator

Hit = tuple[str, int, int]  # (kind, start, end): text[start:end] is the secret

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
    # remem's own API keys: "rk_" + secrets.token_urlsafe(32), 43 characters of mixed case
    (
        "api_key",
        re.compile(
            _TOKEN_START + r"rk_(?=[A-Za-z0-9_-]*[a-z])(?=[A-Za-z0-9_-]*[A-Z])[A-Za-z0-9_-]{43}"
            r"(?![A-Za-z0-9_-])"
        ),
    ),
    # npm "npm_" + 36, Hugging Face "hf_" + 34 or more letters and digits, of mixed case
    (
        "access_token",
        re.compile(_TOKEN_START + r"npm_(?=[a-z0-9]*[A-Z])[A-Za-z0-9]{36}" + _TOKEN_END),
    ),
    (
        "access_token",
        re.compile(_TOKEN_START + r"hf_(?=[a-z0-9]*[A-Z])[A-Za-z0-9]{34,}" + _TOKEN_END),
    ),
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
# Password labels of other languages, their "is", their "for", and ordinary words after them
_FOREIGN_PASSWORD = (
    r"(?:passwort|kennwort|mot\s+de\s+passe|contrase(?:ñ|n)a|senha|wachtwoord|lösenord"
    r"|losenord|passord|adgangskode|salasana|has(?:ł|l)o|parola\s+d['\u2019]ordine)"
)
_FOREIGN_SEP = (
    r"""["']?(?:\s*[:=]\s*|\s+(?:ist|lautet|war|est|était|es|era|é|is|was|är|er|on|è)\s*:?\s+)"""
)
_FOREIGN_FOR = (
    r"(?:\s+(?:für|fuer|pour|para|voor|per|do|da|de|del|du|für|för|van|vom)\s+"
    r"[\w.@'-]+(?:\s+[\w.@'-]+){0,2}?)?"
)
_NOT_A_PASSWORD_FOREIGN = frozenset(
    """
    falsch richtig neu alt geändert vergessen abgelaufen gesperrt sicher unsicher leer
    zu sehr das der die ein eine mein dein sein noch nicht
    incorrect correct oublié faux trop changé expiré nouveau ancien le la les un une mon
    ton son très pas vide
    incorrecta correcta olvidada nueva vieja muy el una mi tu su no vacía
    errada incorreta correta nova velha muito um uma minha sua não
    fout verkeerd onjuist juist het een mijn nieuw vergeten verlopen niet
    fel rätt glömd ny gammal mitt
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


def _foreign_password_value(text: str, pos: int) -> Span | None:
    span = _password_value(text, pos)
    if span is None or text[span[0] : span[1]].lower() in _NOT_A_PASSWORD_FOREIGN:
        return None
    return span


def _strong_value(text: str, pos: int) -> Span | None:
    """A stated value that looks made up: letters with digits, or a symbol in it."""
    span = _password_value(text, pos)
    if span is None:
        return None
    value = text[span[0] : span[1]]
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    return span if (has_digit and has_alpha) or (has_symbol and (has_digit or has_alpha)) else None


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
    # Passwort, mot de passe, contraseña, senha, wachtwoord, ... with their own "is"
    (
        _label_kind("password"),
        re.compile(_WORD_START + _FOREIGN_PASSWORD + _FOREIGN_FOR + _FOREIGN_SEP, _I),
        _foreign_password_value,
    ),
    # "pass: x", "pass=x" (not "the pass is valid"): a value that looks made up
    (_label_kind("password"), re.compile(_WORD_START + r"pass\s*[:=]\s*", _I), _strong_value),
    # "login: bob / hunter2", "credentials bob/hunter2"
    (
        _label_kind("password"),
        re.compile(_WORD_START + r"(?:log-?in|credentials?|creds)\s*[:=]?\s*[^\s/:]+\s*/\s*", _I),
        _password_value,
    ),
    # "login with password hunter2x7", "use the password Sommer2026!": no separator, so
    # only a value that looks made up
    (
        _label_kind("password"),
        re.compile(
            r"\b(?:with|using|use|enter|type|try)\s+(?:the\s+|my\s+|your\s+|our\s+)?"
            r"(?:[\w-]+\s+)?(?:pass(?:word|wd|code)|pwd|pw)\s+(?!(?:is|was|for|to|of)\b)",
            _I,
        ),
        _strong_value,
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

# A run of digit groups separated by a space, two or three spaces, a dash or a dot, not
# part of a word, a phone number ("+44 ...") or a decimal ("3.14"). Atomic, so a run is
# never cut short.
_DIGIT_RUN = re.compile(
    r"(?<![A-Za-z0-9_+])(?<![0-9][.,])(?>[0-9]+(?:(?: {1,3}|[.-])[0-9]+)*+)(?![A-Za-z0-9_])"
)
_DIGITS = re.compile(r"[0-9]+")


def luhn_valid(digits: str) -> bool:
    """Whether a string of ASCII digits passes the Luhn check that card numbers carry."""
    backwards = digits[::-1]
    total = sum(map(int, backwards[0::2])) + sum(_DOUBLED[int(c)] for c in backwards[1::2])
    return total % 10 == 0


_DOUBLED = (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)  # a digit doubled, its digits summed


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


def _card_layout(sizes: list[int]) -> bool:
    """Whether digit groups of these sizes are laid out like a card number: as cards
    print them (4-4-4-4, 4-6-5 or 4-6-4), or one digit at a time."""
    if len(sizes) == 1 or all(n == 1 for n in sizes):
        return True
    return sizes[0] == 4 and all(3 <= n <= 6 for n in sizes[1:])


def _cards(text: str) -> Iterator[Hit]:
    for run_match in _DIGIT_RUN.finditer(text):
        run, offset = run_match.group(), run_match.start()
        groups = [m.span() for m in _DIGITS.finditer(run)]
        digits = "".join(run[a:b] for a, b in groups)
        total = [0]  # total[k]: how many digits the first k groups hold
        for a, b in groups:
            total.append(total[-1] + b - a)
        # alike[k]: how many separators up to the k-th (after group k) are the same as it
        alike: list[int] = []
        for k in range(len(groups) - 1):
            sep = run[groups[k][1] : groups[k + 1][0]]
            same = k > 0 and sep == run[groups[k - 1][1] : groups[k][0]]
            alike.append(alike[-1] + 1 if same else 1)
        i = 0
        while i < len(groups):
            if digits[total[i]] not in "23456":  # no card network starts otherwise
                i += 1
                continue
            # The longest card starting at group i: the last groups j that end 13 to 19
            # digits after group i starts, longest first.
            longest = bisect.bisect_right(total, total[i] + 19) - 2
            shortest = bisect.bisect_left(total, total[i] + 13) - 1
            for j in range(longest, max(shortest, i) - 1, -1):
                number = digits[total[i] : total[j + 1]]
                if not _card_network(number):
                    continue
                if j > i and alike[j - 1] < j - i:
                    continue  # one separator throughout, or it is not one number
                one_at_a_time = j - i + 1 == len(number)
                sizes = [] if one_at_a_time else [total[k + 1] - total[k] for k in range(i, j + 1)]
                if (one_at_a_time or _card_layout(sizes)) and luhn_valid(number):
                    yield ("payment_card", offset + groups[i][0], offset + groups[j][1])
                    i = j
                    break
            i += 1


# -- bank accounts ----------------------------------------------------------------------------

# Country, two check digits, then groups of four (the last shorter), spaced or not.
_IBAN = re.compile(
    r"(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])"
)


def iban_valid(iban: str) -> bool:
    """Whether a compact IBAN (no spaces) passes its mod-97 check (ISO 13616)."""
    if not 15 <= len(iban) <= 34 or not iban.isascii() or not iban.isalnum():
        return False
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _ibans(text: str) -> Iterator[Hit]:
    for m in _IBAN.finditer(text):
        # the longest valid prefix: the match may have taken a group of the next word
        value = m.group()
        ends = [len(value)] + [i for i in range(len(value) - 1, 14, -1) if value[i] == " "]
        for end in ends:
            if iban_valid(value[:end].replace(" ", "")):
                yield ("bank_account", m.start(), m.start() + end)
                break


# -- keys that are shapes only next to something ------------------------------------------------

_HEX_KEY = re.compile(r"(?<![0-9A-Za-z])0x[0-9a-fA-F]{64}(?![0-9A-Za-z])")
# what a public 32-byte value is called when it is not a key
_PUBLIC_HEX = re.compile(
    r"\b(?:tx|txn|transaction|hash|block|commit|digest|sha-?256|checksum|address|id)"
    r"(?:\s+(?:hash|id))?\s*[:=#]?\s*$",
    _I,
)
_AWS_ID = re.compile(_TOKEN_START + r"(?:AKIA|ASIA)[0-9A-Z]{16}" + _TOKEN_END)
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_NEAR = 80  # characters between an access key id and its secret


def _hex_keys(text: str) -> Iterator[Hit]:
    """`0x` + 64 hex digits, unless introduced as a transaction, block, hash or id."""
    for m in _HEX_KEY.finditer(text):
        if not _PUBLIC_HEX.search(text, max(0, m.start() - 30), m.start()):
            yield ("private_key", m.start(), m.end())


def _aws_secrets(text: str) -> Iterator[Hit]:
    """A 40-character secret access key within a short distance of an access key id."""
    for m in _AWS_ID.finditer(text):
        lo, hi = max(0, m.start() - _AWS_NEAR), min(len(text), m.end() + _AWS_NEAR)
        for s in _AWS_SECRET.finditer(text, lo, hi):
            value = s.group()
            mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
            if mixed and any(c.isdigit() or c in "/+" for c in value):
                yield ("api_key", s.start(), s.end())


# -- all of them --------------------------------------------------------------------------------


def detect(text: str) -> Iterator[Hit]:
    """Every detector's hits in `text`, unordered and possibly overlapping."""
    for kind, pattern in _SHAPES:
        for m in pattern.finditer(text):
            start, end = m.span("v") if "v" in pattern.groupindex else m.span()
            if end > start:
                yield (kind, start, end)
    for kind_of, pattern, value_of in _STATED:
        for m in pattern.finditer(text):
            if span := value_of(text, m.end()):
                yield (kind_of(m), *span)
    yield from _cards(text)
    yield from _ibans(text)
    yield from _hex_keys(text)
    yield from _aws_secrets(text)
