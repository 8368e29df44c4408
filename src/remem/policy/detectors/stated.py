"""Values stated as secrets: a label ("my password is", "api key:", "PIN", "recovery
codes", "passport number", password labels in eleven other languages) and the value
after it, which must look like what the label names."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

from remem.policy.detectors.base import (
    FOR,
    ID_SEP,
    IGNORECASE,
    SEP,
    WORD_START,
    Span,
    ValueFn,
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
_CARD_CODE = re.compile(r"[0-9]{3,4}(?![0-9A-Za-z]|[.,/-][0-9])")
_ENTRY_CODE = re.compile(r"[0-9]{2,8}(?:[- ][0-9]{2,8}){0,3}(?![0-9A-Za-z]|[.,/][0-9])")
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


def _card_code_value(text: str, pos: int) -> Span | None:
    """A card's security code: three or four digits."""
    m = _CARD_CODE.match(text, pos)
    return m.span() if m else None


def _entry_code_value(text: str, pos: int) -> Span | None:
    """A door, gate or alarm code: 4 to 16 digits, in groups split by a dash or a space."""
    if quoted := _quoted(text, pos):
        pos = quoted[0]
    m = _ENTRY_CODE.match(text, pos)
    if not m or not 4 <= sum(c.isdigit() for c in m.group()) <= 16:
        return None
    return m.span()


def _mixed_value(text: str, pos: int) -> Span | None:
    """A value stated after a word as plain as "key": at least 8 characters mixing
    lower-case and upper-case letters with two digits or more, as a made-up key does
    ("2FA-enabled" does not)."""
    span = _password_value(text, pos)
    if span is None:
        return None
    value = text[span[0] : span[1]]
    mixed = any(c.islower() for c in value) and any(c.isupper() for c in value)
    return span if len(value) >= 8 and mixed and sum(c.isdigit() for c in value) >= 2 else None


def _label_kind(kind: str) -> Callable[[re.Match[str]], str]:
    return lambda _m: kind


def _key_kind(m: re.Match[str]) -> str:
    label = m.group("label").lower()
    if "token" in label:
        return "access_token"
    return "private_key" if "private" in label else "api_key"


_KEY_LABEL = (
    WORD_START + r"(?P<label>(?:aws[_ ])?secret[_ -](?:access[_ -])?key|access[_ -]key"
    r"|api[_ -]?(?:key|secret)|client[_ -]secret|(?:signing|encryption|private)[_ -]key"
    r"|(?:(?:access|auth|bearer|refresh|session|api|oauth|id)[_ -]?)?tokens?|secret)"
)
_NATIONAL_LABEL = (
    WORD_START + r"(?:national\s+(?:id(?:entity|entification)?|insurance)(?:\s+card)?"
    r"|(?:id|identity)\s+card|citizen\s+id|social\s+insurance|tax\s+(?:id|identification)"
    r"|drivers?['\u2019]?s?\s+licen[cs]e|driving\s+licen[cs]e|aadhaa?r|personnummer"
    r"|(?-i:DL|TIN|ITIN|NINO|NIN|SIN|CPF|DNI|NIE|PESEL|BSN))"
)

_CARD_CODE_LABEL = (
    WORD_START + r"(?:cvv2?|cvc2?|cvn|card\s+(?:security|verification)\s+(?:code|value|number)"
    r"|security\s+code(?=\s+(?:on|of|for)\s+(?:the\s+|my\s+|your\s+|this\s+)?(?:[\w-]+\s+)?card))"
)
_ENTRY_CODE_LABEL = (
    WORD_START + r"(?:(?:front|back|main|side|garage|building|apartment|flat|house|entry|entrance"
    r"|gate|door|alarm|lock|lockbox|key\s?box|keypad|safe|security|padlock|bike\s+lock)\s+)+"
    r"(?:codes?|combinations?|combos?)"
)

