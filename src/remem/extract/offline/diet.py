"""Offline rules about what a speaker eats and cannot eat: diet, foods, allergies.

Pure functions of one normalised clause, run in order by
`remem.extract.offline.rules.RULES`. A diet is one field ("diet" for the main
kinds, "diet:<x>" for keto, halal ...), a food one "eats:<food>", an allergy
one "allergy:<x>" per allergen.
"""

from __future__ import annotations

import re

from remem.extract.offline.fact import Fact
from remem.extract.offline.person import VERBS, third_person
from remem.extract.offline.text import ADV, TRAIL, TRAIL_WORD, cut, slug, thing
from remem.model import Kind, Sensitivity

__all__ = ["DIET_MAIN", "rule_allergy", "rule_diet", "rule_eats"]

_I = re.IGNORECASE
_PERSONAL = Sensitivity.PERSONAL


DIET_MAIN = {
    "vegetarian": "vegetarian", "vegan": "vegan", "pescatarian": "pescatarian",
    "pescetarian": "pescatarian", "flexitarian": "flexitarian", "omnivore": "eats meat",
    "carnivore": "eats meat", "meat eater": "eats meat", "meat-eater": "eats meat",
    "plant-based": "vegan", "plant based": "vegan",
}  # fmt: skip
_DIET = (
    r"(?P<d>vegetarian|vegan|pescatarian|pescetarian|flexitarian|omnivore|carnivore|meat[- ]eater"
    r"|plant[- ]based"
    r"|keto|paleo|kosher|halal|gluten[- ]free|dairy[- ]free|lactose[- ]intolerant|c(?:o)?eliac)"
)


def _diet_fact(s: str, diet: str, negated: bool, change: bool) -> Fact:
    d = diet.lower().replace(" ", "-")
    main = DIET_MAIN.get(diet.lower())
    if main is not None:
        value = ("no meat" if main == "eats meat" else f"not {main}") if negated else main
        return Fact(third_person(s), Kind.SEMANTIC, "diet", value, _PERSONAL, change)
    d = "celiac" if d == "coeliac" else d
    sensitive = d in ("kosher", "halal", "celiac", "lactose-intolerant")
    sens = Sensitivity.SENSITIVE if sensitive else _PERSONAL
    value = f"not {d}" if negated else d
    return Fact(third_person(s), Kind.SEMANTIC, f"diet:{slug(d)}", value, sens, change)


# what may follow a diet after a comma and leave it whole: "I'm pescatarian, fish maybe
# twice a week", not "I'm vegan, except for cheese" or "I'm vegetarian, or mostly"
_ASIDE = (
    r"(?:\s*,\s+(?!(?:except|apart|other|or|well|until|if|when|unless|not|kind|sort|mostly"
    r"|sometimes|partly|ish|almost|nearly|trying|sort\s+of)\b).*)?"
)


def rule_diet(s: str) -> list[Fact]:
    if m := re.fullmatch(
        rf"(?:I|we)\s+(?:am|are)\s+{ADV}(?P<neg>not\s+(?:really\s+)?|no\s+longer\s+)?{ADV}"
        rf"(?:(?:a|an)\s+)?(?:strict\s+|full[- ]time\s+|proper\s+)?{_DIET}{TRAIL}{_ASIDE}",
        s,
        _I,
    ):
        return [_diet_fact(s, m["d"], bool(m["neg"]), False)]
    if m := re.fullmatch(
        rf"(?:I|we)\s+(?:have\s+)?{ADV}(?:both\s+|all\s+)?{ADV}(?:became|become|went|gone"
        r"|turned|(?:switched|changed|moved|went\s+back|gone\s+back)\s+to(?:\s+being)?)"
        rf"\s+{ADV}(?:(?:a|an)\s+)?{_DIET}(?:\s+diet)?{TRAIL}{_ASIDE}",
        s,
        _I,
    ):
        return [_diet_fact(s, m["d"], False, True)]
    return []


_NOT_FOOD = frozenset(
    "a lot out much well healthy healthily late early here there that this it them anything "
    "everything something fast slowly enough properly right less more".split()
)


