"""Text pieces of the offline extractor: normalising, splitting, values, dates.

Pure string functions shared by `remem.extract.offline.extractor` and its rules: contractions
are expanded before matching ("I'm" -> "I am"), values are normalised so that equal
things compare equal ("$1,500" -> "$1500", "peanuts" -> field key "peanut"). Turning a
first-person clause into a third-person statement is `remem.extract.offline.person`.
"""

from __future__ import annotations

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
    "couldnt": "couldn't", "wouldnt": "wouldn't", "shouldnt": "shouldn't", "hasnt": "hasn't",
    "hadnt": "hadn't", "werent": "weren't", "theyre": "they're", "theyve": "they've",
    "weve": "we've", "youve": "you've", "whats": "what's", "theres": "there's",
}  # fmt: skip
# chat words for people and things, said in whole words so a record reads as English
# ("Gf rose is vegan" -> "Girlfriend Rose is vegan"); a capital said on one is kept
_CHAT_WORDS = {
    "gf": "girlfriend", "bf": "boyfriend", "bff": "best friend", "bestie": "best friend",
    "hubby": "husband", "hubs": "husband", "wifey": "wife",
    "lil": "little", "kiddo": "kid", "kiddos": "kids", "mam": "mum", "roomie": "roommate",
    "bday": "birthday", "b-day": "birthday", "fave": "favourite", "fav": "favourite",
    "tho": "though", "tmrw": "tomorrow", "tmr": "tomorrow", "tomoz": "tomorrow",
    "tonite": "tonight", "w/": "with", "w/o": "without", "coz": "because",
}  # fmt: skip
# said to someone ("thanks bro", "BRO this is wild") as often as of a sibling, or for
# "because" ("cuz"): a relative only after whose they are ("my bro", "her lil sis")
_SIBLING = re.compile(
    r"\b(?P<whose>my|our|his|her|their|your|little|lil|big|older|younger|baby|twin)\s+"
    r"(?P<who>bro|sis|cuz)(?![\w'/-])",
    re.IGNORECASE,
)
_SIBLINGS = {"bro": "brother", "sis": "sister", "cuz": "cousin"}
_CHAT_WORD = re.compile(
    r"(?<![\w'/-])(?:"
    + "|".join(sorted(map(re.escape, _CHAT_WORDS), key=len, reverse=True))
    + r")(?![\w'/-])",
    re.IGNORECASE,
)
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
    t = _CHAT_WORD.sub(_whole_word, t)
    t = _SIBLING.sub(_sibling, t)
    t = re.sub(r"(?<![\w.'])i(?=\s|')", "I", t)
    t = re.sub(r"(?<=[a-z]{2})- (?!(?:and|or|to)\b)(?=[a-z])", " - ", t)  # "sunset- it"
    for pattern, repl in _EXPANSIONS:
        t = re.sub(pattern, repl, t, flags=_I)
    return t


def _whole_word(m: re.Match[str]) -> str:
    said = m.group(0)
    word = _CHAT_WORDS[said.lower()]
    title = said[:1].isupper() and not said[1:].isupper()  # "Gf", not "GF"
    return word[:1].upper() + word[1:] if title else word


def _sibling(m: re.Match[str]) -> str:
    return f"{m['whose']} {_SIBLINGS[m['who'].lower()]}"


def sentences(text: str) -> list[str]:
    """Split text into sentences, keeping each one's final punctuation.

    A part that ends in an abbreviation ("Dr.") or in initials followed by more of
    the sentence ("the U.S. in 2019") does not end it. Both are read off the part's
    last `_TAIL` characters, never the whole sentence so far, so a turn of 100,000
    characters of "Dr. Dr. ..." or "a.a.a..." is split in linear time."""
    out: list[str] = []
    for line in normalise(text).splitlines():
        line = re.sub(r"^(?:[-*\u2022>]+|\d+[.)])\s+", "", " ".join(line.split()))
        buf: list[str] = []
        parts = re.split(r"(?<=[.!?\u2026])\s+", line)
        for n, part in enumerate(parts):
            buf.append(part)
            tail = part[-_TAIL:]  # with the character before a match, for its \b
            if re.search(r"\b(?:dr|mr|mrs|ms|st|prof|e\.g|i\.e|vs|approx|etc)\.$", tail, _I):
                continue
            # "the U.S. in 2019", "at 9 a.m. tomorrow": initials, then the sentence goes on
            # (initials end the part when its last two letters and dots do)
            later = parts[n + 1] if n + 1 < len(parts) else ""
            if re.search(r"\b[a-z]\.[a-z]\.$", tail, _I) and re.match(r"[a-z0-9]", later):
                continue
            out.append(" ".join(buf))
            buf = []
        if buf:
            out.append(" ".join(buf))
    return [s for s in out if s]


# the characters of a part `sentences` looks at for an abbreviation or initials at its
# end: the longest ("approx.", 7) and the one before it
_TAIL = 8


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

LY_VERBS = (
    "apply|reply|rely|supply|multiply|comply|imply|rally|tally|bully|sully|dally|ally|fly|wrongly"
)
# adverbs in -ly that ADV names itself: its any-word-in-ly does not read them too, for
# a word read two ways is a choice the regex backtracks into, and a run of n of them
# ("really really ... really x", no match) took 2**n steps (18: 35 s)
_LY_NAMED = (
    "really|actually|recently|finally|definitely|absolutely|totally|usually|generally|truly"
    "|honestly|mostly|originally|officially|genuinely|seriously"
)
ADV = (
    r"(?:(?:really|also|just|now|currently|still|actually|recently|finally|definitely"
    r"|absolutely|totally|usually|generally|always|truly|honestly|so|very|much|mostly|already"
    r"|originally|officially|genuinely|seriously|kind\s+of|sort\s+of|pretty\s+much"
    rf"|(?!(?:{LY_VERBS}|{_LY_NAMED})\b)[a-z]{{3,}}ly)\s+)*"
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
# "... York and works at the library", "... Leeds and she loves it": a clause of its own
# after "and" (a subject, or a verb of the same subject), where a name goes on ("Trinidad
# and Tobago")
NEXT_CLAUSE = (
    r"and\s+(?:(?:also|then|now|still|just)\s+)?(?:I|we|he|she|they|my|our|his|her|their"
    r"|works?|lives?|has|have|is|are|was|were|teach(?:es)?|stud(?:y|ies)|goes|runs?|owns?"
    r"|plays?|loves?|likes?|hates?|enjoys?|does|did|got|went|moved|became)\b"
)
VALUE_END = (
    r"\s*[,;:(]|\s+-\s|\s+"
    + NEXT_CLAUSE
    + r"|\s+"
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


def between_kept(pieces: list[str]) -> list[str]:
    """Split pieces (text, separator, text ...) with "between X and my Y" made whole
    again: "between this and our own wedding I'm drowning" is one clause, not "our own
    wedding I'm drowning"."""
    out = pieces[:1]
    for sep, part in zip(pieces[1::2], pieces[2::2], strict=True):
        if re.search(r"\band\s*$", sep, _I) and re.search(
            r"\bbetween\s+(?:[\w'-]+\s+){0,3}[\w'-]+$", out[-1], _I
        ):
            out[-1] = f"{out[-1]}{sep}{part}"
        else:
            out += [sep, part]
    return out
