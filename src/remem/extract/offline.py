"""The offline extractor: deterministic rules that turn one user turn into candidates.

No model, no I/O, no clock: the same event and context always yield the same
candidates, so the extractor runs anywhere, re-runs safely and is tested line by
line. Only user turns are read; each sentence (and each first-person clause of
it) is matched against a few dozen regular-expression rules, and a first-person
statement with enough content that no rule claims is kept as a plain fact.

Field vocabulary (the key consolidation uses: a later statement with the same
field and a different value supersedes an earlier one). `<x>` is a slug:
lower case, words joined by "_", last word singular.

    name, age, home, origin, address    "my name is Ana", "I'm 34", "I live in / moved to
                                        Lisbon", "I'm from Brazil", "my address is ..."
    diet                                vegetarian | vegan | pescatarian | flexitarian |
                                        eats meat | no meat | not <diet>
    diet:<x>                            keto, halal, gluten-free ... ("diet:gluten_free")
    eats:<food>                         "I don't eat pork" -> eats | does not eat
    allergy:<x>                         allergic | not allergic (one per allergen)
    occupation, employer                "I'm a nurse", "I work as / at ..."
    children, count:<x>                 "I have two kids" -> "2 children"; "count:cat"
    relation:<x>                        name of a person or pet: "relation:wife" = "Ana"
    home:<x>                            where they live: "my sister lives in Berlin"
    likes:<x>                           likes | dislikes ("I love pizza" / "I hate pizza")
    preference:<topic>                  "I prefer aisle seats" -> preference:seat; topics
                                        fold synonyms (seat, drink, contact, transport ...)
    favorite:<x>                        "my favourite colour is blue" -> favorite:color
    date:<x>[_expiry|_due|_end|...]     "my flight is on March 3" -> date:flight;
                                        "my passport expires in 2031" -> date:passport_expiry
    budget, rent, salary, price ...     money amounts, the head noun only
    email, phone, timezone, language,   "my <attribute> is <value>" for a fixed list
    nationality, ...

Qualifiers are deliberately left out of fields and kept in the text: "our budget
for the trip is $500" and "our budget increased to $750" are both `budget`, and
"my flight to Paris is on March 3" and "my flight got moved to March 5" are both
`date:flight`, so an update made without repeating the qualifier still lands on
the original. The price: two budgets (or two flights) of one user share a field.

Values are normalised so that equal things compare equal: "I love pizza" and "I
like pizza" both give likes:pizza = "likes"; money becomes "$500"; counts become
digits; negations give a different value on the same field ("not vegetarian").

What it does NOT catch (use an LLM strategy for these):

- anything said by the assistant, a tool or the system, including facts the
  assistant restates or learns ("Booked your flight for March 3");
- facts about other people in the third person ("Sam is vegetarian") unless the
  user says "remember that ..."; facts about the user in the third person;
- implicit preferences and habits: "can you find me a vegetarian place again?",
  booking the aisle seat every time, a tone of voice;
- coreference: pronouns and ellipsis are not resolved ("I love it", "she moved
  to Berlin", "the second one", "same as last time"); across turns only the
  bare yes / no answer to the assistant's immediately preceding yes/no question
  ("Are you still vegetarian?" - "not anymore") is resolved, and only when the
  resulting statement matches a rule with a field; answers to choice questions
  ("window or aisle?" - "aisle") are not;
- relative dates stay relative: "my flight is tomorrow" stores "tomorrow", not a
  calendar date; durations and recurring events are not understood;
- hedged, hypothetical, past or future statements: "I think I'm allergic to ...",
  "if I move to Porto", "I used to live in Lisbon", "I'm moving to Porto next
  month", "I might go vegan"; negated facts without a replacement ("I don't live
  in Lisbon anymore") give no home at all;
- requests, tasks and instructions: "I need a hotel in Paris", "remember to
  call mom", "always answer in French" (procedural memory);
- feelings and small talk about the moment ("I'm so excited about the trip");
- lists are one thing where splitting is unsafe: "I love pizza and pasta" is
  likes:pizza_and_pasta (allergies are split, "peanuts and shellfish" is two);
- nationality, languages spoken, religion, health beyond allergies and diet,
  unless said as "my nationality is ...";
- a name given as "I'm Sam" only after a greeting ("Hi, I'm Sam"); lower-case
  names in that form; text that is not English;
- secrets are not filtered here: policy refuses them on every write path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from remem.model import Authority, Candidate, Event, Kind, Role, Sensitivity, Source

__all__ = ["EXTRACTOR_VERSION", "STRATEGY", "extract_offline"]

EXTRACTOR_VERSION = "offline-rules/1"
STRATEGY = "offline"

_MAX_TEXT = 500
_MAX_VALUE = 200
_I = re.IGNORECASE
_PERSONAL = Sensitivity.PERSONAL


@dataclass(frozen=True, slots=True)
class _Fact:
    text: str
    kind: Kind
    field: str | None = None
    value: str | None = None
    sensitivity: Sensitivity = Sensitivity.NORMAL
    change: bool = False  # the statement itself reports a change ("moved", "increased")


@dataclass(frozen=True, slots=True)
class _Clause:
    text: str
    explicit: bool
    correction: bool
    greeted: bool


def extract_offline(event: Event, context: Sequence[Event] = ()) -> list[Candidate]:
    """Propose candidates from one event with deterministic rules; [] for non-user turns.

    `context` are earlier events of the same session; they are only used to read a
    bare "yes" / "no" / "not anymore" as the answer to the assistant's question.
    """
    if event.role != Role.USER:
        return []
    found: list[tuple[_Fact, bool, bool]] = []
    for clause in _clauses(event.text):
        for fact in _facts(clause.text, greeted=clause.greeted, explicit=clause.explicit):
            changed = fact.field is not None and (
                fact.change or re.search(_CHANGE_WORDS, clause.text, _I) is not None
            )
            found.append((fact, clause.explicit, clause.correction or changed))
    if not found:
        found = _answer_facts(event, context)
    source = Source(
        type="event", event_ids=(event.id,), strategy=STRATEGY, extractor=EXTRACTOR_VERSION
    )
    out: list[Candidate] = []
    seen: set[tuple[str, str | None, str | None]] = set()
    for fact, explicit, correction in found:
        key = (fact.text.casefold(), fact.field, fact.value)
        if key in seen:
            continue
        seen.add(key)
        out.append(
            Candidate(
                text=fact.text,
                kind=fact.kind,
                source=source,
                observed_at=event.time,
                field=fact.field,
                value=fact.value,
                authority=Authority.CONFIRMED if explicit else Authority.INFERRED,
                sensitivity=fact.sensitivity,
                is_correction=correction,
            )
        )
    return out


# -- sentences and clauses ---------------------------------------------------------------

_QUOTES = {ord("\u2019"): "'", ord("\u2018"): "'", ord("\u201c"): '"', ord("\u201d"): '"'}
_NO_APOSTROPHE = {
    "im": "I'm", "ive": "I've", "dont": "don't", "doesnt": "doesn't", "didnt": "didn't",
    "cant": "can't", "isnt": "isn't", "wasnt": "wasn't", "arent": "aren't",
    "havent": "haven't", "wont": "won't", "youre": "you're", "thats": "that's",
}  # fmt: skip
_EXPANSIONS = (
    (r"\bI'm\b", "I am"), (r"\bI've\b", "I have"), (r"\bI'll\b", "I will"),
    (r"\bI'd(?=\s+(?:been|had|gone|never)\b)", "I had"), (r"\bI'd\b", "I would"),
    (r"\bwe're\b", "we are"), (r"\bwe've\b", "we have"), (r"\bwe'll\b", "we will"),
    (r"\bwe'd\b", "we would"), (r"\byou're\b", "you are"), (r"\bcan't\b", "cannot"),
    (r"\bwon't\b", "will not"), (r"\b(\w+)n't\b", r"\1 not"),
    (r"\b(it|that|there|what|where|who|name)'s\b", r"\1 is"),
)  # fmt: skip


def _normalise(text: str) -> str:
    """Straight quotes, apostrophes restored, contractions expanded ("I'm" -> "I am")."""
    t = text.translate(_QUOTES)
    t = re.sub(
        r"\b(?:" + "|".join(_NO_APOSTROPHE) + r")\b",
        lambda m: _NO_APOSTROPHE[m.group(0).lower()],
        t,
        flags=_I,
    )
    t = re.sub(r"(?<![\w.'])i(?=\s|')", "I", t)
    for pattern, repl in _EXPANSIONS:
        t = re.sub(pattern, repl, t, flags=_I)
    return t


def _sentences(text: str) -> list[str]:
    """Split text into sentences, keeping each one's final punctuation."""
    out: list[str] = []
    for line in _normalise(text).splitlines():
        line = re.sub(r"^(?:[-*\u2022>]+|\d+[.)])\s+", "", " ".join(line.split()))
        buf = ""
        for part in re.split(r"(?<=[.!?\u2026])\s+", line):
            buf = f"{buf} {part}" if buf else part
            if re.search(r"\b(?:dr|mr|mrs|ms|st|prof|e\.g|i\.e|vs|approx|etc)\.$", buf, _I):
                continue
            out.append(buf)
            buf = ""
        if buf:
            out.append(buf)
    return [s for s in out if s]


