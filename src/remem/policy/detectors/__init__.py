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
length (see `finance._card_network`) and be grouped as cards print them (one separator
throughout: a space, two or three spaces, a dash or a dot; or one digit at a
time), so a card run into other digits may be missed, while about one in ten
other numbers of such a prefix and length pass Luhn and are flagged (a 16-digit
membership number starting with 5, say). Any ddd-dd-dddd in the issued SSN
ranges is taken for an SSN, part numbers included. Placeholders
("[REDACTED:password]", "${DB_PASSWORD}", "********") are not secrets, so
redacted text scans clean. A stated value that merely looks like a secret ("my
password is banana") is flagged: refusing a harmless text costs less than
storing a secret.

One module per class of secret: `shapes` (formats, and keys beside their
companion), `stated` (labelled values), `finance` (cards and IBANs); `base`
holds what they share.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator

from remem.policy.detectors.base import Hit, ValueFn
from remem.policy.detectors.finance import IBAN, cards, iban_valid, ibans, luhn_valid
from remem.policy.detectors.needles import Screen, digit_count, screen
from remem.policy.detectors.shapes import AWS_ID, HEX_KEY, SHAPES, aws_secrets, hex_keys
from remem.policy.detectors.stated import STATED

__all__ = ["Hit", "detect", "iban_valid", "luhn_valid"]

_CARD_DIGITS = 13  # the shortest card a network issues (`finance._card_network`)


# -- all of them --------------------------------------------------------------------------------


def detect(text: str, *, screened: bool = True) -> Iterator[Hit]:
    """Every detector's hits in `text`, unordered and possibly overlapping.

    A detector runs only where its screen (`needles.screen`: the literal text
    and digits its every match holds) says it may match, which skips none of
    its hits; `screened=False` runs every detector, the reference that
    `tests/test_detector_screens.py` holds the screens to.
    """
    shapes, stated, scanners = _screens()
    lower = text.lower() if text.isascii() else None
    digits = digit_count(text) if screened else 0
    for kind, pattern, shape_screen in shapes:
        if screened and not shape_screen.passes(text, lower, digits):
            continue
        for m in pattern.finditer(text):
            start, end = m.span("v") if "v" in pattern.groupindex else m.span()
            if end > start:
                yield (kind, start, end)
    for kind_of, pattern, value_of, label_screen in stated:
        if screened and not label_screen.passes(text, lower, digits):
            continue
        for m in pattern.finditer(text):
            if span := value_of(text, m.end()):
                yield (kind_of(m), *span)
    for scan, scan_screen in scanners:
        if not screened or scan_screen.passes(text, lower, digits):
            yield from scan(text)


_Shape = tuple[str, re.Pattern[str], Screen]
_Stated = tuple[Callable[[re.Match[str]], str], re.Pattern[str], ValueFn, Screen]
_Scanner = tuple[Callable[[str], Iterator[Hit]], Screen]


@functools.cache
def _screens() -> tuple[tuple[_Shape, ...], tuple[_Stated, ...], tuple[_Scanner, ...]]:
    """Every detector with its screen, read from the patterns once, on first use."""
    shapes = tuple((kind, pattern, screen(pattern)) for kind, pattern in SHAPES)
    stated = tuple((kind_of, p, value_of, screen(p)) for kind_of, p, value_of in STATED)
    scanners: tuple[_Scanner, ...] = (
        (cards, Screen((), _CARD_DIGITS)),
        (ibans, screen(IBAN)),
        (hex_keys, screen(HEX_KEY)),
        (aws_secrets, screen(AWS_ID)),
    )
    return shapes, stated, scanners
