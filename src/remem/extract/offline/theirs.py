"""Facts of a named third party, each on a field of that person's own.

"My sister Ana lives in Bristol" and "my other sister Bec lives in Leeds" are two
facts, each keyed by whom it is about, relation and first name (`sister_ana:home`,
`sister_bec:home`), so neither supersedes the other; "Ana moved to Leeds", read as
"my sister Ana moved to Leeds" (`remem.extract.offline.named`), lands on
`sister_ana:home` and supersedes her old city. The rules of
`remem.extract.offline.rules` read the clause as if the person said it of themselves
("my sister Ana lives in Bristol" -> "I live in Bristol", "my daughter Mia's
favourite colour is blue" -> "my favourite colour is blue"); the field a rule gives
(the slot: home, allergy:peanut, diet, age, occupation ...) is then put after the
person: `<relation>_<name>:<slot>`. The record's text is the clause as said ("Sister
Ana lives in Bristol"); a list a rule splits ("peanuts and shellfish") is one record
per item, each naming the person. Each is a fact (kind semantic), a preference too
("my wife Kate prefers window seats"): the user's standing preferences are the user's
own (`remem.policy.applies.is_standing`).

The person's key comes first, so no family of the user's own fields
(`remem.policy.fields.FAMILIES`: "allergies" reads every `allergy:<x>`) takes a third
party's fact for the user's. An unnamed relation ("my sister lives in Bristol",
`home:sister`) and a clause no rule reads with a field are left to the rules as
before (`person_facts` returns []).
"""

from __future__ import annotations

import re

from remem.extract.offline.fact import Fact
from remem.extract.offline.named import NAME, NOT_NAMES, PLURAL
from remem.extract.offline.person import is_adverb, third_person
from remem.extract.offline.rules import RELATION, RELATION_ADJ, rule_facts
from remem.extract.offline.text import slug
from remem.model import Kind

__all__ = ["person_facts", "relation_fact"]

_I = re.IGNORECASE

# "my (other) (little) sister Ana (Lopez)('s) <what is said of her>"
_SUBJECT = re.compile(
    rf"(?P<who>(?:my|our)\s+(?:other\s+)?{RELATION_ADJ}(?P<r>{RELATION})\s+(?P<n>{NAME})"
    rf"(?:\s+{NAME})?)(?P<poss>'s)?\s+(?P<rest>[a-z].*)",
    _I,
)
# "my (other) (little) husband('s) <what is said of him>": a relation not named
_RELATIVE = re.compile(
    rf"(?:my|our)\s+(?:other\s+)?{RELATION_ADJ}(?P<r>{RELATION})(?P<poss>'s)?\s+(?P<rest>[a-z].*)",
    _I,
)
# what follows the name that is no predicate of hers: "my sister Ana and I", "..., who"
_NOT_PREDICATE = re.compile(r"(?:and|or|nor|but|who|whom|whose|which|that|with)\b", _I)
# "... moved to Oslo and she loves the light there": what follows says more, of another subject
_GOES_ON = re.compile(r",?\s+(?:and|but|so)\s+(?=(?:he|she|they|it|you)\b)", _I)
# the speaker in what is said of someone else ("... lives with me", "... loves our dog")
_SPEAKER = re.compile(r"\b(?:I|me|my|mine|myself|we|us|our|ours|ourselves)\b", _I)
_ADVERBS = frozenset(
    "really also just now currently still actually recently finally definitely absolutely "
    "totally usually generally always truly never often sometimes rarely even only mainly "
    "normally typically already officially apparently".split()
)
_BASE = {"is": "am", "has": "have", "does": "do", "was": "was", "goes": "go"}


def person_facts(clause: str) -> list[Fact]:
    """The facts a rule reads in what `clause` says of "my <relation> <Name>", on fields
    keyed by that person (`<relation>_<name>:<slot>`); [] when the clause says nothing
    of a named person or no rule gives it a field."""
    m = _SUBJECT.fullmatch(clause)
    if m is None or m["r"].lower() in PLURAL or m["n"].casefold() in NOT_NAMES:
        return []
    if _NOT_PREDICATE.match(m["rest"]) or _SPEAKER.search(m["rest"]):
        return []  # "my sister Ana lives with me": said as hers, "me" would be her
    mine = _as_own(m["rest"], possessive=bool(m["poss"]))
    facts = [f for f in rule_facts(mine) if f.field is not None]
    if not facts:
        return []
    person = slug(f"{m['r']} {m['n']}", singular_last=False)
    whole = third_person(clause)
    subject = clause[: m.start("rest")].strip()  # "my sister Ana" / "my sister Ana's"
    out: list[Fact] = []
    for fact in facts:
        if len(facts) == 1 and fact.text == third_person(mine):
            text = whole  # the clause as said
        else:  # the rule's statement of one item: "Is allergic to peanuts"
            text = third_person(f"{subject} {fact.text[:1].lower()}{fact.text[1:]}")
        field = f"{person}:{fact.field}"
        out.append(Fact(text, Kind.SEMANTIC, field, fact.value, fact.sensitivity, fact.change))
    return out


def relation_fact(clause: str) -> list[Fact]:
    """What `clause` says of an unnamed relation ("my husband is vegetarian", "our kids
    are coeliac") when a rule reads it with a field as said by that person of themselves:
    one plain fact, the clause as said ("Husband is vegetarian"), on no field (which
    husband is not said, and a slot keyed by the relation alone would make two sisters
    one). [] otherwise: the caller's plain-fact reading stored nothing of such a clause,
    having too few words of content ("husband", "vegetarian")."""
    m = _RELATIVE.fullmatch(clause)
    if m is None or _NOT_PREDICATE.match(m["rest"]) or _SPEAKER.search(m["rest"]):
        return []
    rest = re.sub(r"^are\b", "is", m["rest"], flags=_I)  # "our kids are vegan": as one of them
    mine = _as_own(rest, possessive=bool(m["poss"]))
    said = [f for f in rule_facts(mine) if f.field is not None]
    if not said:
        return []
    return [Fact(third_person(clause), Kind.SEMANTIC, sensitivity=said[0].sensitivity)]


def _as_own(rest: str, *, possessive: bool) -> str:
    """What is said of someone ("lives in Bristol", after "'s": "favourite colour is blue")
    as they would say it of themselves, up to where another subject starts ("... and she
    loves it"): "I live in Bristol", "my favourite colour is blue"."""
    mine = f"my {rest}" if possessive else _first_person(rest)
    return _GOES_ON.split(mine, maxsplit=1)[0]


def _first_person(rest: str) -> str:
    """What is said of someone as said of oneself: "really loves pizza" -> "I really love
    pizza", "is allergic to ..." -> "I am allergic to ..."; only the first verb changes."""
    words = rest.split(" ")
    i = 0
    while i < len(words) - 1 and (words[i].lower() in _ADVERBS or is_adverb(words[i])):
        i += 1
    w = words[i].lower()
    if w in _BASE:
        words[i] = _BASE[w]
    elif re.fullmatch(r"[a-z]{3,}ies", w):
        words[i] = w[:-3] + "y"  # "studies"
    elif re.fullmatch(r"[a-z]+(?:ches|shes|sses|xes|zes|oes)", w):
        words[i] = w[:-2]  # "watches", "goes"
    elif re.fullmatch(r"[a-z]+[^s']s", w):
        words[i] = w[:-1]  # "lives", "loves"
    return "I " + " ".join(words)