def rule_eats(s: str) -> list[Fact]:
    m = re.fullmatch(
        rf"(?:I|we)\s+{ADV}(?P<neg>do\s+not\s+|no\s+longer\s+|never\s+|cannot\s+|(?:have\s+)?{ADV}"
        rf"(?:stopped|quit|gave\s+up|given\s+up)\s+)?{ADV}(?P<start>(?:have\s+)?started\s+|began\s+"
        r"|(?:went|gone|have\s+gone|am\s+going)\s+back\s+to\s+|returned\s+to\s+)?"
        rf"(?:eat|eating)\s+(?P<x>(?:any\s+)?[a-z]+(?:\s+(?!{TRAIL_WORD})[a-z]+)?){TRAIL}",
        s,
        _I,
    )
    if not m:
        return []
    food = re.sub(r"^any\s+", "", m["x"].lower())
    if food in _NOT_FOOD or food.split()[0] in _NOT_FOOD:
        return []
    neg = bool(m["neg"])
    stopped = re.search(r"\b(?:stopped|quit|gave\s+up|given\s+up)\b", m["neg"] or "", _I)
    change = bool(m["start"]) or stopped is not None
    if food in ("meat", "animal products"):
        value = "no meat" if neg else "eats meat"
        return [Fact(third_person(s), Kind.SEMANTIC, "diet", value, _PERSONAL, change)]
    value = "does not eat" if neg else "eats"
    return [Fact(third_person(s), Kind.SEMANTIC, f"eats:{slug(food)}", value, _PERSONAL, change)]


# words after a comma that go on about an allergy rather than name another allergen
_GOES_ON = (
    r"like|so|which|especially|it|that|this|as|since|ever|even|once|really|very|super"
    r"|badly|seriously|pretty|not|no|found|got|had|went|made|took|felt|ate|broke|came"
    r"|nearly|almost|learnt"
)


def rule_allergy(s: str) -> list[Fact]:
    m = re.fullmatch(
        rf"(?:I|we)\s+(?:am|are)\s+{ADV}(?P<neg>not\s+|no\s+longer\s+)?{ADV}(?:very\s+|severely\s+"
        r"|highly\s+|mildly\s+|slightly\s+|deathly\s+|seriously\s+)?allergic\s+to\s+(?P<x>.+)",
        s,
        _I,
    ) or re.fullmatch(
        r"I\s+(?P<neg>do\s+not\s+|no\s+longer\s+)?(?:have|have\s+got|got)\s+(?:a|an|any)\s+"
        r"(?:severe\s+|mild\s+|serious\s+|bad\s+)?(?P<x>[a-z][a-z -]{1,30}?)\s+allerg(?:y|ies)"
        r"(?:\s+.*)?",
        s,
        _I,
    )
    if not m:
        return []
    neg = bool(m["neg"])
    # "... to wool and avoid any woolen clothing": the list ends where a verb goes on
    ends = r"\s+(?:but|because|so|which|since|that|and\s+I|now|anymore|any\s+more)\b"
    ends += rf"|,?\s+and\s+(?:{ADV})(?:{'|'.join(sorted(VERBS))})\b"
    # "... to shellfish, like ER-trip allergic, happened once": after a comma, a word
    # that goes on about the allergy (a hedge, a verb) ends the list of allergens
    listed = cut(m["x"], ends)
    raw = cut(m["x"], rf"{ends}|,\s*(?:{_GOES_ON}|{'|'.join(sorted(VERBS))}|[a-z]+ed)\b")
    items = [thing(i) for i in re.split(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+", raw)]
    items = [i for i in items if i and i not in ("anything", "nothing", "everything", "it")]
    value = "not allergic" if neg else "allergic"
    not_ = "not " if neg else ""
    said = s if raw == listed else s[: m.start("x")] + raw  # the clause to its list's end
    return [
        Fact(
            third_person(said) if len(items) == 1 else f"Is {not_}allergic to {item}",
            Kind.SEMANTIC,
            f"allergy:{slug(item)}",
            value,
            Sensitivity.SENSITIVE,
        )
        for item in items
    ]
