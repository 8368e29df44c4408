"""Text pieces of the offline extractor: normalising, splitting, values, third person.

Pure string functions shared by `remem.extract.offline` and its rules: contractions
are expanded before matching ("I'm" -> "I am"), values are normalised so that equal
things compare equal ("$1,500" -> "$1500", "peanuts" -> field key "peanut"), and a
first-person clause becomes a third-person-neutral statement ("I prefer aisle seats"
-> "Prefers aisle seats").
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from decimal import Decimal, InvalidOperation

MAX_TEXT = 500
MAX_VALUE = 200
MAX_KEY = 60  # characters of a field key, whole words
_I = re.IGNORECASE

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
    (r"\bwon't\b", "will not"), (r"\b(?!ai)(\w+)n't\b", r"\1 not"),
    # "it's been" / "it's got" is "it has"; otherwise "it's" is "it is"
    (r"\b(\w+)'s(?=\s+(?:(?:\w+ly|never|always|just|already|not|also|really)\s+)?"
     r"(?:been|got|gotten|had)\b)", r"\1 has"),
    # "it's made such a difference" (has), but "it's made of wood" (is)
    (r"\b(it|that|this|he|she)'s(?=\s+(?:(?:really|truly|just|already)\s+)?(?:made|done|given"
     r"|brought|helped|taught|changed)\s+(?:a|an|such|so|the|me|us|my|our|it|all|everything"
     r"|things|life|him|her|them|their|a\s+lot)\b)", r"\1 has"),
    (r"\b(it|that|there|what|where|who|name)'s\b", r"\1 is"),
    # chat spellings, so a record is written in whole words ("Wants to learn ...")
    (r"\bwanna\b", "want to"), (r"\bgonna\b", "going to"), (r"\btryna\b", "trying to"),
    (r"\b(have|has|I've|we've)\s+gotta\b", r"\1 got to"), (r"\bgotta\b", "have to"),
    (r"\bdunno\b", "do not know"),
    (r"\blemme\b", "let me"), (r"\bgimme\b", "give me"),
)  # fmt: skip


def normalise(text: str) -> str:
    """Unicode NFC ("Malmo" and a combining diaeresis is "Malmö"), straight quotes,
    apostrophes restored, contractions expanded ("I'm" -> "I am")."""
    t = unicodedata.normalize("NFC", text).translate(_QUOTES)
    t = re.sub(
        r"\b(?:" + "|".join(_NO_APOSTROPHE) + r")\b",
        lambda m: _NO_APOSTROPHE[m.group(0).lower()],
        t,
        flags=_I,
    )
    t = re.sub(r"(?<![\w.'])i(?=\s|')", "I", t)
    t = re.sub(r"(?<=[a-z]{2})- (?!(?:and|or|to)\b)(?=[a-z])", " - ", t)  # "sunset- it"
    for pattern, repl in _EXPANSIONS:
        t = re.sub(pattern, repl, t, flags=_I)
    return t


def sentences(text: str) -> list[str]:
    """Split text into sentences, keeping each one's final punctuation."""
    out: list[str] = []
    for line in normalise(text).splitlines():
        line = re.sub(r"^(?:[-*\u2022>]+|\d+[.)])\s+", "", " ".join(line.split()))
        buf = ""
        parts = re.split(r"(?<=[.!?\u2026])\s+", line)
        for n, part in enumerate(parts):
            buf = f"{buf} {part}" if buf else part
            if re.search(r"\b(?:dr|mr|mrs|ms|st|prof|e\.g|i\.e|vs|approx|etc)\.$", buf, _I):
                continue
            # "the U.S. in 2019", "at 9 a.m. tomorrow": initials, then the sentence goes on
            later = parts[n + 1] if n + 1 < len(parts) else ""
            if re.search(r"\b(?:[a-z]\.){2,}$", buf, _I) and re.match(r"[a-z0-9]", later):
                continue
            out.append(buf)
            buf = ""
        if buf:
            out.append(buf)
    return [s for s in out if s]


