"""Where each class of secret is in a text: the detectors behind `remem.policy.dataclasses`.

Two sorts of evidence are used:

- shapes that are secrets wherever they appear: vendor key and token formats
  (OpenAI, AWS, GitHub, GitLab, Slack, Stripe, Google, npm, Hugging Face,
  remem's own `rk_` keys), JWTs, `Bearer` tokens, credentials inside URLs, PEM
  private key blocks, `0x` + 64 hex digits (an Ethereum-style private key, unless
  introduced as a transaction, block or hash), an AWS secret access key next to
  its access key id, Luhn-valid card numbers, mod-97-valid IBANs and US social
  security numbers;
- values *stated as* secrets: "my password is ..." (also "pass word"), "api
  key: ...", "PIN is ...", "my cvv is 123", "the door code is 4417-9921", "wifi
  key: ..." and "its key is ..." (a made-up-looking value), "my social is ...",
  "recovery codes: ...", "passport number is ...", "login: bob / ...",
  "login with password ...", and password labels in German, French, Spanish,
  Portuguese, Dutch, Swedish, Norwegian, Danish, Finnish, Polish and Italian
  ("Passwort: ...", "mot de passe : ...", "contraseña: ...", "senha: ...",
  "wachtwoord: ..."). Without the label an ordinary word or number is left
  alone, which keeps dates, prices, phone and order numbers out.

Every detector reads the text folded (`remem.policy.folding.fold`): full-width
and other digits as ASCII, NFKC letters, format characters such as zero-width
spaces dropped; a hit is mapped back onto the text as written.

Known limits. A secret with neither a known shape nor a label is missed ("it's
hunter2"), and so is one spelled out in words. A stated password is one token
unless quoted ("my password is correct horse" finds "correct"). Labels that are
also ordinary words ("pass: ...", "login with password ...") need a value that
looks made up (letters with digits, or a symbol); a bare "the key is ..." needs
8 characters mixing both cases with digits ("the key is consistency" passes). 64
hex digits without `0x` and without a "private key" or "secret key" label are
left alone: that is what every SHA-256 digest looks like. Card numbers must carry
a network's prefix and length (see `finance._card_network`) and be grouped as
cards print them (one separator throughout: a space, two or three spaces, a
dash, a dot, a slash or an underscore; or one digit at a time), so a card run
into other digits may be missed, while about one in ten other numbers of such a
prefix and length pass Luhn and are flagged (a 16-digit membership number
starting with 5, say). Any ddd-dd-dddd in the issued SSN ranges is taken for an
SSN, part numbers included. An IBAN written with lower-case letters must also
have its country's length, since hex digests take its shape. Placeholders
("[REDACTED:password]", "${DB_PASSWORD}", "********") are not secrets, so
redacted text scans clean. A stated value that merely looks like a secret ("my
password is banana") is flagged: refusing a harmless text costs less than
storing a secret. A stated value is judged by at most its first `VALUE_MOST` (512)
characters, and a redaction of a longer one reaches the end of its run of non-space
characters: a stated passphrase of words longer than that is redacted in part.

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
from remem.policy.detectors.needles import Screen, Sieve, screen
from remem.policy.detectors.shapes import AWS_ID, HEX_KEY, SHAPES, aws_secrets, hex_keys
from remem.policy.detectors.stated import STATED
from remem.policy.folding import fold

__all__ = ["Hit", "detect", "iban_valid", "luhn_valid"]

_CARD_DIGITS = 13  # the shortest card a network issues (`finance._card_network`)


# -- all of them --------------------------------------------------------------------------------


def detect(text: str, *, screened: bool = True) -> Iterator[Hit]:
    """Every detector's hits in `text`, unordered and possibly overlapping.

    The detectors read `text` folded (`remem.policy.folding.fold`: NFKC, other
    digits as ASCII, format characters dropped), and each hit is mapped back to
    the span of `text` it was read from.

    A detector runs only where its screen (`needles.screen`: the literal text
    and digits its every match holds) says it may match, which skips none of
    its hits; `screened=False` runs every detector, the reference that
    `tests/flows/test_detector_screens.py` holds the screens to.
    """
    folded = fold(text)
    read = folded.text
    detectors, sieve = _detectors()
    for i in sieve.passed(read) if screened else range(len(detectors)):
        if read is text:
            yield from detectors[i](read)
        else:
            for kind, start, end in detectors[i](read):
                yield (kind, *folded.span(start, end))


Detector = Callable[[str], Iterator[Hit]]


def _shape(kind: str, pattern: re.Pattern[str], text: str) -> Iterator[Hit]:
    for m in pattern.finditer(text):
        start, end = m.span("v") if "v" in pattern.groupindex else m.span()
        if end > start:
            yield (kind, start, end)


# A stated value is read from at most `VALUE_MOST` characters after its label. Read to
# the end of the text, a label repeated in its own value ("pass=pass=pass=...") took
# time in the square of the text's length (a minute at 100,000 characters). A value
# that runs on past them is judged by its first `VALUE_MOST` characters and its hit
# goes on to the end of its run of non-space characters, so that a redaction still
# covers all of it; a passphrase of words longer than that is covered in part.
VALUE_MOST = 512
_NON_SPACE = re.compile(r"\S*")
_SPACE = re.compile(r"\s")


def _stated(
    kind_of: Callable[[re.Match[str]], str], pattern: re.Pattern[str], value_of: ValueFn, text: str
) -> Iterator[Hit]:
    reach = (-1, -1)  # the last run a hit was carried over: no space from [0] to [1]
    for m in pattern.finditer(text):
        pos = m.end()
        window = text[pos : pos + VALUE_MOST]
        span = value_of(window, 0)
        if not span:
            continue
        start, end = pos + span[0], pos + span[1]
        if pos + len(window) < len(text) and not _SPACE.search(window, span[1]):
            # the value may run on past the window: carry it to its run's end, once per run
            if not reach[0] <= end <= reach[1]:
                run = _NON_SPACE.match(text, end)
                reach = (end, run.end() if run else end)
            end = reach[1]
        yield (kind_of(m), start, end)


@functools.cache
def _detectors() -> tuple[tuple[Detector, ...], Sieve]:
    """Every detector in the order they run, and their screens, read from the patterns
    once, on first use."""
    found: list[tuple[Detector, Screen]] = []
    for kind, pattern in SHAPES:
        found.append((functools.partial(_shape, kind, pattern), screen(pattern)))
    for kind_of, pattern, value_of in STATED:
        found.append((functools.partial(_stated, kind_of, pattern, value_of), screen(pattern)))
    found += [
        (cards, Screen((), _CARD_DIGITS)),
        (ibans, screen(IBAN)),
        (hex_keys, screen(HEX_KEY)),
        (aws_secrets, screen(AWS_ID)),
    ]
    return tuple(d for d, _ in found), Sieve(s for _, s in found)
