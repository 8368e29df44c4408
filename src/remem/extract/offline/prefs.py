"""Preference rules of the offline extractor: likes, favourites, preferences, stances.

Each rule is a pure function of one normalised clause, as in
`remem.extract.offline.rules` (which runs them in its `RULES`). Likes and
preferences have fields (`likes:<x>`, `preference:<topic>`, `favorite:<x>`);
a stance ("I avoid ...", "I can't stand ...", "I have a strong aversion to
...", "... is a must for me") is a preference record without a field, its text
the whole statement with its qualifiers.
"""

from __future__ import annotations

import re

from remem.extract.offline.fact import Fact
from remem.extract.offline.person import third_person
from remem.extract.offline.text import (
    ADV,
    MAX_KEY,
    SECOND_STANCE,
    acts_on_pronoun,
    cut,
    is_pronoun_thing,
    is_reaction,
    said_thing,
    singular,
    slug,
    strip_articles,
    thing,
)
from remem.model import Kind

_I = re.IGNORECASE


_FAV = r"(?:favou?rite|fave|fav)"


def rule_favorite(s: str) -> list[Fact]:
    m = re.fullmatch(
        rf"(?:my|our)\s+(?:all[- ]time\s+|absolute\s+|current\s+|new\s+|very\s+)?{_FAV}\s+"
        r"(?P<x>[a-z][a-z -]{0,40}?)\s+(?:is|are|has\s+to\s+be|would\s+be|is\s+probably"
        r"|is\s+definitely|is\s+now|is\s+still)\s+(?P<y>.+)",
        s,
        _I,
    ) or re.fullmatch(
        r"(?P<y>.{1,60}?)\s+(?:is|are)\s+(?:still\s+|now\s+|definitely\s+|probably\s+)?(?:my|our)\s+"
        rf"(?:all[- ]time\s+|absolute\s+|new\s+)?{_FAV}(?:\s+(?P<x>[a-z][a-z -]{{0,40}}))?",
        s,
        _I,
    )
    if not m:
        return []
    liked = said_thing(m["y"], at_start=m.start("y") == 0)
    if not liked or is_pronoun_thing(liked) or re.search(r"\b(?:I|my|we)\b", m["y"]):
        return []
    if not m["x"]:
        return [Fact(third_person(s), Kind.PREFERENCE, f"likes:{slug(liked)}", "likes")]
    field = f"favorite:{slug(m['x'])}"
    return [Fact(third_person(s), Kind.PREFERENCE, field, liked)]


_TOPICS = {
    "aisle": "seat", "window": "seat", "seat": "seat", "tea": "drink", "coffee": "drink",
    "email": "contact", "e-mail": "contact", "phone": "contact", "call": "contact",
    "text": "contact", "sms": "contact", "slack": "contact", "whatsapp": "contact",
    "morning": "time_of_day", "afternoon": "time_of_day", "evening": "time_of_day",
    "night": "time_of_day", "metric": "units", "imperial": "units", "celsius": "temperature_unit",
    "fahrenheit": "temperature_unit", "train": "transport", "plane": "transport",
    "flying": "transport", "fly": "transport", "driving": "transport", "drive": "transport",
    "car": "transport", "bus": "transport", "economy": "cabin", "business": "cabin",
    "python": "programming_language", "javascript": "programming_language",
    "typescript": "programming_language", "rust": "programming_language",
    "java": "programming_language", "tabs": "indentation", "tab": "indentation",
    "spaces": "indentation", "space": "indentation", "dark": "theme", "light": "theme",
    "hotel": "lodging", "airbnb": "lodging", "hostel": "lodging",
}  # fmt: skip
_NOT_PREFERENCES = (
    r"(?:not\s+)?(?:to\s+)?(?:say|talk|discuss|answer|share|comment|get\s+into|go\s+into|think"
    r"|know|wait|keep\s+it\s+private|not)\b"
)


def _topic(value: str) -> str:
    """The thing a preference is about: "aisle seats" and "the window" are both "seat"."""
    chunk = re.split(
        r"\s+(?:by|with|in|on|at|for|from|of|over|than|to|via|during)\s+", value, maxsplit=1
    )[0]
    head = [singular(w) for w in re.findall(r"[a-z0-9][a-z0-9+#-]*", chunk.lower())]
    if head and head[-1] in _TOPICS:
        return _TOPICS[head[-1]]
    for w in re.findall(r"[a-z0-9][a-z0-9+#-]*", value.lower()):
        if w in _TOPICS or singular(w) in _TOPICS:
            return _TOPICS.get(w) or _TOPICS[singular(w)]
    return slug(chunk) or slug(value)