_CODE_KEYWORD = (
    r"\s*(?:def|class|import|from\s+\S+\s+import|return|function|const|let|var|public|private"
    r"|static|void|int|#include|package|func|fn|elif|else|try|except|catch|print|console"
    r"|select|insert|update|for|while|if)\b.*[(){}\[\]=:;<>].*"
)
_CODE_LINE = (
    r".*(?:[{};]|=>|\)\s*:)\s*|.*\\[a-z]+\{.*|\s*<\/?[a-z][\w-]*[\s>].*"
    r"|\s*[\w.\[\]]+\s*[-+*/]?=\s*[\w\[\"'({].*"
)
_WORK_ON = (  # "Please simplify this text: ...": what follows is material, not something said
    r"(?:(?:can|could|would)\s+you\s+)?(?:please\s+)?(?:simplify|summari[sz]e|rewrite|reword"
    r"|translate|paraphrase|proofread|correct|edit|improve|explain|fix|analy[sz]e|convert"
    r"|shorten|expand|format|review|grade|answer|solve|continue|complete)\b[^.?!\n:]{0,40}"
    r"\b(?:this|these|that|it|the\s+following|below|my)\b[^.?!\n:]{0,40}:"
)
MAX_TURN = 1200


def pasted(text: str) -> bool:
    """Whether a turn is code, a pasted document or homework rather than something said.

    Code fences, several lines that read as code (braces, semicolons, keywords,
    assignments, markup), indented blocks, words broken across lines, a request
    to work on a text that follows ("Summarise this: ..."), or a turn longer
    than a chat message (`MAX_TURN` characters, or more than 12 lines).
    """
    if "```" in text or len(text) > MAX_TURN or re.match(_WORK_ON, text.strip(), _I):
        return True
    lines = [line for line in text.splitlines() if line.strip()]
    if sum(1 for line in lines if re.search(r"[a-z]-$", line)) >= 1 and len(lines) >= 3:
        return True  # words broken across lines: text pasted from a document
    if len(lines) > 12:
        return True
    code = sum(
        1
        for line in lines
        if re.fullmatch(_CODE_LINE, line, _I) or re.fullmatch(_CODE_KEYWORD, line, _I)
    )
    indented = sum(1 for line in lines if re.match(r"(?: {4}|\t)\S", line))
    return code >= 2 or indented >= 2


# -- shared pieces -----------------------------------------------------------------------