_SEP = r"(?:\s*[,:;.!-]+\s*|\s+)"
_GREETING = (
    r"(?:hi|hello|hey|hiya|heya|howdy|greetings|good\s+(?:morning|afternoon|evening))"
    r"(?:\s+there)?(?:\s*[,:;.!-]+\s*|\s+|$)"
)
_CORRECTION = (
    r"(?:actually|correction|sorry|wait|oops|whoops|my\s+bad|scratch\s+that|I\s+meant\s+to\s+say"
    r"|I\s+mean|to\s+be\s+clear|let\s+me\s+correct\s+(?:that|myself)|update|no|nope|not\s+quite"
    r"|that\s+is\s+(?:wrong|not\s+right|not\s+correct|incorrect)|now|these\s+days|nowadays)"
    r"(?:\s*[,:;.!-]+\s*|\s+(?=(?:I|my|we|our|it|that|the)\b))(?=\S)"
)
_EXPLICIT = (
    r"(?:(?:can|could|would|will)\s+you\s+)?(?:please\s+)?(?:remember|do\s+not\s+forget|never\s+forget"
    r"|note|make\s+a\s+note|take\s+note|keep\s+in\s+mind|bear\s+in\s+mind|for\s+(?:future\s+)?reference"
    r"|save\s+this|store\s+this|memori[sz]e)(?:\s+(?:that|this|of\s+this|of\s+that))?(?:\s+please)?"
    + _SEP
    + r"(?=\S)(?!(?:to|when|where|what|who|whom|how|why|if|whether|which|me|us|the\s+time)\b)"
)
_FILLER = (
    r"(?:oh|ah|well|so|also|and|but|plus|btw|by\s+the\s+way|fyi|just\s+so\s+you\s+know|ok(?:ay)?"
    r"|um+|uh+|hmm+|yeah|yes|yep|sure|honestly|basically|anyway|anyways|alright|right|ha(?:ha)+"
    r"|lol|one\s+more\s+thing|quick\s+update|heads\s+up|just\s+fyi|for\s+what\s+it\s+is\s+worth)"
    + _SEP
    + r"(?=\S)"
)
_QUESTION_START = (
    r"(?:what|where|when|who|whom|whose|why|how|which|do|does|did|is|are|am|was|were|can|could"
    r"|would|should|will|shall|may|might|have|has|had|any)\b"
)
_CLAUSE_SPLIT = (
    r"\s*;\s*|\s*,?\s+(?:and|but|although|though|while|whereas|plus)\s+(?=(?:I|we|my|our)\s)"
    r"|\s*,\s+(?=(?:I|we|my|our)\s)"
)
_CHANGE_WORDS = (
    r"\b(?:no\s+longer|any\s*more|any\s+longer|instead|now|again|these\s+days|nowadays)\b"
)


def _strip_end(sentence: str) -> tuple[str, bool]:
    """The sentence without trailing punctuation and politeness; whether it asked a question."""
    question = re.search(r"\?[^\w]*$", sentence) is not None
    body = re.sub(r"[^\w$\u20ac\u00a3\u00a5%)\"']+$", "", sentence)
    tail = r"(?:[\s,]+(?:please|thanks|thank\s+you|thx|for\s+me|for\s+next\s+time|for\s+later"
    tail += r"|for\s+the\s+future|for\s+future\s+reference|ok|okay|lol|haha))+$"
    return re.sub(tail, "", body, flags=_I).strip(" ,"), question


def _clauses(text: str) -> list[_Clause]:
    """Sentences cut into first-person clauses, with their leading markers read off."""
    out: list[_Clause] = []
    greeted = False
    for sentence in _sentences(text):
        body, question = _strip_end(sentence)
        explicit = correction = False
        while True:
            before = body
            if m := re.match(_GREETING, body, _I):
                greeted, body = True, body[m.end() :]
            if m := re.match(_EXPLICIT, body, _I):
                explicit, question, body = True, False, body[m.end() :]
            if m := re.match(_CORRECTION, body, _I):
                correction, body = True, body[m.end() :]
            if m := re.match(_FILLER, body, _I):
                body = body[m.end() :]
            if body == before:
                break
        if not body or question or re.match(_QUESTION_START, body, _I):
            continue
        for part in re.split(_CLAUSE_SPLIT, body, flags=_I):
            part = re.sub(r"^(?:and|but|so|also|plus)\s+", "", part.strip(" ,"), flags=_I)
            if part:
                out.append(_Clause(part, explicit, correction, greeted))
        greeted = False
    return out


# -- matching a clause -------------------------------------------------------------------

_CHATTER = (
    r"(?:ok(?:ay)?|k+|sure(?:\s+thing)?|yes|yeah|yep|yup|no|nope|nah|thanks?(?:\s+(?:you|so\s+much"
    r"|a\s+lot|again))*|thank\s+you(?:\s+(?:so|very)\s+much)?|thx|ty|cheers|lol|lmao|rofl|ha(?:ha)+"
    r"|he(?:he)+|h+m+|u+m+|u+h+|a+h+|o+h+|wow|cool|nice|great|awesome|perfect|fine|alright"
    r"|all\s+right|got\s+it|I\s+see|makes\s+sense|sounds\s+(?:good|great|fine|perfect|like\s+a\s+plan)"
    r"|good(?:\s+idea)?|let\s+me\s+(?:think|see|check)(?:\s+about\s+it)?|hi|hello|hey|bye|goodbye"
    r"|see\s+you|good\s+(?:morning|night|evening|afternoon)|never\s*mind|whatever|exactly|right"
    r"|true|agreed|I\s+agree|me\s+too|same|please|go\s+ahead|go\s+on|continue|done|that\s+works"
    r"|works\s+for\s+me|no\s+problem|no\s+worries|np|of\s+course|interesting|really|ugh|oops|wait"
    r"|hold\s+on|one\s+(?:sec|second|moment)|just\s+a\s+(?:sec|second|moment)|I\s+do\s+not\s+know"
    r"|not\s+sure|maybe|I\s+guess|I\s+think\s+so|you\s+too|(?:I\s+)?(?:love|like)\s+(?:it|that)"
    r"|that\s+is\s+(?:great|good|nice|cool|fine|perfect|awesome|interesting|helpful))"
)


def _facts(text: str, *, greeted: bool = False, explicit: bool = False) -> list[_Fact]:
    """What one clause states: the first rule that matches, else maybe a plain fact."""
    if re.fullmatch(_CHATTER, re.sub(r"[^\w\s']", "", text).strip(), _I):
        return []
    if greeted and (named := _greeting_name(text)):
        return named
    for rule in _RULES:
        if found := rule(text):
            return found
    return _generic(text, explicit)


