"""Offline rules for a change of state said in ordinary words: a job left, a device
replaced, a person or pet who died.

Pure functions of one normalised clause, run in order by
`remem.extract.offline.rules.RULES`. Each names the field the earlier state was
kept under, so consolidation supersedes it (a later statement about the same field
with a different value replaces the earlier one):

    employer, occupation    "I left the agency, freelancing now" -> employer
                            "self-employed", occupation "freelancer"; "I left the
                            firm" / "I don't work at Acme anymore" -> employer "left
                            the firm" / "left Acme". Only a workplace is left: the
                            thing left is a name or a noun of work ("job", "agency",
                            "firm" ...), never "the party" or "my keys".
    device:<noun>, car      "I ditched / swapped / traded in / replaced my (old) phone
                            for / with a Pixel" -> device:phone "Pixel"; "my phone is
                            an iPhone 12", "I have a Dell laptop" state the device in
                            the first place. A car is `car`, as "my car is a Volvo".
    choice:<what was left>  "I'm doing the 10k instead of the half" -> choice:half "10k"
    relation:<who>          "our cat passed away", "my grandpa died in May", "we had
                            to put our dog down" -> relation:cat "passed away" (with
                            the name when one is said: "Pickle, passed away"); "I
                            broke up with my boyfriend" -> relation:boyfriend "split
                            up" (a partner's key: `partner` once made canonical).
"""

from __future__ import annotations

import re

from remem.extract.offline.fact import Fact
from remem.extract.offline.person import third_person
from remem.extract.offline.text import ADV, MAX_VALUE, TRAIL, cut, is_pronoun_thing, slug, thing
from remem.model import Kind, Sensitivity

__all__ = [
    "DEVICES",
    "rule_device",
    "rule_died",
    "rule_instead",
    "rule_left_job",
    "rule_parted",
    "with_subject",
]

_I = re.IGNORECASE
_PERSONAL = Sensitivity.PERSONAL

# nouns of a place of work: what "I left the <noun>" says was a job
_WORKPLACES = (  # not "office", "school", "lab": one leaves those every day
    r"(?:job|position|role|post|company|firm|agency|startup|start-up|practice|consultancy"
    r"|department|organi[sz]ation|charity|nonprofit|non-profit|corporate\s+world|publisher"
    r"|law\s+firm|civil\s+service)"
)
# "freelancing now", "to go freelance", "went self-employed": the work that followed
_SELF_EMPLOYED = (
    r"(?:freelanc(?:ing|e|er)|self-employed|working\s+for\s+myself|working\s+freelance"
    r"|my\s+own\s+boss|(?:started|starting|running)\s+my\s+own\s+(?:business|company|studio))"
)


_UNSAID_SUBJECT = (
    r"(?:(?:just|recently|finally|also|actually)\s+)?"
    r"(?:left|quit|resigned|walked|ditched|swapped|traded|replaced|exchanged|switched|upgraded"
    r"|dumped|moved|relocated|adopted|graduated|retired"
    # "love a good curry", not "love is ...", "love and acceptance", "love to hear more"
    r"|(?:love|loved|hate|hated|adore|adored)\s+"
    r"(?!(?:is|was|it|that|this|you|your|yours|and|or|to|of|how|what|when)\b))\b"
)


def with_subject(s: str) -> str:
    """The clause with its "I", which chat leaves unsaid: "left the agency, freelancing
    now", "just moved to Manchester", "love a good curry". Only verbs whose bare form at
    a clause's start says the speaker did or feels it (a past event, a liking), never one
    a request or a noun could start ("book a table", "work is busy")."""
    return f"I {s[:1].lower()}{s[1:]}" if re.match(_UNSAID_SUBJECT, s, _I) else s