def rule_prefer(s: str) -> list[Fact]:
    topic = ""
    m = re.fullmatch(
        rf"(?:I|we)\s+{ADV}(?P<neg>do\s+not\s+|no\s+longer\s+)?{ADV}prefer\s+(?P<x>.+)", s, _I
    ) or re.fullmatch(rf"(?:I|we)\s+would\s+{ADV}(?:rather|prefer)\s+(?P<x>.+)", s, _I)
    if m is None and (
        m := re.fullmatch(
            r"(?:my|our)\s+(?P<t>[a-z][a-z ]{0,30}?)\s+preference\s+is\s+(?:for\s+)?(?P<x>.+)",
            s,
            _I,
        )
    ):
        topic = slug(m["t"])
    if m is None or re.match(_NOT_PREFERENCES, m["x"], _I) or _AVOIDING.match(m["x"]):
        return []
    main = m["x"].strip()
    allow_to = not re.match(r"to\s", main, _I)
    said = _preferred(main, allow_to)
    main = said_thing(said)
    if not main or is_pronoun_thing(main) or is_pronoun_thing(strip_articles(said)):
        return []
    if not topic and _KIND_OF.search(said):  # "cars with manual transmissions"
        topic, kind = _like_key(said), strip_articles(cut(said, _KEY_END)).lower()
        main = kind if len(kind) > len(main) else main  # `cut` ends a value at "with"
    neg = bool(m.groupdict().get("neg"))
    value = f"not {main}" if neg else main
    field = f"preference:{topic or _topic(main)}"
    return [Fact(third_person(s), Kind.PREFERENCE, field, value)]


# A preferred thing that a clause makes a kind of that thing: "cars with manual
# transmissions", "hotels that allow pets". It is kept under the kind (its own key), not
# under the choice its head word names (`_TOPICS`: "car" is a choice of transport), so
# that two kinds of car, said a month apart, are two preferences and not a change of mind.
_KIND_OF = re.compile(r"\s(?:with|without|that|which|whose)\s", _I)
# "I prefer to avoid X" is a stance (`rule_stance`): what someone avoids is not one choice
# among others that a later choice replaces.
_AVOIDING = re.compile(r"to\s+(?:avoid|steer\s+clear\s+of|stay\s+away\s+from|shun)\b", _I)


# What a preference is set against: "tea over coffee", "tea rather than coffee", "tea,
# not coffee"; a "not" after an auxiliary negates a clause of the thing itself
# ("pets that do not have scales") and sets nothing against it.
_ALTERNATIVE = r"\s+(?:over|rather\s+than|instead\s+of|than|not|and\s+not)\s+"
_NEGATED = re.compile(
    r"\b(?:do|does|did|is|are|was|were|am|be|been|have|has|had|can|could|will|would|should"
    r"|may|might|must)$",
    _I,
)


def _preferred(main: str, allow_to: bool) -> str:
    """The preferred thing of "I prefer X over Y": X, up to what it is set against."""
    pattern = _ALTERNATIVE + (r"|\s+to\s+" if allow_to else "")
    for m in re.finditer(pattern, main, _I):
        if m.group().strip().lower() == "not" and _NEGATED.search(main[: m.start()]):
            continue
        return main[: m.start()]
    return main


_LIKE_VERB = (
    rf"(?P<verb>(?:do\s+not\s+|no\s+longer\s+|never\s+)?{ADV}(?:like|love|enjoy|adore)"
    r"|do\s+not\s+care\s+for|hate|dislike|detest|loathe|despise|cannot\s+(?:stand|bear|stomach"
    rf"|handle)|am\s+{ADV}(?:not\s+|no\s+longer\s+)?{ADV}(?:(?:a\s+)?(?:big\s+|huge\s+|massive\s+)?"
    r"fan\s+of|into|obsessed\s+with|crazy\s+about|passionate\s+about|fond\s+of)"
    rf"|have\s+{ADV}(?:liked|loved|enjoyed|hated)|never\s+(?:liked|enjoyed)"
    r"|stopped\s+(?:liking|enjoying)|(?:have\s+)?started\s+(?:liking|enjoying|to\s+like|to\s+enjoy))"
)
_NEGATIVE_LIKE = (
    r"\b(?:not|no\s+longer|never|hate|hated|dislike|detest|loathe|despise|stopped)\b|cannot"
)
_NOT_LIKED = r"(?:hear|know|see|think|help|ask|talk|chat|say|learn\s+more|try\s+that)\b"