def _rule_facts(text: str) -> list[_Fact]:
    """What the rules (not the plain-fact fallback) find in one clause."""
    for rule in _RULES:
        if found := rule(text):
            return found
    return []


# -- shared pieces -----------------------------------------------------------------------

_ADV = (
    r"(?:(?:really|also|just|now|currently|still|actually|recently|finally|definitely"
    r"|absolutely|totally|usually|generally|always|truly|honestly|so|very|much|mostly|already"
    r"|originally|officially|genuinely|seriously|kind\s+of|sort\s+of|pretty\s+much)\s+)*"
)
_TRAIL = (
    r"(?P<rest>(?:\s+(?:now|again|anymore|any\s+more|any\s+longer|these\s+days|nowadays|too"
    r"|as\s+well|either|though|actually|at\s+home|recently|lately|last\s+\w+|\w+\s+ago|in\s+\d{4}"
    r"|for\s+\w+(?:\s+\w+)?|since\s+\w+(?:\s+\w+)?))*)"
    r"(?P<why>\s*,?\s+(?:so|because|since|which|but|and)\s+.*)?"
)
_TRAIL_WORD = (
    r"(?:now|again|anymore|any|these|nowadays|too|as|either|though|actually|at|recently|lately"
    r"|last|in|for|since|so|because|which|but|and)\b"
)
_NUM = (
    r"(?:\d{1,3}|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)"
    r"(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?|one|two|three|four|five|six"
    r"|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen"
    r"|nineteen)"
)
_UNITS = "one two three four five six seven eight nine".split()
_TEENS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_VALUE_END = (
    r"\s*[,;:(]|\s+-\s|\s+(?:but|because|since|so|as|when|while|although|though|which|who|where"
    r"|whereas|with|from|last|this|next|ago|recently|lately|now|again|anymore|any\s+more"
    r"|any\s+longer|these\s+days|nowadays|currently|too|as\s+well|either|instead|please|thanks"
    r"|thank\s+you|lol|haha|if|until|unless|before|after|right\s+now|at\s+the\s+moment"
    r"|for\s+(?:work|now|a|an|the|about|over|almost|nearly|\d+|many|several|years|months|weeks"
    r"|ages|good))\b|\s+in\s+(?:19|20)\d\d\b|\s+(?:\d+|a\s+few|a\s+couple\s+of|several|many|two"
    r"|three|four|five|six)\s+(?:years?|months?|weeks?|days?)\b"
)
_QUALIFIER_TAIL = (
    r"\s+(?:very\s+much|so\s+much|a\s+lot|at\s+all|really|much|more|more\s+than\s+anything"
    r"|the\s+most|most|though|tbh|honestly|in\s+general|generally|personally|anymore|any\s+more"
    r"|and\s+all)$"
)
_PRONOUN_THINGS = frozenset(
    "it this that these those them him her you your yours what how when where which who one "
    "both either neither none something anything everything nothing there here".split()
)


def _cut(value: str, end: str = _VALUE_END) -> str:
    """A value up to the first word that starts a new thought."""
    if m := re.search(end, value, _I):
        value = value[: m.start()]
    return value.strip(" .,!?;:'\"")


def _strip_articles(value: str) -> str:
    return re.sub(r"^(?:the|a|an|some|any)\s+", "", value.strip(), flags=_I)


def _thing(value: str) -> str:
    """A normalised thing: cut, no qualifiers or articles, lower case."""
    v = _cut(value)
    while (stripped := re.sub(_QUALIFIER_TAIL, "", v, flags=_I)) != v:
        v = stripped
    v = re.sub(r"^to\s+", "", _strip_articles(v), flags=_I)
    return v.lower()[:_MAX_VALUE]


def _is_pronoun_thing(value: str) -> bool:
    words = value.lower().split()
    return not words or words[0] in _PRONOUN_THINGS or "you" in words or "your" in words


_NOT_SINGULAR = frozenset(
    "series species news physics mathematics maths politics chess glasses clothes jeans pants "
    "shorts scissors economics athletics gymnastics always bus gas plus".split()
)


_IE_WORDS = frozenset(
    "movie cookie zombie rookie selfie hippie brownie smoothie pie tie lie genie calorie prairie "
    "foodie newbie auntie goalie roomie veggie hoodie indie".split()
)


def _singular(word: str) -> str:
    """A rough English singular: good enough for a field key."""
    w = word.lower()
    irregular = {"children": "child", "people": "person", "men": "man", "women": "woman"}
    if w in irregular:
        return irregular[w]
    if len(w) <= 3 or w in _NOT_SINGULAR or w.endswith(("ss", "us", "is", "ous")):
        return w
    if w.endswith("ies") and w[:-1] in _IE_WORDS:
        return w[:-1]
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith(("ches", "shes", "xes", "zes", "sses", "oes")):
        return w[:-2]
    return w[:-1] if w.endswith("s") else w


def _slug(value: str, *, singular: bool = True) -> str:
    words = re.findall(r"[a-z0-9]+", value.lower().replace("'", ""))
    while words and words[0] in ("the", "a", "an", "my", "our"):
        words = words[1:]
    if singular and words:
        words[-1] = _singular(words[-1])
    spelling = {"colour": "color", "flavour": "flavor", "favourite": "favorite"}
    return "_".join(spelling.get(w, w) for w in words)[:60]


def _number(text: str) -> int | None:
    t = text.lower().replace("-", " ").split()
    if len(t) == 1 and t[0].isdigit():
        return int(t[0])
    total = 0
    for w in t:
        if w in _UNITS:
            total += _UNITS.index(w) + 1
        elif w in _TEENS:
            total += _TEENS.index(w) + 10
        elif w in _TENS:
            total += (_TENS.index(w) + 2) * 10
        elif w in ("a", "an"):
            total += 1
        elif w == "no":
            total += 0
        else:
            return None
    return total


_CURRENCY = {
    "dollars": "$", "dollar": "$", "usd": "$", "bucks": "$", "euro": "\u20ac", "euros": "\u20ac",
    "eur": "\u20ac", "pounds": "\u00a3", "gbp": "\u00a3", "quid": "\u00a3", "yen": "\u00a5",
    "chf": "CHF ", "francs": "CHF ",
}  # fmt: skip
_MONEY = (
    r"(?:[$\u20ac\u00a3\u00a5]\s?\d[\d,]*(?:\.\d+)?(?:\s*(?:k|m|thousand|million))?\b"
    r"|\d[\d,]*(?:\.\d+)?(?:\s*(?:k|m|thousand|million))?(?:\s*(?:" + "|".join(_CURRENCY) + r"))?\b)"
)


def _money(raw: str) -> str:
    """"$1,500" -> "$1500", "750 euros" -> "€750", "$1.5k" -> "$1500"."""
    m = re.fullmatch(
        r"(?P<sym>[$\u20ac\u00a3\u00a5])?\s?(?P<n>\d[\d,]*(?:\.\d+)?)\s*(?P<mult>k|m|thousand|million)?"
        r"\s*(?P<cur>[a-z]+)?",
        raw.strip(),
        _I,
    )
    if not m:
        return raw.strip()
    try:
        amount = Decimal(m["n"].replace(",", ""))
    except InvalidOperation:
        return raw.strip()
    mult = (m["mult"] or "").lower()
    amount *= {"k": 1000, "thousand": 1000, "m": 1_000_000, "million": 1_000_000}.get(mult, 1)
    symbol = m["sym"] or _CURRENCY.get((m["cur"] or "").lower(), "")
    if amount == amount.to_integral_value():
        return f"{symbol}{int(amount)}"
    return f"{symbol}{amount:.2f}"


# -- turning a clause into a third-person statement --------------------------------------