def rule_left_job(s: str) -> list[Fact]:
    """A workplace left: "I left the agency, freelancing now", "I quit Acme to go
    freelance", "I don't work at Acme anymore", "I'm no longer at the firm"."""
    s = with_subject(s)
    m = re.fullmatch(
        rf"I\s+(?:have\s+)?{ADV}(?:left|quit|resigned\s+from|walked\s+away\s+from)\s+"
        rf"(?P<x>(?:my|the|our)\s+(?:old\s+|previous\s+|last\s+)?(?:(?!(?:at|in|on|to)\b)[\w-]+\s+){{0,2}}?"
        rf"{_WORKPLACES}\b(?:\s+(?:at|in)\s+(?-i:[A-Z])[\w&'.-]*(?:\s+(?-i:[A-Z])[\w&'.-]*)*)?"
        rf"|(?-i:[A-Z])[\w&'.-]*(?:\s+(?-i:[A-Z])[\w&'.-]*){{0,3}})(?P<rest>.*)",
        s,
        _I,
    ) or re.fullmatch(
        rf"I\s+(?:do\s+not|no\s+longer)\s+{ADV}work\s+(?:at|for)\s+(?P<x>.+?)"
        rf"(?P<rest>(?:\s+(?:anymore|any\s+more|any\s+longer|now))+.*|)",
        s,
        _I,
    )
    if m is None:
        return []
    x, rest = m["x"], m["rest"]
    if re.fullmatch(r"my\s+(?:old\s+)?(?:job|position|role|post)", x, _I) and not re.search(
        _SELF_EMPLOYED, rest, _I
    ):
        return []  # no workplace named: "I quit my job" is `remem.extract.offline.work`'s
    proper = re.match(r"(?-i:[A-Z])", x) is not None
    if proper and re.match(r"(?:my|the|our)\b", x, _I) is None:
        # a bare name left is a workplace only when work is said with it
        if not (re.search(_SELF_EMPLOYED, rest, _I) or re.search(r"\bwork\b", s, _I)):
            return []
    change = True
    text = third_person(s)
    if re.search(_SELF_EMPLOYED, rest, _I):
        return [
            Fact(text, Kind.SEMANTIC, "occupation", "freelancer", _PERSONAL, change),
            Fact(text, Kind.SEMANTIC, "employer", "self-employed", _PERSONAL, change),
        ]
    place = cut(x)
    if not re.sub(r"^(?:my|our|the)\s+", "", place, flags=_I):
        return []
    return [Fact(text, Kind.SEMANTIC, "employer", f"left {place}"[:MAX_VALUE], _PERSONAL, True)]


# things a person owns one of at a time, whose make or model they name ("a Pixel")
DEVICES = frozenset(
    "phone smartphone mobile laptop computer pc tablet ipad watch smartwatch camera "
    "e-reader kindle console headphones earbuds car bike motorbike scooter van".split()
)
_DEVICE = r"(?P<d>" + "|".join(sorted(DEVICES, key=len, reverse=True)) + r")"
# a make or model is said with a capital or a digit ("Pixel", "iPhone 12", "Kia Niro")
_NAMED = r"(?-i:(?:[A-Z0-9]|[a-z]{1,2}[A-Z])[\w+.-]*)"
_MODEL = rf"(?P<y>{_NAMED}(?:\s+{_NAMED}){{0,3}})"


_SAME_DEVICE = {
    "smartphone": "phone", "mobile": "phone", "pc": "computer", "ipad": "tablet",
    "smartwatch": "watch", "kindle": "e-reader",
}  # fmt: skip


def _device_field(noun: str) -> str:
    noun = _SAME_DEVICE.get(noun.lower(), noun.lower())
    return "car" if noun == "car" else f"device:{slug(noun)}"


def rule_device(s: str) -> list[Fact]:
    """A device and its make: "I ditched my old phone for a Pixel", "I swapped my laptop
    for a ThinkPad", "I have a Dell laptop", "my phone is an iPhone 12"."""
    s = with_subject(s)
    m = re.fullmatch(
        rf"(?:I|we)\s+(?:have\s+)?{ADV}(?:ditched|swapped|traded(?:\s+in)?|replaced|exchanged"
        rf"|switched|upgraded|changed|dumped)\s+(?:my|our)\s+(?:old\s+|broken\s+|ancient\s+)?"
        rf"(?:[\w-]+\s+)?{_DEVICE}\s+(?:for|with|to)\s+(?:a\s+|an\s+|the\s+)?(?:new\s+)?{_MODEL}"
        rf"(?:\s+{_DEVICE.replace('?P<d>', '?:')})?(?:\s+.*)?",
        s,
        _I,
    )
    change = True
    if m is None:
        change = False
        m = (
            re.fullmatch(
                rf"(?:I|we)\s+{ADV}(?:have|have\s+got|got|use|own|bought|am\s+using)\s+(?:a|an)\s+"
                rf"(?:new\s+)?{_MODEL}\s+{_DEVICE}{TRAIL}",
                s,
                _I,
            )
            or re.fullmatch(
                rf"(?:I|we)\s+(?:have\s+)?{ADV}(?:switched|upgraded|moved|changed)\s+to\s+"
                rf"(?:(?:a|an|the)\s+)?(?:new\s+)?{_MODEL}\s+{_DEVICE}{TRAIL}",
                s,
                _I,
            )
            or re.fullmatch(
                rf"(?:I|we)\s+{ADV}(?:got|bought|have|have\s+got)\s+(?:a|an)\s+new\s+{_DEVICE}"
                rf"\s*(?:,|:|-|\s)\s*(?:a|an|the)?\s*{_MODEL}{TRAIL}",
                s,
                _I,
            )
            or re.fullmatch(
                rf"(?:my|our)\s+(?:new\s+)?{_DEVICE}\s+is\s+(?:now\s+)?(?:a|an)\s+{_MODEL}{TRAIL}",
                s,
                _I,
            )
        )
        changed = r"\b(?:new|now|bought|switched|upgraded|moved|changed)\b"
        change = m is not None and re.search(changed, s, _I) is not None
    if m is None:
        return []
    model = cut(m["y"])
    if not model or model.lower() in ("new", "old", "i"):
        return []
    field = _device_field(m["d"])
    return [Fact(third_person(s), Kind.SEMANTIC, field, model[:MAX_VALUE], _PERSONAL, change)]