def rule_likes(s: str) -> list[Fact]:
    m = re.fullmatch(rf"(?:I|we)\s+{ADV}{_LIKE_VERB}\s+(?P<x>.+)", s, _I)
    if not m or re.match(r"(?:to\s+)?" + _NOT_LIKED, m["x"], _I):
        return []
    liked = thing(m["x"])
    if not liked or is_pronoun_thing(liked) or not re.search(r"[a-z0-9]", liked):
        return []
    if is_reaction(liked):  # "I love the idea": of what the listener said
        return []
    neg = re.search(_NEGATIVE_LIKE, m["verb"], _I) is not None
    value = "dislikes" if neg else "likes"
    return [Fact(third_person(s), Kind.PREFERENCE, f"likes:{_like_key(m['x'])}", value)]


_KEY_END = (
    r"\s*[,;:(]|\s+-\s|\s+"
    + SECOND_STANCE
    + r"|\s+(?:but|because|since|so|as|when|while|although|though|which|who"
    r"|where|whereas|especially|like|such\s+as|due\s+to|if|unless|now|anymore|any\s+more"
    r"|these\s+days|nowadays|too|as\s+well|either|instead|please|thanks|and\s+(?:I|we|prefer"
    r"|would|want|am|are|have|it|they|that))\b"
)


KEY_WORDS = 10  # words of the liked thing a key keeps
# Words a key does not end on: "games that have a lot of" keys as "games that have a lot".
_TRAILING = frozenset(
    "a an the of to in on at for with by from and or but that which who whose being be is are "
    "was were do does did have has had not no any some very so as than".split()
)


def _like_key(value: str) -> str:
    """The field key of a like: the thing with its qualifiers ("games with pixel art")."""
    v = strip_articles(cut(value, _KEY_END))
    v = re.sub(r"^(?:any|all)\s+|\s+(?:very\s+much|so\s+much|a\s+lot|at\s+all)$", "", v, flags=_I)
    # "to just take a look at ..." keys as "to take a look at ..."
    adverbs = r"(?:just|really|simply|also|always|usually|often|sometimes)\s+"
    v = re.sub(rf"^to\s+(?:{adverbs})+", "to ", v)
    v = re.sub(r"\b(?:my|our|their)\s+", "", v, flags=_I)  # "my sneaker collection" too
    words = v.split()[:KEY_WORDS]
    while len(words) > 1 and (
        words[-1].lower() in _TRAILING
        or len("_".join(re.findall(r"[a-z0-9]+", " ".join(words).lower()))) > MAX_KEY
    ):
        words.pop()  # ends on a word of the thing, and whole within MAX_KEY
    return slug(" ".join(words)) or slug(thing(value))


