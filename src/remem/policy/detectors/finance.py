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


def cards(text: str) -> Iterator[Hit]:
    """Card numbers: a network's prefix and length, grouped as printed, Luhn-valid."""
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
IBAN = re.compile(
    r"(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])"
)


def iban_valid(iban: str) -> bool:
    """Whether a compact IBAN (no spaces) passes its mod-97 check (ISO 13616)."""
    if not 15 <= len(iban) <= 34 or not iban.isascii() or not iban.isalnum():
        return False
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def ibans(text: str) -> Iterator[Hit]:
    """IBANs whose mod-97 check holds."""
    for m in IBAN.finditer(text):
        # the longest valid prefix: the match may have taken a group of the next word
        value = m.group()
        ends = [len(value)] + [i for i in range(len(value) - 1, 14, -1) if value[i] == " "]
        for end in ends:
            if iban_valid(value[:end].replace(" ", "")):
                yield ("bank_account", m.start(), m.start() + end)
                break
