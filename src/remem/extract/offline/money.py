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


def rule_money(s: str) -> list[Fact]:
    """A clause that says the speaker's money is tight, from its subject on."""
    m = re.search(_WHO, s, _I) or re.search(_MONEY, s, _I)
    if m is None:
        return []
    said = m.group(0).strip(" ,")
    said = re.sub(r"^(\w+)'s\b", r"\1 is", said)
    said = re.sub(r"\b(?:til|till)\b", "until", said) if m.lastgroup == "money" else said
    said = re.sub(r"^(?:my|our)\s+", "", said, flags=_I)
    text = third_person(said)
    return [Fact(text[:1].upper() + text[1:], Kind.SEMANTIC, "money", "tight")]
