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
from remem.extract.offline.text import ADV, MONEY, money
from remem.model import Kind

__all__ = ["rule_budget_limit", "rule_money"]

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


# -- a budget said as a limit ------------------------------------------------------------

# "keep it under £150", "nothing over $80", "max 50 euros", "no more than 200 quid", "£150
# tops", "I don't want to spend more than £200": the most the speaker will spend
_BELOW = r"(?:under|below|less\s+than|beneath)"
_AT_MOST = (
    r"(?:no\s+more\s+than|not\s+more\s+than|nothing\s+more\s+than|nothing\s+(?:over|above)"
    r"|not\s+(?:over|above)|no\s+(?:higher|over)\s+than|max(?:imum)?|a\s+max(?:imum)?\s+of"
    r"|up\s+to|at\s+(?:the\s+)?most|within)"
)
_KEEP = (
    r"(?:(?:I|we)\s+(?:would\s+(?:like|love|prefer)\s+to|want\s+to|need\s+to|have\s+to"
    r"|(?:would\s+)?rather)\s+|let\s+us\s+)?keep\s+(?:it|this|things|that|the\s+(?:cost|price"
    r"|total|spend|spending|budget|bill|gift|present)|costs|spending)\s+(?:to\s+)?"
)
_SPEND = (
    r"(?:(?:I|we)\s+(?:do\s+not|cannot|can\s+not|would\s+rather\s+not|will\s+not|(?:am|are)\s+not"
    r"\s+(?:willing|able)\s+to)\s+(?:want\s+to\s+|really\s+want\s+to\s+)?(?:spend|pay|go)"
    r"\s+(?:more\s+than|over|above|beyond)"
    r"|(?:I|we)\s+(?:can|could|want\s+to|would\s+like\s+to|will)\s+(?:only\s+)?spend"
    rf"\s+(?:no\s+more\s+than|not\s+more\s+than|{_BELOW}))"
)
_AMOUNT = rf"(?P<a>{MONEY})"
_AFTER = (
    r"(?P<tail>(?:\s+(?:max(?:imum)?|tops|at\s+(?:the\s+)?most|or\s+(?:less|under|so|thereabouts)"
    r"|ish|ideally|preferably|if\s+possible|if\s+you\s+can|total|in\s+total|all\s+in"
    r"|each|per\s+person|a\s+head|limit|would\s+be\s+(?:ideal|great|perfect|good|best|nice)"
    r"|is\s+(?:ideal|fine|best|good)))*)"
    r"(?P<for>\s+(?:for|on)\s+(?:the|a|an|my|our|this|each)\s+[\w'-]+(?:\s+[\w'-]+){0,2})?"
)
_LIMIT = (
    r"(?:(?:please|ideally|preferably|oh|and|but|so|just|honestly|actually|ok|okay|well|hmm|um)"
    r",?\s+)*(?:(?:my|our|the)\s+)?(?:budget(?:\s+(?:is|of|would\s+be))?\s+)?"
    rf"(?P<pre>{_KEEP}(?:{_BELOW}|{_AT_MOST}|around|about|roughly)\s+|{_SPEND}\s+"
    rf"|(?:(?:nothing|anything|something|not|ideally|preferably)\s+)?(?:{_BELOW}|{_AT_MOST})\s+)?"
    rf"{_AMOUNT}{_AFTER}"
)
# said after the amount, one of these makes it a limit ("£150 tops")
_CAP_AFTER = r"\b(?:max|maximum|tops|most|less|under|limit)\b"


def rule_budget_limit(s: str) -> list[Fact]:
    """The most the speaker will spend, said as a limit ("keep it under £150", "nothing
    over $80", "max 50 euros", "£150 tops"): the field `budget`, its value the amount
    with its currency ("£200" of "200 quid"); its text "Budget is under £150" (or "up
    to ..."), with what it is for when said ("... for the present"). An amount with no
    currency ("under 150") is no budget: it may count anything."""
    m = re.fullmatch(_LIMIT, s.strip(), _I)
    if m is None or not (m["pre"] or re.search(_CAP_AFTER, m["tail"], _I)):
        return []
    value = money(m["a"])
    if value[:1].isdigit():
        return []
    said = s.strip()[: m.start("a")]
    limit = (
        "under"
        if re.search(rf"\b{_BELOW}\s+$", said, _I)
        else "about"
        if re.search(r"\b(?:around|about|roughly)\s+$", said, _I)
        else "up to"
    )
    # what the amount is counted by: "per person", "in total"
    per = re.search(r"\b(?:each|per\s+person|a\s+head|in\s+total|all\s+in)\b", m["tail"], _I)
    for_what = (m["for"] or "").strip()
    for_what = re.sub(r"^(?:for|on)\s+(?:my|our)\b", r"for their", for_what, flags=_I)
    for_what = f" {for_what}" if for_what else ""
    per_what = f" {per.group(0).lower()}" if per else ""
    text = f"Budget is {limit} {value}{per_what}{for_what}"
    return [Fact(text, Kind.SEMANTIC, "budget", value)]
