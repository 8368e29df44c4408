"""Offline rules about what a speaker's body needs: aids, conditions, limits, access.

Pure functions of one normalised clause, run in order by
`remem.extract.offline.rules.RULES`. These are the constraints a later plan or
booking must respect, so each gets a field of its own:

    uses:<aid>          "I use a wheelchair" -> uses:wheelchair = uses | does not use
    condition:<x>       "I get seasick" -> condition:seasickness = has | does not have;
                        "I'm deaf in one ear" -> condition:deafness; "I have bad knees"
    cannot:<x>          "I can't climb stairs" -> cannot:climb_stair = cannot | can;
                        "my knees can't handle stairs" -> cannot:stair; "I don't
                        drive" -> cannot:drive = does not drive
    needs:<x>           "I need step-free access" -> needs:step_free_access = needs

Every one is health information, so sensitive. The words are those of bodies and
mobility in general, not of any one dataset: sickness in motion, the senses,
joints and back, long-term conditions, and the aids people use for them.
"""

from __future__ import annotations

import re

from remem.extract.offline.fact import Fact
from remem.extract.offline.person import third_person
from remem.extract.offline.text import ADV, cut, slug
from remem.model import Kind, Sensitivity

__all__ = ["rule_access", "rule_cannot", "rule_condition", "rule_uses"]

_I = re.IGNORECASE
_SENSITIVE = Sensitivity.SENSITIVE
_END = r"\s+(?:but|because|so|which|since|and\s+I|when|if|though|although)\b"

_SICKNESS = {
    "seasick": "seasickness", "carsick": "car sickness", "car sick": "car sickness",
    "airsick": "air sickness", "air sick": "air sickness", "travel sick": "travel sickness",
    "travel-sick": "travel sickness", "motion sick": "motion sickness",
    "motion-sick": "motion sickness",
}  # fmt: skip
_SICK = r"(?P<sick>sea\s*sick|car\s*sick|air\s*sick|travel[- ]sick|motion[- ]sick)"
# conditions said with "I am ...": the senses, long-term illness, pregnancy
_STATE = {
    "deaf": "deafness", "hard of hearing": "hearing loss", "blind": "blindness",
    "partially sighted": "sight loss", "visually impaired": "sight loss",
    "colour blind": "colour blindness", "color blind": "colour blindness",
    "colour-blind": "colour blindness", "color-blind": "colour blindness",
    "diabetic": "diabetes", "asthmatic": "asthma", "epileptic": "epilepsy",
    "pregnant": "pregnancy", "claustrophobic": "claustrophobia", "disabled": "disability",
    "immunocompromised": "immunocompromised", "paralysed": "paralysis", "paralyzed": "paralysis",
    "an amputee": "amputation", "a wheelchair user": "wheelchair",
    "dyslexic": "dyslexia", "dyspraxic": "dyspraxia", "autistic": "autism",
    "anaemic": "anaemia", "anemic": "anaemia", "hypermobile": "hypermobility",
}  # fmt: skip
_STATES = "|".join(sorted((re.escape(k) for k in _STATE), key=len, reverse=True))
# conditions said with "I have ..." / "I suffer from ..."
_ILLNESS = (
    r"(?P<ill>(?:a\s+)?bad\s+(?:back|knees?|hips?|hip|ankles?|shoulders?|hearing|eyesight|heart)"
    r"|(?:a\s+)?(?:heart|lung|back|knee|hip|spine|spinal)\s+(?:condition|problem|injury|issue)s?"
    r"|arthritis|asthma|diabetes|epilepsy|vertigo|tinnitus|migraines|chronic\s+pain|copd"
    r"|multiple\s+sclerosis|ms|parkinson'?s|fibromyalgia|(?:a\s+)?disability|sleep\s+apnoea"
    r"|dyslexia|dyspraxia|autism|adhd|ibs|crohn'?s(?:\s+disease)?|an(?:a)?emia"
    r"|dementia|alzheimer'?s(?:\s+disease)?|lupus|heart\s+disease|high\s+blood\s+pressure"
    r"|hypertension|osteoporosis|cerebral\s+palsy|cystic\s+fibrosis|long\s+covid|glaucoma"
    r"|cataracts|chronic\s+fatigue(?:\s+syndrome)?|sickle\s+cell(?:\s+disease)?"
    r"|sleep\s+apnea|(?:a\s+)?(?:hearing|visual|sight|mobility)\s+(?:impairment|loss|problem)s?"
    r"|(?:a\s+)?fear\s+of\s+(?:heights|flying|water|crowds|the\s+dark|small\s+spaces))"
)
_AID = (
    r"(?P<aid>(?:a\s+|an\s+)?(?:wheelchair|power\s+chair|mobility\s+scooter|walking\s+stick|cane"
    r"|white\s+cane|walker|rollator|walking\s+frame|zimmer\s+frame|crutches|hearing\s+aids?"
    r"|cochlear\s+implants?|guide\s+dog|service\s+dog|assistance\s+dog|prosthetic\s+(?:leg|arm)"
    r"|cpap(?:\s+machine)?|oxygen\s+tank|insulin\s+pump|feeding\s+tube|catheter))"
)
_BODY = (
    r"(?P<part>knees?|back|hips?|ankles?|legs?|feet|joints|lungs|heart|eyes|ears|eyesight"
    r"|hearing|balance)"
)
_HARD = (
    r"(?:stairs|steps|hills|heights|heat|the\s+heat|cold|the\s+cold|humidity|crowds|noise"
    r"|bright\s+lights|long\s+(?:walks|flights|drives|distances|hikes|days\s+on\s+my\s+feet)"
    r"|walking|hiking|standing|stairs\s+\w+|a\s+lot\s+of\s+walking)"
)
_LIMIT = (
    r"(?P<what>(?:walk|climb|kneel|bend|lift|carry|drive|swim|run|hike|cycle|see|hear|fly"
    r"|stand\s+(?:for\s+long|up\s+for\s+long|for\s+(?:long\s+)?(?:periods|hours)|long)"
    rf"|sit\s+for\s+long|(?:do|handle|manage|take|tolerate|cope\s+with)\s+{_HARD})(?:\s+.*)?)"
)
# what says the limit is for now, or is no limit of the body at all
_NOT_A_LIMIT = (
    r"\b(?:it|this|that|them|you|him|her|wait|believe|point|why|how|what|myself|today|tonight"
    r"|tomorrow|this\s+week|right\s+now|at\s+the\s+moment|anymore\s+with)\b"
)
_ACCESS = (
    r"(?P<need>(?:(?:a|an)\s+)?(?:step[- ]free|wheelchair[- ]accessible|wheelchair|accessible"
    r"|disabled|ground[- ]floor|lift\s+access|elevator|ramp|hearing\s+loop|walk[- ]in\s+shower"
    r"|grab\s+rails?|mobility|accessibility)(?:\s+[a-z-]+){0,3})"
)


