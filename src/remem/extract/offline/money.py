"""Money being tight, said in passing: a standing constraint on any plan or purchase.

"We're fine for now but money's going to be tight until the contract comes
through", "I'm on a tight budget this month", "we're skint till payday": each
bounds a later request for presents, trips or plans that shares no word with
it. Such a clause becomes a fact with the field `money` (value "tight"), its
text the statement as said from its subject on ("Money is going to be tight
until the contract comes through", "Is on a tight budget this month"); a clause
before it that says something else ("we're fine for now but ...") is left out.
Recall brings it to requests through the money domain, which bounds every
request (`remem.policy.applies`).
"""

from __future__ import annotations

import re

from remem.extract.offline.fact import Fact
from remem.extract.offline.person import third_person
from remem.extract.offline.text import ADV
from remem.model import Kind

__all__ = ["rule_money"]

_I = re.IGNORECASE
_SHORT = (
    r"(?:on\s+a\s+(?:very\s+|really\s+)?(?:tight|small|limited|shoestring|strict|tiny)\s+budget"
    r"|broke|skint|strapped(?:\s+for\s+cash)?|short\s+(?:of|on)\s+(?:money|cash)"
    r"|tight\s+(?:on|for)\s+(?:money|cash)|living\s+pay\s*check\s+to\s+pay\s*check)"
)
_WHO = rf"(?P<who>\b(?:I|we)\s+(?:am|are)\s+{ADV}{_SHORT}.*)"
_MONEY = (
    r"(?P<money>\b(?:money|cash|finances|funds|the\s+budget|our\s+budget|my\s+budget)"
    r"(?:'s|\s+is|\s+are)\s+(?:going\s+to\s+be\s+|gonna\s+be\s+|will\s+be\s+|getting\s+)?"
    rf"{ADV}(?:tight|short|limited|stretched|a\s+struggle|low).*)"
)


# What makes a clause none of the speaker's money, read in the `_HEAD` characters before
# its subject: another owner ("their money", "my sister's money") or a supposition ("I
# wonder if money is tight", "whether the budget is tight", "if we are broke by March")
_HEAD = 120
_NOT_MINE = re.compile(
    r"(?:\b(?:their|his|her|your|its)|'s?|\b(?:if|whether|unless|wonder|suppose)\b"
    r"(?:(?!\b(?:but|and|so|because)\b)[^,;:])*)\s*$",
    _I,
)
# what follows from it is a clause of its own ("so no fancy dinners", "which means no
# holiday"), left out of the statement
_CONSEQUENCE = re.compile(r"[,;]?\s+(?:so|which\s+means|that\s+means|and\s+so|but)\b.*$", _I)


def rule_money(s: str) -> list[Fact]:
    """A clause that says the speaker's money is tight, from its subject on, without what
    follows from it."""
    m = re.search(_WHO, s, _I) or re.search(_MONEY, s, _I)
    if m is None or _NOT_MINE.search(s[max(0, m.start() - _HEAD) : m.start()]):
        return []
    said = _CONSEQUENCE.sub("", m.group(0)).strip(" ,")
    said = re.sub(r"^(?:my|our)\s+", "", said, flags=_I)
    said = re.sub(r"^(\w+)'s\b", r"\1 is", said)
    said = re.sub(r"\b(?:til|till)\b", "until", said) if m.lastgroup == "money" else said
    text = third_person(said)
    return [Fact(text[:1].upper() + text[1:], Kind.SEMANTIC, "money", "tight")]
