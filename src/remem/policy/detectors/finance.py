"""Payment cards (network prefix and length, printed grouping, Luhn) and bank accounts
(IBANs, mod 97)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from remem.policy.detectors.base import (
    Hit,
)

# -- payment cards ----------------------------------------------------------------------------

# A run of digit groups separated by a space, two or three spaces, a dash, a dot, a slash
# or an underscore, not part of a word, a phone number ("+44 ...") or a decimal ("3.14").
# Atomic, so a run is never cut short. That it is not followed by a word character is
# checked after the match (`cards`), not by a lookahead: one that failed sent the
# engine back into the run to read it again from each of its groups ("1 1 1 ... 1x":
# time in the square of its length), where every start ends at the same place and fails.
_DIGIT_RUN = re.compile(r"(?<![A-Za-z0-9_+])(?<![0-9][.,])(?>[0-9]+(?:(?: {1,3}|[./_-])[0-9]+)*+)")
_WORD_CHAR = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
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


def cards(text: str) -> Iterator[Hit]:
    """Card numbers: a network's prefix and length, grouped as printed, Luhn-valid."""
    for run_match in _DIGIT_RUN.finditer(text):
        if run_match.end() < len(text) and text[run_match.end()] in _WORD_CHAR:
            continue  # run into a word: no card starts anywhere in it
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

# Country, two check digits, then groups of four (the last shorter), spaced or not; in
# either case.
IBAN = re.compile(
    r"(?<![A-Za-z0-9])[A-Za-z]{2}[0-9]{2}(?: ?[A-Za-z0-9]{4}){2,7}(?: ?[A-Za-z0-9]{1,3})?"
    r"(?![A-Za-z0-9])"
)
# How long each country's IBANs are (the SWIFT IBAN registry): what an IBAN written with
# lower-case letters must match, since lower-case words and hex digests take its shape.
IBAN_LENGTHS: dict[str, int] = {
    c: int(n)
    for c, n in (
        item.split(":")
        for item in """
        AD:24 AE:23 AL:28 AT:20 AZ:28 BA:20 BE:16 BG:22 BH:22 BI:27 BR:29 BY:28 CH:21 CR:22
        CY:28 CZ:24 DE:22 DJ:27 DK:18 DO:28 EE:20 EG:29 ES:24 FI:18 FK:18 FO:18 FR:27 GB:22
        GE:22 GI:23 GL:18 GR:27 GT:28 HR:21 HU:28 IE:22 IL:23 IQ:23 IS:26 IT:27 JO:30 KW:30
        KZ:20 LB:28 LC:32 LI:21 LT:20 LU:20 LV:21 LY:25 MC:27 MD:24 ME:22 MK:19 MN:20 MR:27
        MT:31 MU:30 NI:28 NL:18 NO:15 OM:23 PK:24 PL:28 PS:29 PT:25 QA:29 RO:24 RS:22 RU:33
        SA:24 SC:31 SD:18 SE:24 SI:19 SK:24 SM:27 SO:23 ST:25 SV:28 TL:23 TN:24 TR:26 UA:29
        VA:22 VG:24 XK:20 YE:30
        """.split()
    )
}


def iban_valid(iban: str) -> bool:
    """Whether a compact IBAN (no spaces, either case) passes its mod-97 check (ISO 13616)."""
    if not 15 <= len(iban) <= 34 or not iban.isascii() or not iban.isalnum():
        return False
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def ibans(text: str) -> Iterator[Hit]:
    """IBANs whose mod-97 check holds; one with a lower-case letter also needs its
    country's length (`IBAN_LENGTHS`)."""
    for m in IBAN.finditer(text):
        # the longest valid prefix: the match may have taken a group of the next word
        value = m.group()
        ends = [len(value)] + [i for i in range(len(value) - 1, 14, -1) if value[i] == " "]
        for end in ends:
            compact = value[:end].replace(" ", "")
            if not compact.isupper() and IBAN_LENGTHS.get(compact[:2].upper()) != len(compact):
                continue
            if iban_valid(compact.upper()):
                yield ("bank_account", m.start(), m.start() + end)
                break