def _fact(s: str, field: str, value: str) -> Fact:
    return Fact(third_person(s), Kind.SEMANTIC, field, value, _SENSITIVE)


def _has(m: re.Match[str]) -> str:
    return "does not have" if m["neg"] else "has"


def _limit(what: str) -> str:
    """What cannot be done, without the words that say since when ("anymore")."""
    what = cut(what, _END)
    return re.sub(r"(?:\s+(?:anymore|any\s+more|these\s+days|now|lately|nowadays))+$", "", what)


def rule_condition(s: str) -> list[Fact]:
    """Motion sickness, a state of the senses or health, or a long-term condition."""
    if m := re.fullmatch(
        rf"(?:I|we)\s+(?P<neg>do\s+not\s+|no\s+longer\s+)?{ADV}(?:get|am|are|become|feel)\s+{ADV}"
        rf"(?:quite\s+|terribly\s+|a\s+bit\s+|a\s+little\s+)?{_SICK}(?:[\s,].*)?",
        s,
        _I,
    ) or re.fullmatch(
        rf"(?:I|we)\s+(?:am|are)\s+(?P<neg>not\s+|no\s+longer\s+)?{ADV}(?:quite\s+|a\s+bit\s+)?"
        rf"{_SICK}(?:[\s,].*)?",
        s,
        _I,
    ):
        key = re.sub(r"\s+", " ", m["sick"].lower())
        name = _SICKNESS.get(key) or _SICKNESS.get(key.replace(" ", ""), "motion sickness")
        return [_fact(s, f"condition:{slug(name, singular_last=False)}", _has(m))]
    if m := re.fullmatch(
        rf"I\s+am\s+(?P<neg>not\s+|no\s+longer\s+)?{ADV}(?:partly\s+|partially\s+|totally\s+"
        rf"|completely\s+|legally\s+)?(?P<state>{_STATES})(?:[\s,].*)?",
        s,
        _I,
    ):
        name = _STATE[m["state"].lower()]
        if name == "wheelchair":
            return [_fact(s, "uses:wheelchair", "does not use" if m["neg"] else "uses")]
        return [_fact(s, f"condition:{slug(name, singular_last=False)}", _has(m))]
    if m := re.fullmatch(
        rf"I\s+(?P<neg>do\s+not\s+|no\s+longer\s+)?{ADV}(?:have|have\s+got|got|suffer\s+from"
        rf"|live\s+with|was\s+diagnosed\s+with|have\s+been\s+diagnosed\s+with)\s+{_ILLNESS}"
        r"(?:[\s,].*)?",
        s,
        _I,
    ):
        ill = re.sub(r"^(?:a|an)\s+", "", m["ill"].lower())
        return [_fact(s, f"condition:{slug(ill, singular_last=False)}", _has(m))]
    return []