def rule_parted(s: str, relation: str) -> list[Fact]:
    """A partner parted from: "I broke up with my boyfriend", "I split up with my wife",
    "I divorced my husband" -> relation:<who> "split up"."""
    m = re.fullmatch(
        rf"I\s+(?:have\s+|am\s+|got\s+)?{ADV}(?:broke\s+up|broken\s+up|split\s+up|separated"
        rf"|divorced)(?:\s+(?:with|from))?\s+(?:my|our)\s+(?P<r>{relation})(?:\s+.*)?",
        s,
        _I,
    )
    if m is None or not re.search(_PARTNERS, m["r"], _I):
        return []
    field = f"relation:{slug(m['r'], singular_last=False)}"
    return [Fact(third_person(s), Kind.SEMANTIC, field, "split up", _PERSONAL, True)]


_PARTNERS = r"\b(?:wife|husband|partner|spouse|boyfriend|girlfriend|fianc)"


def rule_died(s: str, relation: str) -> list[Fact]:
    """A person or pet of theirs who died: "our cat passed away", "my grandpa died in May",
    "we had to put our dog down"; `relation` is the pattern of who may be named."""
    m = re.fullmatch(
        rf"(?:my|our)\s+(?P<r>{relation})(?:\s*,?\s+(?P<n>(?-i:[A-Z])[\w'-]+)\s*,?)?\s+{ADV}"
        r"(?:has\s+|have\s+)?(?:passed\s+away|passed\s+on|died|passed)(?:\s+.*)?",
        s,
        _I,
    ) or re.fullmatch(
        rf"(?:I|we)\s+{ADV}(?:had\s+to\s+)?(?:put|have\s+put)\s+(?:my|our)\s+(?P<r>{relation})"
        r"(?:\s*,?\s+(?P<n>(?-i:[A-Z])[\w'-]+)\s*,?)?\s+(?:down|to\s+sleep)(?:\s+.*)?",
        s,
        _I,
    )
    if m is None:
        return []
    who = re.sub(r"^(?:late|old|beloved|dear|sweet|little|big)\s+", "", m["r"].lower())
    value = f"{m['n']}, passed away" if m["n"] else "passed away"
    field = f"relation:{slug(who, singular_last=False)}"
    return [Fact(third_person(s), Kind.SEMANTIC, field, value, _PERSONAL, True)]


# "I'm doing the 10k instead of the half", "switched to tea instead of coffee": the verb
# and what it takes before the new choice ("I am doing", "we have switched to")
_CHOOSE = (
    rf"(?:I|we)\s+(?:am\s+|are\s+|have\s+|will\s+|would\s+)?{ADV}(?:going\s+to\s+)?"
    r"[a-z]+(?:\s+(?:to|for|with|on|in|into))?\s+"
)
_INSTEAD_END = r"(?:\s+(?:now|these\s+days|nowadays|this\s+(?:year|time|round)|from\s+now\s+on))*"


def rule_instead(s: str) -> list[Fact]:
    """A choice that replaces another: "I'm doing the 10k instead of the half (marathon)
    now", "switched to a 10k instead of the half", "I've switched from the half to the 10k".
    Its field is `choice:<what was given up>` (`choice:half_marathon`), its value the new
    choice ("10k"); consolidation ends the records that told of what was given up
    (`remem.consolidate.rules.choices_left_behind`)."""
    s = with_subject(s)
    m = re.fullmatch(
        rf"{_CHOOSE}(?P<x>(?:(?!instead\b)[\w'-]+\s+){{0,3}}?[\w'-]+)\s+instead\s+of\s+"
        rf"(?P<y>(?:[\w'-]+\s+){{0,3}}?[\w'-]+){_INSTEAD_END}",
        s,
        _I,
    ) or re.fullmatch(
        rf"(?:I|we)\s+(?:have\s+)?{ADV}(?:switched|changed|swapped)\s+from\s+"
        r"(?P<y>(?:[\w'-]+\s+){0,3}?[\w'-]+)\s+to\s+(?P<x>(?:[\w'-]+\s+){0,3}?[\w'-]+)"
        rf"{_INSTEAD_END}",
        s,
        _I,
    )
    if m is None:
        return []
    new, old = thing(m["x"]), thing(m["y"])
    if not new or not old or is_pronoun_thing(new) or is_pronoun_thing(old) or new == old:
        return []
    field = f"choice:{slug(old)}"
    return [Fact(third_person(s), Kind.SEMANTIC, field, new[:MAX_VALUE], Sensitivity.NORMAL, True)]
