"""The rules of the offline extractor: one clause in, the facts it states out.

Each rule is a pure function of one normalised clause (contractions expanded, see
`remem.extract.offline.text`) that returns the facts it recognises, or [] when it
does not apply; `RULES` runs them in order and the first that matches wins. The
field vocabulary they produce is listed in `remem.extract.offline.extractor`. This module
holds the rules about who the speaker is (name, age, people, places) and the
values they state (dates, amounts, attributes); what they eat lives in
`remem.extract.offline.diet`, their work in `remem.extract.offline.work`,
their preferences in `remem.extract.offline.prefs` and what their body needs in
`remem.extract.offline.needs`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from remem.extract.offline.changes import (
    rule_device,
    rule_died,
    rule_instead,
    rule_left_job,
    rule_parted,
)
from remem.extract.offline.diet import DIET_MAIN, rule_allergy, rule_diet, rule_eats
from remem.extract.offline.fact import Fact
from remem.extract.offline.money import rule_money
from remem.extract.offline.needs import rule_access, rule_cannot, rule_condition, rule_uses
from remem.extract.offline.person import third_person
from remem.extract.offline.prefs import (
    rule_favorite,
    rule_judged,
    rule_likes,
    rule_prefer,
    rule_stance,
)
from remem.extract.offline.text import (
    ADV,
    MAX_VALUE,
    MONEY,
    NUM,
    TRAIL,
    cut,
    date_value,
    is_date,
    is_pronoun_thing,
    money,
    number,
    singular,
    slug,
    strip_articles,
    thing,
)
from remem.extract.offline.work import rule_work
from remem.model import Kind, Sensitivity
from remem.policy.fields import PET_KINDS

_I = re.IGNORECASE
_PERSONAL = Sensitivity.PERSONAL


# -- the rules ---------------------------------------------------------------------------

_NAME_STOP = frozenset(
    "and but by btw from not i though however so because for in at who which now please thanks "
    "lol and, is was the a an".split()
)
_NOT_NAMES = frozenset(
    "fine good back here ready sorry new just so still not okay ok great done home "
    "monday tuesday wednesday thursday friday saturday sunday".split()
)


def _name_value(text: str, *, need_capital: bool) -> str:
    tokens: list[str] = []
    for raw in text.split():
        tok = raw.strip(",.!?;:\"'()")
        if not re.fullmatch(r"[^\W\d_][\w'-]*", tok) or tok.lower() in _NAME_STOP:
            break
        if need_capital and not tok[0].isupper():
            break
        tokens.append(tok.capitalize() if tok.islower() else tok)
        if raw != tok or len(tokens) == 3:
            break
    return " ".join(tokens)


def _rule_name(s: str) -> list[Fact]:
    m = re.fullmatch(
        r"(?:my\s+(?:first\s+|full\s+|real\s+)?name\s+is|I\s+am\s+called|I\s+go\s+by"
        r"|(?:people|everyone|friends|you\s+can)\s+call\s+me|call\s+me)\s+(?P<x>.+)",
        s,
        _I,
    )
    if not m:
        return []
    name = _name_value(m["x"], need_capital="call" in s[: m.start("x")].lower())
    if not name or name.lower() in _NOT_NAMES:
        return []
    return [Fact(f"Name is {name}", Kind.SEMANTIC, "name", name, _PERSONAL)]


def greeting_name(s: str) -> list[Fact]:
    """A name given as "I'm Sam" right after a greeting ("Hi! I'm Sam")."""
    m = re.fullmatch(
        r"(?i:I\s+am|this\s+is|it\s+is)\s+(?P<x>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)(?i:\s+here)?", s
    )
    if not m or m["x"].split()[0].lower() in _NOT_NAMES:
        return []
    return [Fact(f"Name is {m['x']}", Kind.SEMANTIC, "name", m["x"], _PERSONAL)]


def _rule_age(s: str) -> list[Fact]:
    m = (
        re.fullmatch(
            rf"I\s+am\s+(?:now\s+|already\s+)?(?P<n>{NUM})(?:\s*(?:years?|yrs?)(?:\s+old"
            r"|\s+of\s+age)?|\s*y/?o)?(?:\s+(?:now|already|this\s+year))?",
            s,
            _I,
        )
        or re.fullmatch(rf"I\s+(?:just\s+|recently\s+)?turned\s+(?P<n>{NUM})(?:\s+.*)?", s, _I)
        or re.fullmatch(rf"my\s+age\s+is\s+(?P<n>{NUM})(?:\s+.*)?", s, _I)
    )
    n = number(m["n"]) if m else None
    if m is None or n is None or not 1 <= n <= 120:
        return []
    change = "turned" in s.lower()
    return [Fact(f"Is {n} years old", Kind.SEMANTIC, "age", str(n), _PERSONAL, change)]


# who someone is to the speaker, in "my <relation>" (`remem.extract.offline.named` reads
# a person introduced by name with it too)
RELATION = (
    r"(?:wife|husband|partner|spouse|boyfriend|girlfriend|fianc[e\u00e9]e?|son|daughter|kid|child"
    r"|baby|mom|mum|mother|dad|father|brother|sister|sibling|twin|grandma|grandmother|granny"
    r"|grandpa|grandfather|grandad|granddad|gran|nan|nana|grandson|granddaughter|aunt|uncle|cousin|niece|nephew|friend|roommate"
    r"|flatmate|housemate|boss|manager|colleague|co-?worker|assistant|doctor|dentist|therapist"
    r"|landlord|landlady|neighbou?r|"
    + "|".join(sorted(PET_KINDS))  # a `relation:<animal>` is a pet (`remem.policy.fields`)
    + r"|parents|kids|children|grandparents|in-laws|step-?(?:mom|mum|dad|son|daughter)"
    r"|(?:mother|father|sister|brother)-in-law)"
)
RELATION_ADJ = (
    r"(?:(?:older|younger|little|big|baby|twin|best|eldest|oldest|youngest|new|ex-?|late)\s*)?"
)
_NATIONALITY = frozenset(
    "american british english french german italian spanish portuguese brazilian canadian "
    "mexican chinese japanese korean indian irish scottish welsh dutch swedish polish russian "
    "greek turkish australian catholic jewish muslim christian hindu buddhist".split()
)


def _rule_relation(s: str) -> list[Fact]:
    rel = rf"(?P<r>{RELATION_ADJ}{RELATION})"
    need_capital = False
    m = re.match(
        rf"(?:my|our)\s+{rel}(?:'s\s+name\s+is|\s+is\s+(?:called|named)|\s+goes\s+by)\s+(?P<x>\S.*)",
        s,
        _I,
    ) or re.match(
        rf"(?:I|we)\s+(?:have|have\s+got|got)\s+(?:a|an|one)\s+{rel}\s+(?:called|named)\s+(?P<x>\S.*)",
        s,
        _I,
    )
    if m is None and (m := re.match(rf"(?:my|our)\s+{rel}\s+is\s+(?P<x>(?-i:[A-Z])\S*.*)", s, _I)):
        need_capital = True
    relation = m["r"] if m else ""
    if m is None and (
        m := re.fullmatch(
            r"I\s+am\s+(?P<how>married\s+to|engaged\s+to|dating)\s+(?P<x>\S.*)", s, _I
        )
    ):
        how = m["how"].lower()
        relation = (
            "spouse" if how.startswith("married") else "fiance" if "engaged" in how else "partner"
        )
    if m is None:
        return []
    name = _name_value(m["x"], need_capital=need_capital)
    if not name or name.lower() in _NOT_NAMES or name.split()[0].lower() in _NATIONALITY:
        return []
    field = f"relation:{slug(relation, singular_last=False)}"
    return [Fact(third_person(s), Kind.SEMANTIC, field, name, _PERSONAL)]


# a first word that says when or with whom, never where: "moved in last weekend", "moved
# in with my boyfriend"
_NOT_PLACE_STARTS = frozenset(
    "last this next with together yesterday today tomorrow tonight recently finally again "
    "soon already just".split()
)
_NOT_PLACES = frozenset(
    "apartment flat house place home room building job team role position company project plan "
    "version school office work area street neighbourhood neighborhood town city village country "
    "countryside suburb suburbs condo studio here there bed".split()
)
_MOVE = (  # "moved out to the coast", "moved back down to Leeds"
    r"(?:(?:has\s+|have\s+)?" + ADV + r"(?:moved|relocated)(?:\s+(?:back|out|down|up|over|across"
    r"|away|home))*)"
)


# where people say they live without a name: "the coast", "the suburbs"
_REGIONS = frozenset(
    "coast seaside countryside country suburbs mountains hills highlands islands lakes north "
    "south east west midlands".split()
)


# "a bigger flat in Bristol": the place is the town the home is in
_HOME_IN = (
    r"(?:a|an|the|my|our)\s+(?:[\w-]+\s+){0,2}?(?:flat|house|apartment|place|home|condo|studio"
    r"|bungalow|cottage|townhouse)\s+(?:in|near|outside(?:\s+of)?)\s+"
)


def _place(text: str) -> str | None:
    text = re.sub(r"\s+for\s+(?:my|our|his|her|their)\b.*$", "", text, flags=_I)  # "for my job"
    said = cut(re.sub(f"^{_HOME_IN}", "", text, flags=_I))
    if re.fullmatch(r"the\s+(?:[a-z]+\s+)?[a-z]+", said) and said.split()[-1] in _REGIONS:
        return said  # "the coast", "the south coast", "the countryside"
    v = strip_articles(said)
    words = v.lower().split()
    if not words or v.lower() in _NOT_PLACES or (v.islower() and words[-1] in _NOT_PLACES):
        return None
    if words[0] in _NOT_PLACE_STARTS:
        return None
    if v.islower() and len(words) <= 3:
        v = " ".join(
            w if w in ("of", "de", "da", "do", "la", "le") else w.capitalize() for w in words
        )
    return v[:MAX_VALUE]


def _rule_died(s: str) -> list[Fact]:
    return rule_died(s, RELATION_ADJ + RELATION) or rule_parted(s, RELATION_ADJ + RELATION)


def _rule_relation_home(s: str) -> list[Fact]:
    m = re.fullmatch(
        rf"(?:my|our)\s+(?P<r>{RELATION_ADJ}{RELATION})\s+{ADV}(?P<v>lives?|is\s+living|are\s+living"
        rf"|{_MOVE}|is\s+based|are\s+based)\s+(?:in|to|near)\s+(?P<x>.+)",
        s,
        _I,
    )
    place = _place(m["x"]) if m else None
    if m is None or place is None:
        return []
    change = re.search(r"moved|relocated", m["v"], _I) is not None
    field = f"home:{slug(m['r'], singular_last=False)}"
    return [Fact(third_person(s), Kind.SEMANTIC, field, place, _PERSONAL, change)]


def _rule_home(s: str) -> list[Fact]:
    m = re.fullmatch(
        rf"(?:I|we)\s+{ADV}(?P<v>live|reside|(?:am|are)\s+{ADV}(?:living|based|settled)"
        rf"|have\s+{ADV}(?:lived|been\s+living|been\s+based)|{_MOVE})"
        r"\s+(?:in|to|near|outside(?:\s+of)?)\s+(?P<x>.+)",
        s,
        _I,
    )
    place = _place(m["x"]) if m else None
    if m is not None and place is None and _when_or_with(m["x"]):
        return [Fact(third_person(s), Kind.SEMANTIC, sensitivity=_PERSONAL)]  # no place said
    if m is None or place is None:
        return []
    change = re.search(r"moved|relocated", m["v"], _I) is not None
    return [Fact(third_person(s), Kind.SEMANTIC, "home", place, _PERSONAL, change)]


def _when_or_with(said: str) -> bool:
    """Whether what follows "moved in" says when or with whom, not where ("moved in with
    my boyfriend", "moved in last weekend"): a statement still, of no home."""
    words = strip_articles(said).lower().split()
    return bool(words) and words[0] in _NOT_PLACE_STARTS


def _rule_origin(s: str) -> list[Fact]:
    m = (
        re.fullmatch(rf"(?:I|we)\s+(?:am|are)\s+{ADV}from\s+(?P<x>.+)", s, _I)
        or re.fullmatch(rf"(?:I|we)\s+{ADV}come\s+from\s+(?P<x>.+)", s, _I)
        or re.fullmatch(
            r"I\s+(?:was\s+born|grew\s+up)(?:\s+and\s+(?:raised|grew\s+up))?\s+(?P<on>in|on)\s+(?P<x>.+)",
            s,
            _I,
        )
        or re.fullmatch(
            r"my\s+(?:home\s*town|birthplace|country\s+of\s+origin)\s+is\s+(?P<x>.+)", s, _I
        )
    )
    if not m:
        return []
    if "born" in s.lower() and is_date(m["x"]):
        day = date_value(m["x"])
        return [Fact(third_person(s), Kind.SEMANTIC, "date:birthday", day, _PERSONAL)]
    place = _place(m["x"])
    if place is None:
        return []
    return [Fact(third_person(s), Kind.SEMANTIC, "origin", place, _PERSONAL)]


_COUNT_NOUN = (
    r"(?P<noun>kids?|children|child|sons?|daughters?|boys?|girls?|brothers?|sisters?|siblings?"
    r"|grandchildren|grandkids?|dogs?|cats?|pets?|twins|horses?|birds?|fish|rabbits?)"
)
_COUNT_ADJ = (
    r"(?:(?:little|young|small|grown|grown-up|adult|teenage|lovely|beautiful|wonderful|older"
    r"|younger|big|baby|twin|step-?)\s+)*"
)


def _rule_counts(s: str) -> list[Fact]:
    m = re.fullmatch(
        rf"(?:I|we)\s+{ADV}(?:have|have\s+got|got)\s+(?P<n>a|an|no|{NUM})\s+{_COUNT_ADJ}"
        rf"{_COUNT_NOUN}{TRAIL}",
        s,
        _I,
    ) or re.fullmatch(
        rf"(?:I|we)\s+do\s+not\s+have\s+(?:any\s+)?(?P<n>){_COUNT_ADJ}{_COUNT_NOUN}{TRAIL}", s, _I
    )
    n = (number(m["n"]) if m["n"] else 0) if m else None
    if m is None or n is None:
        return []
    noun = singular(m["noun"])
    if noun in ("kid", "child"):
        field, noun = "children", "child"
    else:
        field = f"count:{noun}"
    plural = {"child": "children", "fish": "fish"}.get(noun, noun + "s")
    value = f"{n} {noun if n == 1 else plural}"
    return [Fact(third_person(s), Kind.SEMANTIC, field, value, _PERSONAL)]


_SUFFIX = {
    "expire": "_expiry", "expires": "_expiry", "due": "_due", "end": "_end", "ends": "_end",
    "arrive": "_arrival", "arrives": "_arrival", "land": "_arrival", "lands": "_arrival",
    "renew": "_renewal", "renews": "_renewal", "close": "_closing", "closes": "_closing",
    "open": "_opening", "opens": "_opening",
}  # fmt: skip
_EVENT_MODIFIERS = frozenset("next upcoming first new big final current".split())


def _event_key(text: str) -> str:
    chunk = re.split(r"\s+(?:to|from|with|for|in|at|of|on|about|between)\s+", text, maxsplit=1)[0]
    words = chunk.split()
    while len(words) > 1 and words[0].lower() in _EVENT_MODIFIERS:
        words = words[1:]
    return slug(" ".join(words[-3:]), singular_last=False)


def _rule_date(s: str) -> list[Fact]:
    event = r"(?:my|our|the)\s+(?P<e>[a-z][a-z' -]{0,40}?)"
    verb = ""
    change = False
    m = re.fullmatch(
        rf"{event}\s+(?:has\s+|was\s+|got\s+|has\s+been\s+|is\s+being\s+|had\s+been\s+)?(?:moved"
        r"|rescheduled|pushed(?:\s+back)?|postponed|delayed|changed|brought\s+forward|shifted|bumped"
        r"|put\s+off)\s+(?:to|until|till|for)\s+(?P<d>.+)",
        s,
        _I,
    )
    if m:
        change = True
    else:
        m = re.fullmatch(
            rf"{event}\s+(?P<v>expires?|is\s+due|are\s+due|ends?|starts?|begins?|renews?|arrives?"
            r"|lands?|leaves?|departs?|takes\s+off|closes?|opens?)\s+(?P<d>.+)",
            s,
            _I,
        ) or re.fullmatch(
            rf"{event}\s+(?:is|are|was|will\s+be|is\s+now|is\s+still|is\s+scheduled|is\s+set"
            r"|is\s+planned|falls|has\s+been\s+scheduled)\s+(?P<d>.+)",
            s,
            _I,
        )
        if m and m.groupdict().get("v"):
            verb = m["v"].split()[-1].lower()
    if m is None or not is_date(m["d"]):
        return []
    key = _event_key(m["e"])
    if not key:
        return []
    field = f"date:{key}{_SUFFIX.get(verb, '')}"
    sens = _PERSONAL if key == "birthday" else Sensitivity.NORMAL
    return [Fact(third_person(s), Kind.SEMANTIC, field, date_value(m["d"]), sens, change)]


_QUANTITIES = frozenset(
    "budget rent salary income price cost fee limit allowance spend spending mortgage savings "
    "deposit bill pay wage rate fare target cap bid offer loan debt quote".split()
)
_UP_DOWN = (
    r"(?:has\s+|was\s+|got\s+|has\s+been\s+|is\s+being\s+)?(?:increased|went\s+up|gone\s+up|rose"
    r"|risen|grew|grown|jumped|raised|bumped(?:\s+up)?|decreased|went\s+down|gone\s+down|dropped"
    r"|fell|fallen|cut|reduced|lowered|changed|adjusted|moved|updated|set|doubled)\s+(?:to|at)"
)


def _rule_quantity(s: str) -> list[Fact]:
    subject = r"(?:(?:my|our|the)\s+)?(?P<q>[a-z][a-z -]{0,40}?)"
    amount = r"(?:now\s+|currently\s+|still\s+|only\s+|about\s+|around\s+|roughly\s+"
    amount += r"|approximately\s+|up\s+to\s+|at\s+most\s+|max(?:imum)?\s+|a\s+maximum\s+of\s+"
    amount += rf"|just\s+)*(?P<a>{MONEY})(?:\s+.*)?"
    change = False
    noun = ""
    if m := re.fullmatch(rf"{subject}\s+{_UP_DOWN}\s+{amount}", s, _I):
        change = True
    else:
        m = re.fullmatch(
            rf"{subject}\s+(?:is|are|was|will\s+be|would\s+be|comes\s+to|sits\s+at|stands\s+at)\s+"
            + amount,
            s,
            _I,
        ) or re.fullmatch(
            rf"(?:I|we)\s+{ADV}(?:have|have\s+got|got|set)\s+(?:a|an|our|my)\s+"
            rf"(?P<q>[a-z -]{{1,30}}?)\s+of\s+{amount}",
            s,
            _I,
        )
    if m is None and (
        m := re.fullmatch(
            r"(?:I|we)\s+(?:can|could|want\s+to|would\s+like\s+to|plan\s+to|are\s+planning\s+to"
            r"|am\s+planning\s+to|will|would)\s+(?:only\s+)?(?:spend|pay)\s+(?:up\s+to\s+"
            rf"|at\s+most\s+|about\s+|around\s+|max(?:imum)?\s+)?(?P<a>{MONEY})(?:\s+.*)?",
            s,
            _I,
        )
    ):
        noun = "budget"
    if m is None:
        return []
    if not noun:
        chunk = re.split(r"\s+(?:for|of|on|to|in|at|per)\s+", m["q"], maxsplit=1, flags=_I)[0]
        words = chunk.lower().split()
        noun = singular(words[-1]) if words else ""
    if noun not in _QUANTITIES and noun + "s" not in _QUANTITIES:
        return []
    value = money(m["a"])
    return [Fact(third_person(s), Kind.SEMANTIC, noun, value, Sensitivity.NORMAL, change)]


_ATTRS = {
    "email": "email", "email address": "email", "e-mail": "email", "phone": "phone",
    "phone number": "phone", "number": "phone", "mobile": "phone", "mobile number": "phone",
    "cell": "phone", "cell number": "phone", "timezone": "timezone", "time zone": "timezone",
    "language": "language", "native language": "language", "first language": "language",
    "mother tongue": "language", "preferred language": "language", "nationality": "nationality",
    "job": "occupation", "profession": "occupation", "occupation": "occupation",
    "job title": "occupation", "company": "employer", "employer": "employer",
    "address": "address", "home address": "address", "city": "home", "home": "home",
    "blood type": "blood_type", "height": "height", "weight": "weight", "shoe size": "shoe_size",
    "religion": "religion", "pronouns": "pronouns", "goal": "goal", "major": "major",
    "degree": "degree", "team": "team", "username": "username", "handle": "username",
    "car": "car", "diet": "diet", "website": "website", "star sign": "star_sign",
    "zodiac sign": "star_sign", "school": "school", "university": "school",
}  # fmt: skip
_SENSITIVE_ATTRS = frozenset("religion weight height blood_type".split())
_PERSONAL_ATTRS = frozenset("email phone address username home occupation employer".split())


def _rule_attribute(s: str) -> list[Fact]:
    m = re.fullmatch(
        r"(?:my|our)\s+(?P<a>[a-z][a-z -]{0,30}?)\s+(?:is|are|is\s+now|is\s+still|has\s+changed"
        r"\s+to|changed\s+to)\s+(?P<y>.+)",
        s,
        _I,
    )
    field = _ATTRS.get(" ".join(m["a"].lower().split())) if m else None
    if m is None or field is None:
        return []
    raw = m["y"].strip()
    if field == "home":
        raw = re.sub(r"^(?:in|at|near)\s+", "", raw, flags=_I)
        value = _place(raw)
    elif field == "phone":
        phone = re.match(r"\+?[\d(][\d\s().-]{4,}\d", raw)
        value = phone.group(0) if phone else None
    elif field in ("email", "website", "username"):
        value = raw.split()[0].strip(".,;") if raw.split() else None
        value = value.lower() if value else None
    elif field in ("occupation", "diet"):
        value = thing(raw)
        value = DIET_MAIN.get(value, value) if field == "diet" else value
    else:
        value = strip_articles(cut(raw))
    if not value or is_pronoun_thing(value) or value.lower() in ("secret", "private", "the same"):
        return []
    sens = (
        Sensitivity.SENSITIVE
        if field in _SENSITIVE_ATTRS
        else _PERSONAL
        if field in _PERSONAL_ATTRS
        else Sensitivity.NORMAL
    )
    change = re.search(r"changed", s, _I) is not None
    return [Fact(third_person(s), Kind.SEMANTIC, field, value[:MAX_VALUE], sens, change)]


RULES: tuple[Callable[[str], list[Fact]], ...] = (
    _rule_name,
    _rule_age,
    rule_diet,
    rule_eats,
    rule_allergy,
    rule_condition,
    rule_uses,
    rule_cannot,
    rule_access,
    rule_money,
    _rule_relation,
    _rule_died,
    _rule_relation_home,
    _rule_home,
    _rule_origin,
    rule_left_job,
    rule_work,
    rule_device,
    _rule_counts,
    rule_favorite,
    rule_prefer,
    rule_likes,
    rule_stance,
    rule_judged,
    _rule_date,
    _rule_quantity,
    _rule_attribute,
    rule_instead,
)


def rule_facts(text: str) -> list[Fact]:
    """What the rules (not the plain-fact fallback) find in one clause."""
    for rule in RULES:
        if found := rule(text):
            return found
    return []