def rule_uses(s: str) -> list[Fact]:
    """A mobility, hearing or medical aid the speaker uses."""
    m = re.fullmatch(
        rf"I\s+(?P<neg>do\s+not\s+|no\s+longer\s+)?{ADV}(?:use|need|rely\s+on|get\s+around\s+(?:in"
        rf"|with|on)|walk\s+with|wear)\s+(?:a\s+|an\s+)?{_AID}(?:[\s,].*)?",
        s,
        _I,
    ) or re.fullmatch(
        rf"I\s+am\s+(?P<neg>not\s+|no\s+longer\s+)?{ADV}(?:in|on)\s+(?:a\s+)?{_AID}(?:[\s,].*)?",
        s,
        _I,
    )
    if not m:
        return []
    aid = re.sub(r"^(?:a|an)\s+", "", m["aid"].lower())
    return [_fact(s, f"uses:{slug(aid)}", "does not use" if m["neg"] else "uses")]


def rule_cannot(s: str) -> list[Fact]:
    """Something the body does not let the speaker do ("I can't climb stairs"); and not
    driving ("I don't drive"), which a plan must respect whatever the reason."""
    if re.fullmatch(
        rf"I\s+(?:do\s+not|never|no\s+longer)\s+{ADV}drive(?:\s+(?:anymore|any\s+more"
        r"|any\s+longer|at\s+all|myself))?",
        s,
        _I,
    ):
        return [_fact(s, "cannot:drive", "does not drive")]
    m = re.fullmatch(
        rf"I\s+(?:cannot|can\s+no\s+longer|am\s+(?:not\s+able|unable)\s+to|struggle\s+to)\s+{ADV}"
        rf"{_LIMIT}",
        s,
        _I,
    )
    if m:
        what = _limit(m["what"])
        if re.search(_NOT_A_LIMIT, what, _I):
            return []
        return [_fact(s, f"cannot:{slug(what)}", "cannot")]
    m = re.fullmatch(
        rf"my\s+{_BODY}\s+(?:cannot|can\s+no\s+longer|do\s+not|does\s+not|will\s+not)\s+{ADV}"
        r"(?:handle|take|manage|do|cope\s+with|like)\s+(?P<what>.+)",
        s,
        _I,
    )
    if m:
        what = _limit(m["what"])
        if not what or re.search(_NOT_A_LIMIT, what, _I):
            return []
        return [_fact(s, f"cannot:{slug(what)}", "cannot")]
    m = re.fullmatch(
        rf"my\s+{_BODY}\s+(?:is|are)\s+{ADV}(?:bad|weak|failing|not\s+(?:great|good|what\s+(?:it"
        r"|they)\s+used\s+to\s+be)|getting\s+worse|injured|broken|sore|a\s+problem)(?:[\s,].*)?",
        s,
        _I,
    )
    if m:
        return [_fact(s, f"condition:bad_{slug(m['part'], singular_last=False)}", "has")]
    return []


def rule_access(s: str) -> list[Fact]:
    """An access need: step-free routes, an accessible room, a lift."""
    m = re.fullmatch(
        rf"(?:I|we)\s+{ADV}(?:need|require|must\s+have|have\s+to\s+have)\s+{_ACCESS}"
        r"(?:[\s,].*)?",
        s,
        _I,
    )
    if not m:
        return []
    need = cut(re.sub(r"^(?:a|an)\s+", "", m["need"].lower()), _END)
    need = re.sub(r"\s+(?:everywhere|always|wherever|whenever|too|as\s+well)$", "", need)
    return [_fact(s, f"needs:{slug(need)}", "needs")]