_LEAD_ADVERBS = frozenset(
    "really also just now currently still actually recently finally definitely absolutely "
    "totally usually generally always truly honestly so very much mostly already originally "
    "officially genuinely seriously never often sometimes rarely seldom even only mainly "
    "normally typically occasionally hardly barely".split()
)
_AS_IS = frozenset(
    "is was were has does did can cannot could will would shall should may might must had "
    "went got made took left bought met found began came saw said told became grew spent sold "
    "lost won wrote flew drove ran quit put set cut thought felt kept knew gave sent built brought "
    "caught taught slept sat stood heard held paid woke wore broke chose fell forgot hurt let meant "
    "rode sang swam threw understood used ate".split()
)
_PRONOUNS = {
    "me": "them", "my": "their", "mine": "theirs", "myself": "themselves", "we": "they",
    "us": "them", "our": "their", "ours": "theirs", "ourselves": "themselves",
}  # fmt: skip


def _third_singular(verb: str) -> str:
    w = verb.lower()
    special = {"am": "is", "are": "are", "have": "has", "do": "does", "go": "goes", "be": "is"}
    if w in special:
        return special[w]
    if w in _AS_IS or w.endswith("ed") or not w.isalpha():
        return verb
    if w.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if w.endswith("y") and len(w) > 1 and w[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _third_person(clause: str) -> str:
    """ "I prefer aisle seats" -> "Prefers aisle seats"; "my wife is Ana" -> "Wife is Ana"."""
    s = re.sub(r"\b(?:and|&)\s+I\b", "and the user", clause.strip())
    if m := re.match(r"I\s+(.+)", s):
        words = m.group(1).split(" ")
        i = 0
        while i < len(words):
            w = words[i].lower()
            nxt = words[i + 1].lower() if i + 1 < len(words) else ""
            if (w, nxt) in (("no", "longer"), ("kind", "of"), ("sort", "of")):
                i += 2
            elif w in _LEAD_ADVERBS:
                i += 1
            else:
                break
        if i < len(words):
            words[i] = _third_singular(words[i])
        s = " ".join(words)
    elif m := re.match(r"we\s+(.+)", s, _I):
        s = "they " + m.group(1)
    elif m := re.match(r"(?:my|our)\s+(.+)", s, _I):
        s = m.group(1)
    s = re.sub(r"\bI\s+am\b", "they are", s)
    s = re.sub(r"\bI\s+was\b", "they were", s)
    s = re.sub(r"\bI\b", "they", s)
    s = re.sub(r"\b(?:me|my|mine|myself|we|us|our|ours|ourselves)\b", _pronoun, s)
    s = s.strip(" ,;:.!")
    s = s[:1].upper() + s[1:]
    if len(s) > _MAX_TEXT:
        s = s[: _MAX_TEXT - 1].rsplit(" ", 1)[0] + "\u2026"
    return s


def _pronoun(m: re.Match[str]) -> str:
    return _PRONOUNS[m.group(0)]


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


def _rule_name(s: str) -> list[_Fact]:
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
    return [_Fact(f"Name is {name}", Kind.SEMANTIC, "name", name, _PERSONAL)]


def _greeting_name(s: str) -> list[_Fact]:
    m = re.fullmatch(
        r"(?i:I\s+am|this\s+is|it\s+is)\s+(?P<x>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)(?i:\s+here)?", s
    )
    if not m or m["x"].split()[0].lower() in _NOT_NAMES:
        return []
    return [_Fact(f"Name is {m['x']}", Kind.SEMANTIC, "name", m["x"], _PERSONAL)]


def _rule_age(s: str) -> list[_Fact]:
    m = (
        re.fullmatch(
            rf"I\s+am\s+(?:now\s+|already\s+)?(?P<n>{_NUM})(?:\s*(?:years?|yrs?)(?:\s+old"
            r"|\s+of\s+age)?|\s*y/?o)?(?:\s+(?:now|already|this\s+year))?",
            s,
            _I,
        )
        or re.fullmatch(rf"I\s+(?:just\s+|recently\s+)?turned\s+(?P<n>{_NUM})(?:\s+.*)?", s, _I)
        or re.fullmatch(rf"my\s+age\s+is\s+(?P<n>{_NUM})(?:\s+.*)?", s, _I)
    )
    n = _number(m["n"]) if m else None
    if m is None or n is None or not 1 <= n <= 120:
        return []
    change = "turned" in s.lower()
    return [_Fact(f"Is {n} years old", Kind.SEMANTIC, "age", str(n), _PERSONAL, change)]


_DIET_MAIN = {
    "vegetarian": "vegetarian", "vegan": "vegan", "pescatarian": "pescatarian",
    "pescetarian": "pescatarian", "flexitarian": "flexitarian", "omnivore": "eats meat",
    "carnivore": "eats meat", "meat eater": "eats meat", "meat-eater": "eats meat",
}  # fmt: skip
_DIET = (
    r"(?P<d>vegetarian|vegan|pescatarian|pescetarian|flexitarian|omnivore|carnivore|meat[- ]eater"
    r"|keto|paleo|kosher|halal|gluten[- ]free|dairy[- ]free|lactose[- ]intolerant|c(?:o)?eliac)"
)


def _diet_fact(s: str, diet: str, negated: bool, change: bool) -> _Fact:
    d = diet.lower().replace(" ", "-")
    main = _DIET_MAIN.get(diet.lower())
    if main is not None:
        value = ("no meat" if main == "eats meat" else f"not {main}") if negated else main
        return _Fact(_third_person(s), Kind.SEMANTIC, "diet", value, _PERSONAL, change)
    d = "celiac" if d == "coeliac" else d
    sensitive = d in ("kosher", "halal", "celiac", "lactose-intolerant")
    sens = Sensitivity.SENSITIVE if sensitive else _PERSONAL
    value = f"not {d}" if negated else d
    return _Fact(_third_person(s), Kind.SEMANTIC, f"diet:{_slug(d)}", value, sens, change)


def _rule_diet(s: str) -> list[_Fact]:
    if m := re.fullmatch(
        rf"(?:I|we)\s+(?:am|are)\s+{_ADV}(?P<neg>not\s+(?:really\s+)?|no\s+longer\s+)?{_ADV}"
        rf"(?:(?:a|an)\s+)?(?:strict\s+|full[- ]time\s+|proper\s+)?{_DIET}{_TRAIL}",
        s,
        _I,
    ):
        return [_diet_fact(s, m["d"], bool(m["neg"]), False)]
    if m := re.fullmatch(
        rf"(?:I|we)\s+(?:have\s+)?{_ADV}(?:became|become|went|gone|turned|switched\s+to\s+being)"
        rf"\s+(?:(?:a|an)\s+)?{_DIET}{_TRAIL}",
        s,
        _I,
    ):
        return [_diet_fact(s, m["d"], False, True)]
    return []


_NOT_FOOD = frozenset(
    "a lot out much well healthy healthily late early here there that this it them anything "
    "everything something fast slowly enough properly right less more".split()
)


def _rule_eats(s: str) -> list[_Fact]:
    m = re.fullmatch(
        rf"(?:I|we)\s+{_ADV}(?P<neg>do\s+not\s+|no\s+longer\s+|never\s+|cannot\s+|stopped\s+"
        rf"|quit\s+|gave\s+up\s+)?{_ADV}(?P<start>(?:have\s+)?started\s+|began\s+)?"
        rf"(?:eat|eating)\s+(?P<x>(?:any\s+)?[a-z]+(?:\s+(?!{_TRAIL_WORD})[a-z]+)?){_TRAIL}",
        s,
        _I,
    )
    if not m:
        return []
    food = re.sub(r"^any\s+", "", m["x"].lower())
    if food in _NOT_FOOD or food.split()[0] in _NOT_FOOD:
        return []
    neg = bool(m["neg"])
    change = bool(m["start"]) or (m["neg"] or "").strip() in ("stopped", "quit", "gave up")
    if food in ("meat", "animal products"):
        value = "no meat" if neg else "eats meat"
        return [_Fact(_third_person(s), Kind.SEMANTIC, "diet", value, _PERSONAL, change)]
    value = "does not eat" if neg else "eats"
    return [_Fact(_third_person(s), Kind.SEMANTIC, f"eats:{_slug(food)}", value, _PERSONAL, change)]


def _rule_allergy(s: str) -> list[_Fact]:
    m = re.fullmatch(
        rf"(?:I|we)\s+(?:am|are)\s+{_ADV}(?P<neg>not\s+|no\s+longer\s+)?{_ADV}(?:very\s+|severely\s+"
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
    raw = _cut(m["x"], r"\s+(?:but|because|so|which|since|that|and\s+I|now|anymore|any\s+more)\b")
    items = [_thing(i) for i in re.split(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+", raw)]
    items = [i for i in items if i and i not in ("anything", "nothing", "everything", "it")]
    value = "not allergic" if neg else "allergic"
    not_ = "not " if neg else ""
    return [
        _Fact(
            _third_person(s) if len(items) == 1 else f"Is {not_}allergic to {item}",
            Kind.SEMANTIC,
            f"allergy:{_slug(item)}",
            value,
            Sensitivity.SENSITIVE,
        )
        for item in items
    ]


_REL = (
    r"(?:wife|husband|partner|spouse|boyfriend|girlfriend|fianc[e\u00e9]e?|son|daughter|kid|child"
    r"|baby|mom|mum|mother|dad|father|brother|sister|sibling|twin|grandma|grandmother|granny"
    r"|grandpa|grandfather|grandson|granddaughter|aunt|uncle|cousin|niece|nephew|friend|roommate"
    r"|flatmate|housemate|boss|manager|colleague|co-?worker|assistant|doctor|dentist|therapist"
    r"|landlord|landlady|neighbou?r|dog|cat|puppy|kitten|pet|horse|parrot|bird|rabbit|hamster"
    r"|parents|kids|children|grandparents|in-laws|step-?(?:mom|mum|dad|son|daughter)"
    r"|(?:mother|father|sister|brother)-in-law)"
)
_REL_ADJ = r"(?:(?:older|younger|little|big|baby|twin|best|eldest|oldest|youngest|new|ex-?|late)\s*)?"
_NATIONALITY = frozenset(
    "american british english french german italian spanish portuguese brazilian canadian "
    "mexican chinese japanese korean indian irish scottish welsh dutch swedish polish russian "
    "greek turkish australian catholic jewish muslim christian hindu buddhist".split()
)


def _rule_relation(s: str) -> list[_Fact]:
    rel = rf"(?P<r>{_REL_ADJ}{_REL})"
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
        m := re.fullmatch(r"I\s+am\s+(?P<how>married\s+to|engaged\s+to|dating)\s+(?P<x>\S.*)", s, _I)
    ):
        how = m["how"].lower()
        relation = "spouse" if how.startswith("married") else "fiance" if "engaged" in how else "partner"
    if m is None:
        return []
    name = _name_value(m["x"], need_capital=need_capital)
    if not name or name.lower() in _NOT_NAMES or name.split()[0].lower() in _NATIONALITY:
        return []
    field = f"relation:{_slug(relation, singular=False)}"
    return [_Fact(_third_person(s), Kind.SEMANTIC, field, name, _PERSONAL)]


_NOT_PLACES = frozenset(
    "apartment flat house place home room building job team role position company project plan "
    "version school office work area street neighbourhood neighborhood town city village country "
    "countryside suburb suburbs condo studio here there bed".split()
)
_MOVE = r"(?:(?:has\s+|have\s+)?" + _ADV + r"(?:moved|relocated)(?:\s+back)?)"


def _place(text: str) -> str | None:
    v = _strip_articles(_cut(text))
    words = v.lower().split()
    if not words or v.lower() in _NOT_PLACES or (v.islower() and words[-1] in _NOT_PLACES):
        return None
    if v.islower() and len(words) <= 3:
        v = " ".join(w if w in ("of", "de", "da", "do", "la", "le") else w.capitalize() for w in words)
    return v[:_MAX_VALUE]


def _rule_relation_home(s: str) -> list[_Fact]:
    m = re.fullmatch(
        rf"(?:my|our)\s+(?P<r>{_REL_ADJ}{_REL})\s+{_ADV}(?P<v>lives?|is\s+living|are\s+living"
        rf"|{_MOVE}|is\s+based|are\s+based)\s+(?:in|to|near)\s+(?P<x>.+)",
        s,
        _I,
    )
    place = _place(m["x"]) if m else None
    if m is None or place is None:
        return []
    change = re.search(r"moved|relocated", m["v"], _I) is not None
    field = f"home:{_slug(m['r'], singular=False)}"
    return [_Fact(_third_person(s), Kind.SEMANTIC, field, place, _PERSONAL, change)]


def _rule_home(s: str) -> list[_Fact]:
    m = re.fullmatch(
        rf"(?:I|we)\s+{_ADV}(?P<v>live|reside|(?:am|are)\s+{_ADV}(?:living|based|settled)"
        rf"|have\s+{_ADV}(?:lived|been\s+living|been\s+based)|{_MOVE})"
        r"\s+(?:in|to|near|outside(?:\s+of)?)\s+(?P<x>.+)",
        s,
        _I,
    )
    place = _place(m["x"]) if m else None
    if m is None or place is None:
        return []
    change = re.search(r"moved|relocated", m["v"], _I) is not None
    return [_Fact(_third_person(s), Kind.SEMANTIC, "home", place, _PERSONAL, change)]


def _rule_origin(s: str) -> list[_Fact]:
    m = (
        re.fullmatch(rf"(?:I|we)\s+(?:am|are)\s+{_ADV}from\s+(?P<x>.+)", s, _I)
        or re.fullmatch(rf"(?:I|we)\s+{_ADV}come\s+from\s+(?P<x>.+)", s, _I)
        or re.fullmatch(
            r"I\s+(?:was\s+born|grew\s+up)(?:\s+and\s+(?:raised|grew\s+up))?\s+(?P<on>in|on)\s+(?P<x>.+)",
            s,
            _I,
        )
        or re.fullmatch(r"my\s+(?:home\s*town|birthplace|country\s+of\s+origin)\s+is\s+(?P<x>.+)", s, _I)
    )
    if not m:
        return []
    if "born" in s.lower() and _is_date(m["x"]):
        day = _date_value(m["x"])
        return [_Fact(_third_person(s), Kind.SEMANTIC, "date:birthday", day, _PERSONAL)]
    place = _place(m["x"])
    if place is None:
        return []
    return [_Fact(_third_person(s), Kind.SEMANTIC, "origin", place, _PERSONAL)]


_OCCUPATIONS = frozenset(
    "nurse doctor physician surgeon dentist pharmacist teacher professor lecturer tutor student "
    "researcher scientist engineer developer programmer designer architect lawyer attorney "
    "solicitor barrister paralegal judge accountant auditor banker analyst consultant manager "
    "director executive ceo cto cfo coo founder cofounder co-founder entrepreneur writer author "
    "journalist editor reporter photographer artist painter musician singer actor actress dancer "
    "chef cook baker waiter waitress bartender barista pilot driver mechanic electrician plumber "
    "carpenter builder farmer firefighter paramedic officer soldier sailor librarian cashier clerk "
    "receptionist secretary assistant administrator technician therapist psychologist "
    "psychiatrist counselor counsellor worker vet veterinarian midwife caregiver carer nanny "
    "cleaner janitor salesperson realtor agent broker trader investor economist statistician "
    "mathematician physicist chemist biologist translator interpreter freelancer contractor intern "
    "apprentice retiree housewife homemaker pastor priest rabbi imam coach trainer instructor "
    "principal postdoc tester sysadmin optician optometrist surveyor dietitian nutritionist "
    "radiologist anesthesiologist pediatrician paediatrician cardiologist clinician hairdresser "
    "barber tailor florist butcher fisherman welder machinist courier postman lifeguard guard "
    "detective politician diplomat officer pharmacologist epidemiologist".split()
)
_OCCUPATION_SUFFIXES = (
    "engineer", "developer", "designer", "manager", "writer", "scientist", "analyst", "worker",
    "officer", "specialist", "technician", "consultant", "teacher", "therapist", "ologist",
    "grapher", "keeper", "smith", "maker", "director", "nurse", "doctor",
)  # fmt: skip
_NOT_EMPLOYERS = frozenset(
    "home night nights weekends the weekend the moment myself remote remotely".split()
)
_JOB_VERB = (
    rf"I\s+{_ADV}(?:work|am\s+{_ADV}working|have\s+{_ADV}been\s+working|(?:got|found|landed"
    r"|accepted|started|have|took)\s+a\s+(?:new\s+)?job|am\s+employed|was\s+hired|got\s+hired)"
)


def _is_occupation(job: str) -> bool:
    words = job.lower().split()
    if not 1 <= len(words) <= 4:
        return False
    head = _singular(words[-1])
    return head in _OCCUPATIONS or head.endswith(_OCCUPATION_SUFFIXES)


def _split_job(text: str) -> tuple[str, str | None]:
    """ "software engineer at Google" -> ("software engineer", "Google")."""
    parts = re.split(r"\s+(at|for|with|in|from|since|on)\s+", text, maxsplit=1, flags=_I)
    job = _thing(parts[0])
    employer = None
    if len(parts) == 3 and parts[1].lower() in ("at", "for", "with"):
        employer = _strip_articles(_cut(parts[2])) or None
    return job, employer


def _work_facts(s: str, job: str | None, employer: str | None, change: bool) -> list[_Fact]:
    facts: list[_Fact] = []
    text = _third_person(s)
    if job:
        facts.append(_Fact(text, Kind.SEMANTIC, "occupation", job, _PERSONAL, change))
    if employer and employer.lower() not in _NOT_EMPLOYERS:
        field, verb = ("school", "Studies") if job == "student" else ("employer", "Works")
        emp_text = f"{verb} at {employer}" if job else text
        value = employer[:_MAX_VALUE]
        facts.append(_Fact(emp_text, Kind.SEMANTIC, field, value, _PERSONAL, change))
    return facts


def _rule_work(s: str) -> list[_Fact]:
    change = re.search(r"\b(?:new|got|found|landed|accepted|started|became|become|hired)\b", s, _I)
    if m := re.fullmatch(_JOB_VERB + r"\s+as\s+(?:a\s+|an\s+)?(?P<rest>.+)", s, _I):
        return _work_facts(s, *_split_job(m["rest"]), change=change is not None)
    if m := re.fullmatch(_JOB_VERB + r"\s+(?:at|for|with|by)\s+(?P<emp>.+)", s, _I):
        employer = _strip_articles(_cut(m["emp"]))
        if employer.lower() == "myself":
            return _work_facts(s, "self-employed", None, change=False)
        return _work_facts(s, None, employer or None, change=change is not None)
    if m := re.fullmatch(
        rf"I\s+(?:am|have\s+become|became|have\s+just\s+become)\s+{_ADV}(?P<neg>not\s+|no\s+longer\s+)?"
        rf"{_ADV}(?:a|an)\s+(?P<rest>.+)",
        s,
        _I,
    ):
        job, employer = _split_job(m["rest"])
        if not _is_occupation(job):
            return []
        if m["neg"]:
            return _work_facts(s, f"not {job}", None, change=False)
        return _work_facts(s, job, employer, change=change is not None)
    if m := re.fullmatch(
        rf"I\s+am\s+{_ADV}(?P<neg>not\s+|no\s+longer\s+)?{_ADV}(?P<job>retired|unemployed"
        rf"|self-employed|freelancing|between\s+jobs|out\s+of\s+work|jobless){_TRAIL}",
        s,
        _I,
    ):
        job = m["job"].lower().replace("freelancing", "freelancer")
        return _work_facts(s, f"not {job}" if m["neg"] else job, None, change=False)
    if m := re.fullmatch(
        rf"I\s+(?:have\s+)?{_ADV}(?P<ev>retired|quit\s+my\s+job|lost\s+my\s+job|got\s+laid\s+off"
        r"|was\s+laid\s+off|been\s+laid\s+off|got\s+fired|was\s+fired)(?:\s+.*)?",
        s,
        _I,
    ):
        job = "retired" if m["ev"].lower() == "retired" else "unemployed"
        return _work_facts(s, job, None, change=True)
    return []


_COUNT_NOUN = (
    r"(?P<noun>kids?|children|child|sons?|daughters?|boys?|girls?|brothers?|sisters?|siblings?"
    r"|grandchildren|grandkids?|dogs?|cats?|pets?|twins|horses?|birds?|fish|rabbits?)"
)
_COUNT_ADJ = (
    r"(?:(?:little|young|small|grown|grown-up|adult|teenage|lovely|beautiful|wonderful|older"
    r"|younger|big|baby|twin|step-?)\s+)*"
)


def _rule_counts(s: str) -> list[_Fact]:
    m = re.fullmatch(
        rf"(?:I|we)\s+{_ADV}(?:have|have\s+got|got)\s+(?P<n>a|an|no|{_NUM})\s+{_COUNT_ADJ}"
        rf"{_COUNT_NOUN}{_TRAIL}",
        s,
        _I,
    ) or re.fullmatch(
        rf"(?:I|we)\s+do\s+not\s+have\s+(?:any\s+)?(?P<n>){_COUNT_ADJ}{_COUNT_NOUN}{_TRAIL}", s, _I
    )
    n = (_number(m["n"]) if m["n"] else 0) if m else None
    if m is None or n is None:
        return []
    noun = _singular(m["noun"])
    if noun in ("kid", "child"):
        field, noun = "children", "child"
    else:
        field = f"count:{noun}"
    plural = {"child": "children", "fish": "fish"}.get(noun, noun + "s")
    value = f"{n} {noun if n == 1 else plural}"
    return [_Fact(_third_person(s), Kind.SEMANTIC, field, value, _PERSONAL)]


_FAV = r"(?:favou?rite|fave|fav)"


def _rule_favorite(s: str) -> list[_Fact]:
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
    thing = _thing(m["y"])
    if not thing or _is_pronoun_thing(thing) or re.search(r"\b(?:I|my|we)\b", m["y"]):
        return []
    if not m["x"]:
        return [_Fact(_third_person(s), Kind.PREFERENCE, f"likes:{_slug(thing)}", "likes")]
    field = f"favorite:{_slug(m['x'])}"
    return [_Fact(_third_person(s), Kind.PREFERENCE, field, thing)]


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
    head = [_singular(w) for w in re.findall(r"[a-z0-9][a-z0-9+#-]*", chunk.lower())]
    if head and head[-1] in _TOPICS:
        return _TOPICS[head[-1]]
    for w in re.findall(r"[a-z0-9][a-z0-9+#-]*", value.lower()):
        if w in _TOPICS or _singular(w) in _TOPICS:
            return _TOPICS.get(w) or _TOPICS[_singular(w)]
    return _slug(chunk) or _slug(value)


def _rule_prefer(s: str) -> list[_Fact]:
    topic = ""
    m = re.fullmatch(
        rf"(?:I|we)\s+{_ADV}(?P<neg>do\s+not\s+|no\s+longer\s+)?{_ADV}prefer\s+(?P<x>.+)", s, _I
    ) or re.fullmatch(rf"(?:I|we)\s+would\s+{_ADV}(?:rather|prefer)\s+(?P<x>.+)", s, _I)
    if m is None and (
        m := re.fullmatch(
            r"(?:my|our)\s+(?P<t>[a-z][a-z ]{0,30}?)\s+preference\s+is\s+(?:for\s+)?(?P<x>.+)",
            s,
            _I,
        )
    ):
        topic = _slug(m["t"])
    if m is None or re.match(_NOT_PREFERENCES, m["x"], _I):
        return []
    main = m["x"].strip()
    allow_to = not re.match(r"to\s", main, _I)
    alternatives = r"\s+(?:over|rather\s+than|instead\s+of|than|not|and\s+not)\s+"
    if allow_to:
        alternatives += r"|\s+to\s+"
    main = _thing(re.split(alternatives, main, maxsplit=1, flags=_I)[0])
    if not main or _is_pronoun_thing(main) or main in ("first one", "second one", "former", "latter"):
        return []
    neg = bool(m.groupdict().get("neg"))
    value = f"not {main}" if neg else main
    field = f"preference:{topic or _topic(main)}"
    return [_Fact(_third_person(s), Kind.PREFERENCE, field, value)]


_LIKE_VERB = (
    rf"(?P<verb>(?:do\s+not\s+|no\s+longer\s+|never\s+)?{_ADV}(?:like|love|enjoy|adore)"
    r"|do\s+not\s+care\s+for|hate|dislike|detest|loathe|despise|cannot\s+(?:stand|bear|stomach"
    rf"|handle)|am\s+{_ADV}(?:not\s+|no\s+longer\s+)?{_ADV}(?:(?:a\s+)?(?:big\s+|huge\s+|massive\s+)?"
    r"fan\s+of|into|obsessed\s+with|crazy\s+about|passionate\s+about|fond\s+of)"
    rf"|have\s+{_ADV}(?:liked|loved|enjoyed|hated)|never\s+(?:liked|enjoyed)"
    r"|stopped\s+(?:liking|enjoying)|(?:have\s+)?started\s+(?:liking|enjoying|to\s+like|to\s+enjoy))"
)
_NEGATIVE_LIKE = r"\b(?:not|no\s+longer|never|hate|hated|dislike|detest|loathe|despise|stopped)\b|cannot"
_NOT_LIKED = r"(?:hear|know|see|think|help|ask|talk|chat|say|learn\s+more|try\s+that)\b"


def _rule_likes(s: str) -> list[_Fact]:
    m = re.fullmatch(rf"(?:I|we)\s+{_ADV}{_LIKE_VERB}\s+(?P<x>.+)", s, _I)
    if not m or re.match(r"(?:to\s+)?" + _NOT_LIKED, m["x"], _I):
        return []
    thing = _thing(m["x"])
    if not thing or _is_pronoun_thing(thing) or not re.search(r"[a-z0-9]", thing):
        return []
    neg = re.search(_NEGATIVE_LIKE, m["verb"], _I) is not None
    value = "dislikes" if neg else "likes"
    return [_Fact(_third_person(s), Kind.PREFERENCE, f"likes:{_slug(thing)}", value)]


_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_DATE = (
    r"(?:(?:the\s+)?(?:next|this|coming|last|following)\s+)?(?:\d{1,2}(?:st|nd|rd|th)?(?:\s+of)?\s+"
    + _MONTH
    + r"\b|"
    + _MONTH
    + r"\s+\d{1,2}(?:st|nd|rd|th)?\b|"
    + _MONTH
    + r"\b|"
    + _WEEKDAY
    + r"\b|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|(?:19|20)\d{2}\b"
    r"|the\s+\d{1,2}(?:st|nd|rd|th)\b|\d{1,2}(?:st|nd|rd|th)\b|tomorrow|today|tonight|week\b"
    r"|month\b|year\b|weekend|noon|midnight|\d{1,2}(?::\d{2})?\s*(?:am|pm)\b|\d{1,2}:\d{2}"
    r"|end\s+of\s+\w+|(?:early|mid|late)[- ]" + _MONTH + ")"
)
_DATE_END = (
    r"\s*;|\s*,(?!\s*\d{4})|\s+(?:but|because|so|since|instead|now|again|anymore|please|thanks"
    r"|and\s+(?:I|we|my|it|the))\b"
)
_DATE_LEAD = r"^(?:(?:scheduled\s+)?(?:for|on|at|in|by|until|till|around)\s+)+"
_SUFFIX = {
    "expire": "_expiry", "expires": "_expiry", "due": "_due", "end": "_end", "ends": "_end",
    "arrive": "_arrival", "arrives": "_arrival", "land": "_arrival", "lands": "_arrival",
    "renew": "_renewal", "renews": "_renewal", "close": "_closing", "closes": "_closing",
    "open": "_opening", "opens": "_opening",
}  # fmt: skip
_EVENT_MODIFIERS = frozenset("next upcoming first new big final current".split())


def _is_date(text: str) -> bool:
    return re.match(_DATE, re.sub(_DATE_LEAD, "", text.strip(), flags=_I), _I) is not None


def _date_value(text: str) -> str:
    v = _cut(re.sub(_DATE_LEAD, "", text.strip(), flags=_I), _DATE_END)
    return re.sub(
        rf"\b(?:{_MONTH}|{_WEEKDAY})\b", lambda m: m.group(0).capitalize(), v, flags=_I
    )[:_MAX_VALUE]


def _event_key(text: str) -> str:
    chunk = re.split(r"\s+(?:to|from|with|for|in|at|of|on|about|between)\s+", text, maxsplit=1)[0]
    words = chunk.split()
    while len(words) > 1 and words[0].lower() in _EVENT_MODIFIERS:
        words = words[1:]
    return _slug(" ".join(words[-3:]), singular=False)


def _rule_date(s: str) -> list[_Fact]:
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
    if m is None or not _is_date(m["d"]):
        return []
    key = _event_key(m["e"])
    if not key:
        return []
    field = f"date:{key}{_SUFFIX.get(verb, '')}"
    sens = _PERSONAL if key == "birthday" else Sensitivity.NORMAL
    return [_Fact(_third_person(s), Kind.SEMANTIC, field, _date_value(m["d"]), sens, change)]


_QUANTITIES = frozenset(
    "budget rent salary income price cost fee limit allowance spend spending mortgage savings "
    "deposit bill pay wage rate fare target cap bid offer loan debt quote".split()
)
_UP_DOWN = (
    r"(?:has\s+|was\s+|got\s+|has\s+been\s+|is\s+being\s+)?(?:increased|went\s+up|gone\s+up|rose"
    r"|risen|grew|grown|jumped|raised|bumped(?:\s+up)?|decreased|went\s+down|gone\s+down|dropped"
    r"|fell|fallen|cut|reduced|lowered|changed|adjusted|moved|updated|set|doubled)\s+(?:to|at)"
)


def _rule_quantity(s: str) -> list[_Fact]:
    subject = r"(?:(?:my|our|the)\s+)?(?P<q>[a-z][a-z -]{0,40}?)"
    amount = rf"(?:now\s+|currently\s+|still\s+|only\s+|about\s+|around\s+|roughly\s+"
    amount += rf"|approximately\s+|up\s+to\s+|at\s+most\s+|max\s+|just\s+)*(?P<a>{_MONEY})(?:\s+.*)?"
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
            rf"(?:I|we)\s+{_ADV}(?:have|have\s+got|got|set)\s+(?:a|an|our|my)\s+"
            rf"(?P<q>[a-z -]{{1,30}}?)\s+of\s+{amount}",
            s,
            _I,
        )
    if m is None and (
        m := re.fullmatch(
            r"(?:I|we)\s+(?:can|could|want\s+to|would\s+like\s+to|plan\s+to|are\s+planning\s+to"
            r"|am\s+planning\s+to|will|would)\s+(?:only\s+)?spend\s+(?:up\s+to\s+|at\s+most\s+"
            rf"|about\s+|around\s+|max\s+)?(?P<a>{_MONEY})(?:\s+.*)?",
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
        noun = _singular(words[-1]) if words else ""
    if noun not in _QUANTITIES and noun + "s" not in _QUANTITIES:
        return []
    value = _money(m["a"])
    return [_Fact(_third_person(s), Kind.SEMANTIC, noun, value, Sensitivity.NORMAL, change)]


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


def _rule_attribute(s: str) -> list[_Fact]:
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
        value = _thing(raw)
        value = _DIET_MAIN.get(value, value) if field == "diet" else value
    else:
        value = _strip_articles(_cut(raw))
    if not value or _is_pronoun_thing(value) or value.lower() in ("secret", "private", "the same"):
        return []
    sens = (
        Sensitivity.SENSITIVE
        if field in _SENSITIVE_ATTRS
        else _PERSONAL
        if field in _PERSONAL_ATTRS
        else Sensitivity.NORMAL
    )
    change = re.search(r"changed", s, _I) is not None
    return [_Fact(_third_person(s), Kind.SEMANTIC, field, value[:_MAX_VALUE], sens, change)]


_RULES: tuple[Callable[[str], list[_Fact]], ...] = (
    _rule_name,
    _rule_age,
    _rule_diet,
    _rule_eats,
    _rule_allergy,
    _rule_relation,
    _rule_relation_home,
    _rule_home,
    _rule_origin,
    _rule_work,
    _rule_counts,
    _rule_favorite,
    _rule_prefer,
    _rule_likes,
    _rule_date,
    _rule_quantity,
    _rule_attribute,
)


# -- plain first-person facts ------------------------------------------------------------

_GENERIC_DENY = (
    rf"(?:I|we)\s+{_ADV}(?:think|guess|suppose|believe|mean|meant|see|agree|disagree|understand"
    r"|know|do\s+not\s+(?:know|think|understand|care|mind|remember|get)|did\s+not\s+(?:know|mean"
    r"|realize|realise)|wonder|was\s+wondering|hope|feel\s+like|need|needed|want|wanted"
    r"|would\s+(?:like|love\s+to\s+know|appreciate)|am\s+(?:not\s+)?sure"
    rf"|(?:am|are|was|were)\s+{_ADV}(?:wondering|looking|trying|thinking|asking|planning\s+to\s+ask"
    r"|curious|confused|lost|stuck|fine|good|ok|okay|great|here|back|ready|done|tired|busy|happy"
    r"|glad|excited|bored|hungry|sad|stressed|sorry|afraid|worried|not\s+sure|going\s+to\s+(?:think"
    r"|check|try|see|ask|look))|have\s+(?:a|another|one\s+more|some|a\s+quick)\s+questions?"
    r"|had\s+a\s+question|appreciate|apologi[sz]e|forgot|will\s+(?:think|check|try|see|ask|look|let"
    r"|get\s+back|be\s+right\s+back)|(?:can|could|may|might|should)\s+(?:ask|get|have|try|check)"
    r"|just\s+(?:wanted|want|need|needed)|got\s+it|love\s+(?:it|this|that)|like\s+(?:it|this|that)"
    r"|would\s+love\s+to\s+(?:hear|know|see|learn|get|help|chat|talk))\b"
    r"|(?:my|our)\s+(?:question|point|guess|concern|issue|problem|idea|thought|bad|pleasure"
    r"|understanding|answer|request|suggestion|apologies|mistake)\b"
)
_STOPWORDS = frozenset(
    "i me my mine myself we us our ours you your he she it they them their his her its this that "
    "these those a an the am is are was were be been being have has had do does did will would "
    "shall should can cannot could may might must not no and or but so if then than to of in on "
    "at by for with about from into up down out over just really very also too quite some any all "
    "there here what which who how when where why as like well yes ok okay oh um uh hmm lol "
    "thanks thank please maybe probably actually now still again get got thing things something "
    "anything stuff bit lot kind sort let think know mean guess sure right yeah".split()
)


def _generic(s: str, explicit: bool) -> list[_Fact]:
    """A first-person statement with content that no rule claims; explicit ones need less."""
    words = re.findall(r"[^\W_][\w'$\u20ac\u00a3-]*", s.lower())
    content = [w for w in words if w not in _STOPWORDS]
    if explicit:
        if not content or re.match(r"to\s", s, _I):
            return []
        return [_Fact(_third_person(s), Kind.SEMANTIC)]
    if not re.match(r"(?:I|we|my|our)\s", s, _I) or re.match(_GENERIC_DENY, s, _I):
        return []
    if {"you", "your", "yours"} & set(words) or len(content) < 3:
        return []
    return [_Fact(_third_person(s), Kind.SEMANTIC)]


# -- bare answers to the assistant's yes/no question -------------------------------------

_YES = (
    r"(?:yes|yeah|yep|yup|ya|yea|sure|correct|right|that\s+is\s+(?:right|correct)|exactly|indeed"
    r"|of\s+course|absolutely|definitely|I\s+(?:still\s+)?(?:am|do|have)|still)"
    r"(?:[\s,]+(?:I\s+(?:still\s+)?(?:am|do|have)|still|it\s+is|that\s+is\s+right))*"
)
_NO = (
    r"(?:no|nope|nah|not\s+really|not\s+any\s*more|no\s+longer|not\s+at\s+all|I\s+am\s+not"
    r"|I\s+do\s+not|I\s+have\s+not|not\s+now)(?:[\s,]+(?:I\s+am\s+not|I\s+do\s+not|I\s+have\s+not"
    r"|not\s+any\s*more|any\s*more|no\s+longer|not\s+really))*"
)


def _answer_facts(event: Event, context: Sequence[Event]) -> list[tuple[_Fact, bool, bool]]:
    """Read a bare yes / no as a statement, from the assistant's question right before it."""
    answer, _ = _strip_end(" ".join(_normalise(event.text).split()))
    positive = re.fullmatch(_YES, answer, _I) is not None
    negative = re.fullmatch(_NO, answer, _I) is not None
    earlier = [e for e in context if e.time <= event.time and e.id != event.id]
    if not (positive or negative) or not earlier:
        return []
    last = max(enumerate(earlier), key=lambda p: (p[1].time, p[0]))[1]
    questions = [q for q in _sentences(last.text) if q.rstrip().endswith("?")]
    if last.role != Role.ASSISTANT or not questions:
        return []
    q, _ = _strip_end(questions[-1])
    q = re.sub(
        r"^(?:(?:so|and|ok(?:ay)?|great|got\s+it|also|just\s+to\s+confirm|quick\s+question)[\s,:-]+)+",
        "",
        q,
        flags=_I,
    )
    still = re.search(r"\bstill\b", q, _I) is not None
    gone = re.search(r"\b(?:any\s*more|no\s+longer)\b", answer, _I) is not None
    tail = " anymore" if negative and (still or gone) else ""
    statements: list[str] = []
    if m := re.fullmatch(r"(?:are|were)\s+you\s+(?:still\s+)?(?P<x>.+)", q, _I):
        statements = [f"I am {m['x']}" if positive else f"I am not {m['x']}{tail}"]
    elif m := re.fullmatch(r"do\s+you\s+(?:still\s+)?(?P<x>.+)", q, _I):
        statements = [f"I {m['x']}" if positive else f"I do not {m['x']}{tail}"]
    elif m := re.fullmatch(r"have\s+you\s+(?:got\s+)?(?P<x>.+)", q, _I):
        statements = [f"I have {m['x']}" if positive else f"I do not have {m['x']}"]
    elif positive and (m := re.fullmatch(r"is\s+your\s+(?P<x>.+)", q, _I)):
        words = m["x"].split()
        statements = [
            f"my {' '.join(words[:k])} is {' '.join(words[k:])}" for k in range(1, min(4, len(words)))
        ]
    found: list[tuple[_Fact, bool, bool]] = []
    for statement in statements:
        if re.search(r"\b(?:you|your|any|anything|something|what|which)\b", statement, _I):
            continue
        facts = [f for f in _rule_facts(statement) if f.field is not None]
        if facts:
            correction = bool(tail) or any(f.change for f in facts)
            return [(f, False, correction) for f in facts]
    return found