_LY_VERBS = (
    "apply|reply|rely|supply|multiply|comply|imply|rally|tally|bully|sully|dally|ally|fly|wrongly"
)
ADV = (
    r"(?:(?:really|also|just|now|currently|still|actually|recently|finally|definitely"
    r"|absolutely|totally|usually|generally|always|truly|honestly|so|very|much|mostly|already"
    r"|originally|officially|genuinely|seriously|kind\s+of|sort\s+of|pretty\s+much"
    rf"|(?!(?:{_LY_VERBS})\b)[a-z]{{3,}}ly)\s+)*"
)
TRAIL = (
    r"(?P<rest>(?:\s+(?:now|again|anymore|any\s+more|any\s+longer|these\s+days|nowadays|too"
    r"|as\s+well|either|though|actually|at\s+home|recently|lately|last\s+\w+|\w+\s+ago|in\s+\d{4}"
    r"|for\s+\w+(?:\s+\w+)?|since\s+\w+(?:\s+\w+)?))*)"
    r"(?P<why>\s*,?\s+(?:so|because|since|which|but|and)\s+.*)?"
)
TRAIL_WORD = (
    r"(?:now|again|anymore|any|these|nowadays|too|as|either|though|actually|at|recently|lately"
    r"|last|in|for|since|so|because|which|but|and)\b"
)
NUM = (
    r"(?:\d{1,3}|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)"
    r"(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?|one|two|three|four|five|six"
    r"|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen"
    r"|nineteen)"
)
_UNITS = "one two three four five six seven eight nine".split()
_TEENS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
# "... and (strongly) dislikes Y": a second stance after the first thing starts a new thought
SECOND_STANCE = (  # "love", "like" ... are verbs here only before their object ("love theme")
    r"and\s+(?:\w+ly\s+)?(?:(?:dislike|avoid|prefer|detest|despise|refuse|find)s?\b|only\b"
    r"|(?:hate|love|like|enjoy|want|need|feel|think)s?\s+(?:to|the|a|an|my|our|it|them|any|all"
    r"|most|some|that|this|those|these|being|when|how)\b)"
)
VALUE_END = (
    r"\s*[,;:(]|\s+-\s|\s+"
    + SECOND_STANCE
    + r"|\s+(?:but|because|since|so|as|when|while|although|though|which|who|where"
    r"|whereas|with|from|last|this|next|ago|recently|lately|now|again|anymore|any\s+more"
    r"|any\s+longer|these\s+days|nowadays|currently|too(?!\s+[a-z])|as\s+well|either|instead"
    r"|please|thanks"
    r"|thank\s+you|lol|haha|if|until|unless|before|after|right\s+now|at\s+the\s+moment"
    r"|for\s+(?:work|now|a|an|the|about|over|almost|nearly|\d+|many|several|years|months|weeks"
    r"|ages|good))\b|\s+in\s+(?:19|20)\d\d\b|\s+(?:\d+|a\s+few|a\s+couple\s+of|several|many|two"
    r"|three|four|five|six)\s+(?:years?|months?|weeks?|days?)\b"
    # a time said after the value: "Lisbon in May", "Oslo for ten years"
    r"|\s+(?:in|on|by|during|around|since|until)\s+(?:early\s+|mid\s+|late\s+|the\s+)?"
    rf"(?:{_MONTH}|{_WEEKDAY}|spring|summer|autumn|fall|winter)\b"
    rf"|\s+for\s+(?:{NUM}|a\s+few|a\s+couple\s+of)\s+(?:years?|months?|weeks?|days?)\b"
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


def cut(value: str, end: str = VALUE_END) -> str:
    """A value up to the first word that starts a new thought."""
    if m := re.search(end, value, _I):
        value = value[: m.start()]
    return with_initials(value.strip(" .,!?;:'\""))


def with_initials(text: str) -> str:
    """`text` with the last dot of initials it ends in: "the U.S" -> "the U.S.", whose
    dot a sentence's end took ("I live in the U.S.")."""
    return f"{text}." if re.search(r"(?<![\w.])(?:[a-z]\.)+[a-z]$", text, _I) else text


def strip_articles(value: str) -> str:
    """Value without a leading article ("the Bay Area" -> "Bay Area")."""
    return re.sub(r"^(?:the|a|an|some|any)\s+", "", value.strip(), flags=_I)


def _bare(value: str) -> str:
    """A value cut, without its qualifiers, articles or a leading "to", in its own case."""
    v = cut(value)
    while (stripped := re.sub(_QUALIFIER_TAIL, "", v, flags=_I)) != v:
        v = stripped
    return re.sub(r"^to\s+(?:go\s+(?=\w+ing\b))?", "", strip_articles(v), flags=_I)


def thing(value: str) -> str:
    """A normalised thing: cut, no qualifiers or articles, lower case."""
    return _bare(value).lower()[:MAX_VALUE]


def said_thing(value: str, *, at_start: bool = False) -> str:
    """`thing`, keeping the capitals of names as said ("May", "New York", "Radiohead").

    A word said with a capital keeps it; so does an acronym. The first word of a
    clause (`at_start`) is capitalised anyway, so it keeps its capital only when
    the next word has one too ("New York is ..." but "Pizza is ...").
    """
    words = _bare(value).split()
    kept = []
    for i, word in enumerate(words):
        named = word[:1].isupper()
        if at_start and i == 0 and not word.isupper():
            named = len(words) > 1 and words[1][:1].isupper()
        kept.append(word if named else word.lower())
    return " ".join(kept)[:MAX_VALUE]


def is_pronoun_thing(value: str) -> bool:
    """Whether a value is a pronoun or points at the assistant ("it", "that one", "your idea")."""
    words = value.lower().split()
    if not words or words[0] in _PRONOUN_THINGS or "you" in words or "your" in words:
        return True
    if len(words) > 1 and words[-2] == "of" and words[-1] in _PRONOUN_THINGS:
        return True  # "the smell of it"
    if acts_on_pronoun(value):
        return True
    return words[-1] in ("one", "ones", "option", "options", "former", "latter")


def acts_on_pronoun(value: str) -> bool:
    """Whether a value is an act on someone or something named only by a pronoun.

    "holding them", "seeing her smile", "doing it": whom or what, the turn does
    not say. "taking it easy" says, and so does "anything involving them".
    """
    words = value.lower().split()
    if len(words) < 2 or not words[0].endswith("ing") or words[0] in _PRONOUN_THINGS:
        return False
    return words[1] in ("them", "him", "her") or (words[1] == "it" and len(words) == 2)


# Nouns for what the other person just said: liking "the idea" names nothing by itself
_REACTIONS = frozenset("idea ideas thought thoughts suggestion suggestions plan sound".split())


def is_reaction(value: str) -> bool:
    """Whether a value is only a reaction to what was just said: "that idea", "the
    thought" (and a name after it, said to the listener: "the thought Nate"), not
    "the idea of moving to Porto"."""
    words = value.lower().split()
    if words and words[0] in ("that", "this", "the", "your", "such"):
        words = words[2:] if words[1:2] == ["a"] else words[1:]
    return bool(words) and words[0] in _REACTIONS and len(words) <= 2


_NOT_SINGULAR = frozenset(
    "series species news physics mathematics maths politics chess glasses clothes jeans pants "
    "shorts scissors economics athletics gymnastics always bus gas plus".split()
)


_IE_WORDS = frozenset(
    "movie cookie zombie rookie selfie hippie brownie smoothie pie tie lie genie calorie prairie "
    "foodie newbie auntie goalie roomie veggie hoodie indie".split()
)


def singular(word: str) -> str:
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


def slug(value: str, *, singular_last: bool = True) -> str:
    """A field key: "Aisle Seats" -> "aisle_seat"; articles dropped, British spelling folded."""
    words = re.findall(r"[a-z0-9]+", value.lower().replace("'", ""))
    while words and words[0] in ("the", "a", "an", "my", "our"):
        words = words[1:]
    if singular_last and words:
        words[-1] = singular(words[-1])
    spelling = {"colour": "color", "flavour": "flavor", "favourite": "favorite"}
    key = ""
    for w in (spelling.get(w, w) for w in words):  # whole words only, up to MAX_KEY
        if len(key) + len(w) + bool(key) > MAX_KEY:
            break
        key = f"{key}_{w}" if key else w
    return key or "_".join(words)[:MAX_KEY]


def number(text: str) -> int | None:
    """An integer from digits or English number words ("thirty-four" -> 34, "a" -> 1)."""
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
MONEY = (
    r"(?:[$\u20ac\u00a3\u00a5]\s?\d[\d,]*(?:\.\d+)?(?:\s*(?:k|m|thousand|million))?\b"
    r"|\d[\d,]*(?:\.\d+)?(?:\s*(?:k|m|thousand|million))?(?:\s*(?:dollars?|usd|bucks|euros?|eur"
    r"|pounds|gbp|quid|yen|chf|francs))?\b)"
)


def money(raw: str) -> str:
    """ "$1,500" -> "$1500", "750 euros" -> "€750", "$1.5k" -> "$1500"."""
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
# words after which "to" is a preposition, not an infinitive's ("allergic to wool and avoid ...")
_TO_TAKERS = frozenset(
    "allergic sensitive intolerant close married engaged addicted next similar due according "
    "thanks important new devoted committed opposed kind nice "
    # nouns whose "to" names a thing, never an action ("an aversion to crowds and prefer ...")
    "aversion allergy objection sensitivity intolerance reaction attachment exposure "
    "addiction devotion dedication resistance".split()
)
# an infinitive's "to" is followed by a verb, never by one of these ("to the gym and play")
_NOT_AFTER_TO = frozenset(
    "the a an any all some my your his her its our their this these those every each no "
    "such".split()
)
# a subject of its own: what follows it is another clause's ("they're a great escape and get")
_SUBJECTS = frozenset(
    "he she they we you're they're we're he's she's it's there's he'll she'll they'll".split()
)
# a verb after one of these stays bare, and so does one joined to it ("will keep going and stay")
_MODALS = frozenset("can cannot could will would shall should may might must".split())
# the same form in the past: with a marker of the past before it, the verb is the past one
_SAME_PAST = frozenset("read".split())
_PAST_LEADS = frozenset("recently just already once finally".split())
# after these the verbs belong to another subject or a modal ("so they can track it and stay")
_NEW_VERB_PHRASE = frozenset(
    "can could will would should must may might shall so because since when if that while "
    "although though which who whom".split()
)
_AS_IS = frozenset(
    "is was were has does did can cannot could will would shall should may might must had "
    "went got made took left bought met found began came saw said told became grew spent sold "
    "lost won wrote flew drove ran quit put set cut thought felt kept knew gave sent built brought "
    "caught taught slept sat stood heard held paid woke wore broke chose fell forgot hurt "
    "let meant rode sang swam threw understood used ate wanna gonna gotta".split()
)
VERBS = frozenset(  # verbs conjugated again after "and"/"but"/"or" in a first-person clause
    "prefer try find avoid like love enjoy want need hate dislike use choose tend believe feel "
    "think opt stick look seek get make take keep see know work live play watch wear eat drink "
    "drive ride travel spend buy own refuse hope plan consider value appreciate stay go do "
    "adopt shop follow read cook visit walk run swim listen stream book fly rent support donate "
    "volunteer practice practise study learn train exercise collect skip limit sleep".split()
)
_EED = frozenset("need feed bleed breed speed proceed succeed exceed heed weed seed".split())
_PRONOUNS = {
    "me": "them", "my": "their", "mine": "theirs", "myself": "themselves", "we": "they",
    "us": "them", "our": "their", "ours": "theirs", "ourselves": "themselves",
}  # fmt: skip


def is_adverb(word: str) -> bool:
    """Whether a word is an adverb by its form ("strongly", "exclusively"), never a verb."""
    w = word.lower()
    return len(w) > 4 and w.endswith("ly") and re.fullmatch(_LY_VERBS, w) is None


def _third_singular(verb: str) -> str:
    w = verb.lower()
    special = {"am": "is", "are": "is", "have": "has", "do": "does", "go": "goes", "be": "is"}
    if w in special:
        return special[w]
    if re.fullmatch(r"[a-z]+(?:-[a-z]+)+", w):  # "color-code" -> "color-codes"
        head, _, last = verb.rpartition("-")
        return f"{head}-{_third_singular(last)}"
    if w in _AS_IS or (w.endswith("ed") and w not in _EED) or not w.isalpha():
        return verb
    if w.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if w.endswith("y") and len(w) > 1 and w[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def third_person(clause: str, subject: str | None = None) -> str:
    """ "I prefer aisle seats" -> "Prefers aisle seats"; "my wife is Ana" -> "Wife is Ana".

    With a `subject` (the speaker's name, in a thread of several people) the
    statement names them: "Caroline prefers aisle seats", "Caroline's wife is
    Ana", "Caroline says they ..." for "we ...". Only the verb is conjugated:
    adverbs before it ("strongly", "only", "never") are kept as they are.
    """
    s = re.sub(r"\b(?:and|&)\s+I\b", "and the user", _untagged(clause.strip()))
    named = False
    if m := re.match(r"I\s+(.+)", s):
        words = m.group(1).split(" ")
        i = 0
        while i < len(words):
            w = words[i].lower()
            nxt = words[i + 1].lower() if i + 1 < len(words) else ""
            if (w, nxt) in (("no", "longer"), ("kind", "of"), ("sort", "of")):
                i += 2
            elif w in _LEAD_ADVERBS or is_adverb(w) or (_is_stance(nxt) and _unknown_verb(w)):
                i += 1  # a misspelt adverb ("I absolutly love ...") is still an adverb
            else:
                break
        if i < len(words) and not _same_past(words, i):
            words[i] = _third_singular(words[i])
        for j in range(i + 2, len(words)):  # "... and prefer flats" -> "... and prefers flats"
            if words[j - 1].lower() not in ("and", "but", "or"):
                continue
            if _bare_after_modal(words, i):
                break  # "will keep going and stay": both verbs hang on the modal
            if any(_ends_verb_phrase(words, t) for t in range(i + 1, j)):
                break  # "... to catch the eye and make ...": an infinitive goes on
            k = j
            while k < len(words) - 1 and (words[k].lower() in _LEAD_ADVERBS or is_adverb(words[k])):
                k += 1
            if words[k].lower() in VERBS and not _is_noun_pair(words, i, j, k):
                words[k] = _third_singular(words[k])
        s = " ".join(words)
        if subject:
            s, named = f"{subject} {s}", True
    elif m := re.match(r"we\s+(.+)", s, _I):
        # "we" is the speaker and others: the statement stays the speaker's
        s, named = f"{subject or 'the user'} says they {m.group(1)}", True
    elif m := re.match(r"(?:my|our)\s+(.+)", s, _I):
        s, named = (f"{subject}'s {m.group(1)}", True) if subject else (m.group(1), False)
    if subject and not named:
        s, n = re.subn(r"\b(?:my|our)\b", f"{subject}'s", s, count=1)
        if not n:
            s = re.sub(r"\b(?:I|me|we|us)\b", subject, s, count=1)
    s = re.sub(r"\bI\s+am\b", "they are", s)
    s = re.sub(r"\bI\s+was\b", "they were", s)
    s = re.sub(r"\bI\b", "they", s)
    # not inside a compound word: "me-time" stays
    s = re.sub(r"(?<!-)\b(?:me|my|mine|myself|we|us|our|ours|ourselves)\b(?!-)", _pronoun, s)
    # a clause cut before "- but ..." keeps no dash of its own
    s = with_initials(re.sub(r"(?:\s+[-\u2013\u2014]+)+\s*$", "", s).strip(" ,;:.!"))
    s = s[:1].upper() + s[1:]
    if len(s) > MAX_TEXT:
        s = s[: MAX_TEXT - 1].rsplit(" ", 1)[0] + "\u2026"
    return s


# "..., shouldn't I": a question tag asks the listener to agree; the statement is before it
_TAG = re.compile(
    r",?\s+(?:am|is|are|was|were|do|does|did|have|has|had|can|could|will|would|shall|should"
    r"|must)(?:\s+not|n't)\s+(?:I|you|we|they|he|she|it)\s*[?.!]*$",
    _I,
)
# stance verbs that follow their subject at once, so a word before one is an adverb
_STANCES = frozenset("love hate prefer enjoy dislike adore appreciate".split())


def _untagged(clause: str) -> str:
    return _TAG.sub("", clause)


def _is_stance(word: str) -> bool:
    return word in _STANCES


def _unknown_verb(word: str) -> bool:
    """Whether a word before a stance verb reads as an adverb, misspelt or informal."""
    # "absolutley", "kinda": shaped like an adverb, and no verb we conjugate
    shaped = word.endswith(("ly", "ley")) or word in ("kinda", "sorta", "too")
    return shaped and word.isalpha() and re.fullmatch(_LY_VERBS, word) is None


def _ends_verb_phrase(words: list[str], t: int) -> bool:
    """Whether `words[t]` starts what the verbs after a later "and" belong to instead."""
    w = words[t].lower()
    if w == "to":
        after = words[t + 1].lower() if t + 1 < len(words) else ""
        # "to" before a determiner, a name, a list ("to loud, crowded rooms") or a form
        # no verb has as its base ("to gamified apps") is a preposition
        return not (
            words[t - 1].lower() in _TO_TAKERS
            or after in _NOT_AFTER_TO
            or after.endswith(",")
            or (after.endswith("ed") and after not in _EED)
            or after.endswith("ing")
        )
    return w in _NEW_VERB_PHRASE or w in _SUBJECTS


def _is_noun_pair(words: list[str], i: int, j: int, k: int) -> bool:
    """Whether the word at `k` after "and" is a noun: "love and support", "support I got"."""
    left = words[j - 2].lower().strip(",;:")
    if j - 2 > i and left in VERBS and left == words[j - 2].lower():
        return True  # a bare verb form that was not the verb: both are nouns
    after = words[k + 1] if k + 1 < len(words) else ""
    return after in ("I", "we", "he", "she", "they")  # a subject follows a noun, not a verb


def _bare_after_modal(words: list[str], i: int) -> bool:
    """Whether the verb at `i` is a modal whose verbs stay bare, "and" ones too.

    A negated one is not: "cannot stand jazz and avoid clubs" says the speaker
    avoids clubs, not that they cannot avoid them.
    """
    if i >= len(words) or words[i].lower() not in _MODALS - {"cannot"}:
        return False
    return i + 1 >= len(words) or words[i + 1].lower() not in ("not", "never")


def _same_past(words: list[str], i: int) -> bool:
    """Whether the verb at `i` is a past one spelt as its present ("I recently read it")."""
    if words[i].lower() not in _SAME_PAST:
        return False
    before = {w.lower() for w in words[:i]}
    after = [w.lower().strip(",;:!.") for w in words[i + 1 :]]
    joined_past = any(
        a == "and" and b.endswith("ed") and b not in _EED for a, b in itertools.pairwise(after)
    )  # "read it and loved it"
    return (
        bool(before & _PAST_LEADS) or joined_past or bool({"yesterday", "ago", "last"} & set(after))
    )


def _pronoun(m: re.Match[str]) -> str:
    return _PRONOUNS[m.group(0)]


# -- dates -----------------------------------------------------------------------------

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


def is_date(text: str) -> bool:
    """Whether text starts with a date or time ("on March 3", "next Friday", "2031")."""
    return re.match(_DATE, re.sub(_DATE_LEAD, "", text.strip(), flags=_I), _I) is not None


def date_value(text: str) -> str:
    """The date phrase of text, without leading prepositions; month and day names capitalised."""
    v = cut(re.sub(_DATE_LEAD, "", text.strip(), flags=_I), _DATE_END)
    return re.sub(rf"\b(?:{_MONTH}|{_WEEKDAY})\b", lambda m: m.group(0).capitalize(), v, flags=_I)[
        :MAX_VALUE
    ]