STATED: tuple[tuple[Callable[[re.Match[str]], str], re.Pattern[str], ValueFn], ...] = (
    (
        _label_kind("password"),
        re.compile(WORD_START + r"(?:pass(?:[ _-]?word|wd|code)s?|pwd|pw)" + FOR + SEP, IGNORECASE),
        _password_value,
    ),
    (
        _label_kind("password"),
        re.compile(
            r"\b(?:set|change[sd]?|reset|update[sd]?)\s+(?:my\s+|the\s+|our\s+)?(?:[\w-]+\s+)?"
            r"pass(?:[ _-]?word|code)\s+to\s+",
            IGNORECASE,
        ),
        _password_value,
    ),
    # Passwort, mot de passe, contraseña, senha, wachtwoord, ... with their own "is"
    (
        _label_kind("password"),
        re.compile(WORD_START + _FOREIGN_PASSWORD + _FOREIGN_FOR + _FOREIGN_SEP, IGNORECASE),
        _foreign_password_value,
    ),
    # "pass: x", "pass=x" (not "the pass is valid"): a value that looks made up
    (
        _label_kind("password"),
        re.compile(WORD_START + r"pass\s*[:=]\s*", IGNORECASE),
        _strong_value,
    ),
    # "login: bob / hunter2", "credentials bob/hunter2"
    (
        _label_kind("password"),
        re.compile(
            WORD_START + r"(?:log-?in|credentials?|creds)\s*[:=]?\s*[^\s/:]+\s*/\s*", IGNORECASE
        ),
        _password_value,
    ),
    # "login with password hunter2x7", "use the password Sommer2026!": no separator, so
    # only a value that looks made up
    (
        _label_kind("password"),
        re.compile(
            r"\b(?:with|using|use|enter|type|try)\s+(?:the\s+|my\s+|your\s+|our\s+)?"
            r"(?:[\w-]+\s+)?(?:pass(?:word|wd|code)|pwd|pw)\s+(?!(?:is|was|for|to|of)\b)",
            IGNORECASE,
        ),
        _strong_value,
    ),
    # "my wifi password vmlCH8INPGOI5o", "my password hunter2hunter2 for the vpn": no
    # separator either, so only a value that looks made up
    (
        _label_kind("password"),
        re.compile(
            # not inside a stand-in for a value: "<your password here>"
            r"(?<![<{\[])\b(?:my|our|your|his|her|their|the)\s+(?:[\w-]+\s+)?"
            r"(?:pass(?:word|wd|code)|pwd|pw)"
            r"\s+(?!(?:is|was|are|were|for|to|of|on|at)\b)",
            IGNORECASE,
        ),
        _strong_value,
    ),
    (
        _label_kind("password"),
        re.compile(WORD_START + r"passphrase" + FOR + SEP, IGNORECASE),
        _phrase_value,
    ),
    (
        _label_kind("password"),
        re.compile(WORD_START + r"pin(?:\s*(?:code|number|no\.?))?" + FOR + SEP, IGNORECASE),
        _digits_value,
    ),
    # "passcode 551234", "PIN 4821": a bare number right after the label
    (
        _label_kind("password"),
        re.compile(WORD_START + r"(?:passcode|pin(?:\s*code)?)\s+(?=[0-9]{4,12}\b)", IGNORECASE),
        _digits_value,
    ),
    (_key_kind, re.compile(_KEY_LABEL + FOR + SEP, IGNORECASE), _key_value),
    (
        _label_kind("recovery_code"),
        re.compile(
            WORD_START + r"(?:recovery|backup|2fa|two[- ]factor|mfa|otp|one[- ]time|scratch"
            r"|emergency)(?:\s+(?:backup|recovery|login|security))?\s+(?:codes?|keys?)" + FOR + SEP,
            IGNORECASE,
        ),
        _codes_value,
    ),
    (
        _label_kind("recovery_code"),
        re.compile(
            WORD_START + r"(?:seed|recovery|mnemonic|backup|wallet)\s+(?:phrase|words)" + SEP,
            IGNORECASE,
        ),
        _mnemonic_value,
    ),
    (
        _label_kind("government_id"),
        re.compile(
            WORD_START + r"(?:ssn|social(?:\s+security)?(?:\s+(?:number|no\.?|num))?)(?:\s*#)?"
            rf"(?:{SEP}|\s*)",
            IGNORECASE,
        ),
        _ssn_value,
    ),
    # "my cvv is 123", "CVC: 4821", "the security code on the card is 907"
    (
        _label_kind("payment_card"),
        re.compile(_CARD_CODE_LABEL + FOR + rf"(?:{SEP}|\s+(?=[0-9]))", IGNORECASE),
        _card_code_value,
    ),
    # "the door code is 4417-9921", "alarm code: 55 21 90", "lockbox code 4417"
    (
        _label_kind("password"),
        re.compile(_ENTRY_CODE_LABEL + FOR + rf"(?:{SEP}|\s+(?=[0-9]))", IGNORECASE),
        _entry_code_value,
    ),
    # "wifi key: ...", "network key is ...", and "its key is ..." (after a wifi name):
    # only a value that looks made up
    (
        _label_kind("password"),
        re.compile(
            WORD_START + r"(?:wi-?fi|wlan|wpa[23]?|wep|network|router|hotspot)"
            r"(?:\s+(?:security|access))?\s+(?:key|passkey|code)" + FOR + SEP,
            IGNORECASE,
        ),
        _strong_value,
    ),
    (
        _label_kind("password"),
        re.compile(r"\b(?:its|the|my|our|your|their|his|her)\s+key" + SEP, IGNORECASE),
        _mixed_value,
    ),
    (
        _label_kind("government_id"),
        re.compile(WORD_START + r"passport" + ID_SEP, IGNORECASE),
        _id_value,
    ),
    (_label_kind("government_id"), re.compile(_NATIONAL_LABEL + ID_SEP, IGNORECASE), _id_value),
)