_STANCE_VERB = (
    r"(?:(?:try|tend|need|have|prefer|want|choose|like)\s+to\s+|must\s+|always\s+|strictly\s+)?"
    r"(?:avoid|refuse|steer\s+clear\s+of|stay\s+away\s+from|shun|reject|stick\s+to|stick\s+with"
    r"|swear\s+by|insist\s+on|opt\s+for|go\s+for|lean\s+towards?|gravitate\s+towards?|value"
    r"|prioriti[sz]e|favou?r|fear|dread|despise|detest|loathe|hate|dislike|love|enjoy|adore|like"
    r"|prefer|appreciate|believe\s+in|seek\s+out)\b"
)
_HABIT = (  # what someone does is a stance only with "only", "never", "do not" ...
    r"(?:wear|use|eat|drink|watch|play|read|own|buy|ride|drive|travel|fly|listen\s+to|stay\s+in"
    r"|shop|choose|pick|want|need|require|consider|book|go|do|support|purchase|get|take|allow"
    r"|let|keep|have|tolerate|accept|trust|feed)\b"
)
_STANCE = (
    rf"(?:I|we)\s+{ADV}(?:(?:would\s+)?prefer\s+not(?:\s+to)?|would\s+rather\s+not"
    r"|(?:do\s+not|never|no\s+longer|only|always|exclusively|mostly|mainly|usually|generally"
    r"|strictly|cannot|can\s+not|could\s+never|will\s+only)\s+"
    + ADV
    + f"(?:{_STANCE_VERB}|{_HABIT})"
    + r"|cannot\s+(?:stand|bear|stomach|handle|tolerate|abide|deal\s+with|do)"
    r"|"
    + _STANCE_VERB
    + rf"|(?:am|are)\s+{ADV}(?:not\s+)?{ADV}(?:(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of"
    r"|(?:very\s+|not\s+|really\s+)*(?:interested\s+in|(?:un|dis)interested\s+in|fascinated\s+by"
    r"|into|comfortable\s+with|opposed\s+to"
    r"|averse\s+to|against|sensitive\s+to|afraid\s+of|scared\s+of|terrified\s+of|intolerant"
    r"|uncomfortable\s+with|wary\s+of|keen\s+on|passionate\s+about|committed\s+to|particular"
    r"\s+about|picky\s+about|allergic|prone\s+to|wary|vegan|vegetarian))"
    r"|have\s+(?:a|an|no|zero|little)\s+(?:[\w-]+\s+){0,2}?(?:aversion|phobia|fear|dislike"
    r"|preference|interest|intolerance|sensitivity|allergy|love|passion|weakness|soft\s+spot"
    r"|distaste|taste|need|objection|bias)\s+(?:to|of|for|in|about|towards?|against))"
    r"\s+(?P<x>.+)"
)
_MUST = (
    r"(?P<x>.{3,80}?)\s+(?:is|are)\s+(?:an?\s+)?(?:absolute\s+)?(?:must|essential"
    r"|non-negotiable|deal-?breaker|necessity|requirement|priority|top\s+priority|important"
    r"|very\s+important|crucial)(?:\s+(?:for|to)\s+(?:me|us))(?P<rest>.*)"
)


def rule_stance(s: str) -> list[Fact]:
    """A stated stance with no field: "I avoid crowded beaches", "X is a must for me"."""
    if m := re.fullmatch(_MUST, s, _I):
        if re.search(r"\b(?:I|you|your)\b", m["x"]) or is_pronoun_thing(strip_articles(m["x"])):
            return []
        return [Fact(third_person(s), Kind.PREFERENCE)]
    m = re.fullmatch(_STANCE, s, _I)
    if not m:
        return []
    obj = strip_articles(re.sub(r"^(?:to\s+)?", "", m["x"].strip(), flags=_I))
    bare = thing(obj)  # "this one too" is "this one"
    short = len(bare.split()) <= 2 or bare.split()[-2] == "of"  # "it", "the smell of it"
    # "seeing her smile": an act on someone named only by a pronoun is as lone as "it"
    lone = (short and is_pronoun_thing(bare or obj)) or acts_on_pronoun(bare or obj)
    lone = lone or is_reaction(bare or obj)
    if not re.search(r"[a-z]{3}", obj, _I) or lone or re.match(_NOT_PREFERENCES, obj, _I):
        return []
    return [Fact(third_person(s), Kind.PREFERENCE)]


# How a thing is for them: "I find turn-based combat too slow and boring", "I find it hard to
# stay focused with textbooks". A judgement of a kind of thing is a standing preference.
_JUDGEMENT = re.compile(
    r"\b(?:boring|tedious|dull|ineffective|useless|pointless|annoying|irritating|frustrating"
    r"|stressful|distressing|overwhelming|uncomfortable|disorienting|difficult|hard|exhausting"
    r"|tiring|slow|unpleasant|off-putting|unbearable|relaxing|calming|soothing|helpful|effective"
    r"|enjoyable|fun|rewarding|motivating)\b",
    _I,
)
_FIND = re.compile(rf"(?:I|we)\s+{ADV}find\s+", _I)
_DEGREE = frozenset("too very really so quite extremely rather incredibly pretty far bit a".split())


def rule_judged(s: str) -> list[Fact]:
    """A judgement of a kind of thing: "I find flashcards ineffective"; not of something
    only a pronoun names ("I find it boring": what the listener just said).

    Read in one pass: the first judgement word after "I find", the words before it
    less the degree words that end them ("too slow")."""
    m = _FIND.match(s)
    judged = _JUDGEMENT.search(s, m.end()) if m else None
    if m is None or judged is None:
        return []
    words = s[m.end() : judged.start()].split()
    while words and words[-1].lower() in _DEGREE:
        words.pop()
    if not words:
        return []
    rest = s[judged.end() :]
    if is_pronoun_thing(strip_articles(" ".join(words))) and not re.search(r"[a-z]{3}", rest, _I):
        return []
    return [Fact(third_person(s), Kind.PREFERENCE)]
