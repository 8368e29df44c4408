"""How chat is written, read so that a record is a whole statement in plain English.

Pure functions over one normalised sentence or clause (`remem.extract.offline.text`
already spells chat words out: "gf" -> "girlfriend", "tho" -> "though"):

- `without_chatter`: a clause without the filler chat ends on ("... tho", "... lol",
  "... anyway", "..., so yeah", an emoji or ":)"); `without_fragment`: without a last
  piece after "so" that is no clause ("I get hay fever every spring so antihistamines"
  -> "I get hay fever every spring"). What says something stays: "... so I carry
  antihistamines" is a clause, "... so no pets" a constraint said short;
- `with_owner`: a person of the speaker's said without "my", as chat does ("mum
  lives in York", "gf rose is vegan"), said with it ("my mum lives in York", "my
  girlfriend Rose is vegan"), and a lower-case name after the relation capitalised;
- `laughed_off` and `momentary`: a sentence that ends on a laugh or a groan ("lol",
  "haha", "ugh", a laughing emoji) and tells of a moment ("Cat just knocked my tea over
  again lol") is chatter: no long-term record is made of it (it stays in the event
  log). A lasting change told the same way ("I just adopted a puppy lol") is kept;
- `uncleft`: a cleft that singles its subject out, read as its clause: "I'm the one
  (at home) who can't handle spicy food" -> "I cannot handle spicy food", "it's my
  husband who's vegetarian" -> "my husband is vegetarian".

Every pattern is bounded: the tails are read a word at a time from the end, and no
pattern has a repeat inside a repeat.
"""

from __future__ import annotations

import re
import unicodedata

from remem.extract.offline.generic import FINITE

__all__ = [
    "laughed_off",
    "momentary",
    "uncleft",
    "with_owner",
    "without_chatter",
    "without_fragment",
]

_I = re.IGNORECASE

# words chat ends a statement on that add nothing to it
_FILLER_WORDS = frozenset(
    "though anyway anyways lol lel lmao lmfao rofl tbh ngl fwiw imo imho innit smh omg ffs "
    "idk yeah yep ya haha hehe xd".split()
)
# the same, two or three words long: "so yeah", "and stuff", "or whatever"
_FILLER_PHRASES = (
    r"(?:so|and|but)\s+(?:yeah|yea|ya|anyway|anyways|idk|ya\s+know|you\s+know)"
    r"|and\s+(?:stuff|things|all\s+that|that|everything)|or\s+whatever|ya\s+know|you\s+know"
    r"|if\s+that\s+(?:helps|matters|makes\s+sense)|just\s+saying|for\s+what\s+it\s+is\s+worth"
)
_LAUGH = r"(?:l+o+l+z*|lmf?ao+|rofl|(?:ha){2,}h?|(?:he){2,}|x+d+)"
_EMOTICON = r"(?:[:;=8][-'^]?[)(\]\[dpo3/\\|*]+|<3+|\^_*\^|x+|xo+(?:xo)*)"
_SEPARATORS = " ,;"
_CONJUNCTIONS = frozenset("so and but or".split())
_LONGEST = 40  # characters of the longest filler word or phrase looked for


def _symbols_end(text: str, end: int) -> int:
    """Where `text[:end]` ends without the emoji, symbols and punctuation at its end."""
    while end and (
        unicodedata.category(text[end - 1]) in ("So", "Sk", "Cs", "Mn", "Cf")
        or text[end - 1] in " \ufe0f\u200d.!?,;"
    ):
        end -= 1
    return end


def _last_word(text: str, end: int) -> tuple[int, str]:
    """The start and the last word of `text[:end]` (which ends on no separator), looked
    for in its last `_LONGEST` characters only: a longer word is no filler ("")."""
    low = max(0, end - _LONGEST)
    start = max(text.rfind(c, low, end) for c in _SEPARATORS) + 1
    if start == 0 and low > 0:
        return end, ""
    return start, text[start:end]


def _is_filler(word: str, first: bool) -> bool:
    if word.lower() in _FILLER_WORDS or re.fullmatch(_LAUGH, word, _I):
        return True
    # an emoticon after the words, never a capital "X" ("a Model X")
    return not first and not word[:1].isupper() and re.fullmatch(_EMOTICON, word, _I) is not None


def without_chatter(text: str) -> str:
    """The clause without the filler and emoji it ends on.

    Read a word at a time from the end (each step looks at most at the last
    `_LONGEST` characters), so a clause costs time in proportion to its length."""
    end = len(text)
    cut = False
    while True:
        end = _symbols_end(text, end)
        start, word = _last_word(text, end)
        if word and (_is_filler(word, first=start == 0) or (cut and word.lower() in _CONJUNCTIONS)):
            end, cut = start, True  # "..., so yeah": the "so" left hangs on nothing
            continue
        tail_start = max(0, end - _LONGEST)
        m = re.search(rf"[\s,;]+(?:{_FILLER_PHRASES})$", text[tail_start:end], _I)
        if m is None:
            break
        end, cut = tail_start + m.start(), True
    return text[:end].rstrip(" ,;-")


# a piece after "so" that is a clause, or a constraint said short ("so no pets")
_CLAUSE_WORDS = (
    r"\b(?:I|we|you|he|she|they|it|there|my|our|no|not|never|nothing|none|nobody|only|can|cannot"
    r"|will|must|have|has|had|am|is|are|was|were|do|does|did|need|needs|take|takes|keep|keeps"
    r"|carry|carries|use|uses|get|gets|got|go|goes|went|avoid|avoids|bring|brings|make|makes"
    r"|done|over|gone|sorted|finished|through"
    r"|[a-z]{2,}ing|[a-z]{2,}ed)\b"
)
# words "so" says the degree of, not a consequence: "I love it so much"
_INTENSIFIED = frozenset("much many far long often well badly hard little few".split())
# words after which a word after "so" says how, not what follows: "I am so tired"
_BEFORE_AN_ADJECTIVE = frozenset(
    "am is are was were be been being feel feels felt seem seems seemed look looks looked "
    "get gets got getting make makes made me him her them us it you sound sounds".split()
)
_SO_TAIL = r"(?:,\s*|\s+)(?:and\s+)?so\s+(?P<piece>[^\s,;]+(?:\s+[^\s,;]+){0,2})$"
# a word that makes a piece a phrase of its own, not a bare noun: "so food matters a lot"
_PHRASE_WORDS = r"\b(?:a|an|the|this|that|these|those|some|any|his|her|their|its|your)\b"


def without_fragment(text: str) -> str:
    """`text` without a last piece after "so" of at most three words and no verb,
    subject or determiner: "I get hay fever every spring so antihistamines". The extractor reads a
    clause so only when what is left still states something (else it is read whole)."""
    m = re.search(_SO_TAIL, text[-80:], _I)
    if m is None or re.search(f"{_CLAUSE_WORDS}|{_PHRASE_WORDS}|{FINITE}", m["piece"], _I):
        return text
    if any(re.fullmatch(r"[a-z]+[^s]s", w, _I) for w in m["piece"].split()[1:]):
        return text  # "so food matters": a verb after its subject
    if m["piece"].split()[0].lower() in _INTENSIFIED:
        return text  # "I love hiking so much": "so" says how much, no piece of its own
    start = len(text) - min(len(text), 80) + m.start()
    head = text[:start].rstrip(" ,;")
    words = head.split()
    if len(words) < 3 or words[-1].lower() in _BEFORE_AN_ADJECTIVE:
        return text  # "I am so tired", "they make me so happy"
    return head


# a person of the speaker's whom chat names without "my": "mum lives in York" (one
# person: "kids are resilient" is said of kids at large)
_KIN = (
    r"(?:wife|husband|partner|boyfriend|girlfriend|fianc[e\u00e9]e?|mum|mom|mother|dad|father"
    r"|brother|sister|son|daughter|grandma|grandpa|granny|gran|grandad|granddad|nan|nana|aunt"
    r"|uncle|cousin|niece|nephew|flatmate|housemate|roommate|boss|landlord|landlady"
    r"|best\s+friend|(?:mother|father|sister|brother)-in-law)"
)
_KIN_ADJ = r"(?:(?:little|big|older|younger|baby|twin|eldest|oldest|youngest)\s+)?"
# what may follow the person: a verb of their own ("mum lives ...", "dad is ...")
_OWN_VERB = (
    r"(?:is|was|are|were|has|have|had|does|do|did|can|cannot|could|will|would|should|must"
    r"|just|also|still|always|never|really|only|now|recently|finally|already|got|went|said"
    r"|lives|works|loves|likes|hates|says|thinks|wants|needs|eats|drinks|runs|plays|teaches"
    r"|studies|owns|drives|cooks|goes|gets|keeps|makes|takes|uses|prefers|[a-z]{2,}ed)\b"
)
# ... and after a lower-case name, one person's verb ("gf rose is ...", not "dad jokes are")
_NAMED_VERB = (
    r"(?:is|was|has|had|does|did|can|cannot|could|will|would|should|must|just|also|still"
    r"|always|never|really|lives|works|loves|likes|hates|says|thinks|wants|needs|got|went)\b"
)
_NOT_NAMES = frozenset(
    "is was are were has have had does do did can cannot could will would should must just "
    "also still always never really only now recently finally already got went said and or "
    "but so the a an my our his her their of in on at to for with from too who that which "
    "this these those here there says thinks wants needs loves likes hates lives works".split()
)
_OWNERLESS = re.compile(
    rf"(?P<my>(?:my|our)\s+)?(?P<rel>{_KIN_ADJ}{_KIN})"
    rf"(?:\s+(?P<name>(?!(?:{'|'.join(sorted(_NOT_NAMES))})\b)[a-z][a-z'-]+)(?=\s+{_NAMED_VERB})"
    rf"|(?=\s+{_OWN_VERB}))",
    _I,
)


def with_owner(clause: str) -> str:
    """A clause that starts with a person of the speaker's said without "my" (or with a
    lower-case name), said with it: "gf rose is vegan" -> "my girlfriend Rose is vegan"."""
    m = _OWNERLESS.match(clause)
    if m is None:
        return clause
    name = m["name"]
    if name is not None and name.endswith("ly"):
        return clause
    if m["my"] and (name is None or name[:1].isupper()):
        return clause  # "my mum lives in York": said whole already
    if not m["my"] and name and name[:1].isupper():
        return clause  # "Mother Nature is ...", "Sister Act is ...": a title, a name of its own
    owner = m["my"].strip().lower() if m["my"] else "my"
    said = f" {name[:1].upper()}{name[1:]}" if name else ""
    return f"{owner} {m['rel'].lower()}{said}{clause[m.end() :]}"


# what a sentence ends on when it laughs or groans at what it tells
_GROAN = rf"{_LAUGH}|ugh+|omg|smh|ffs|typical|classic|facepalm|oops|whoops|derp"
_LAUGH_EMOJI = (
    r"[\U0001f602\U0001f923\U0001f605\U0001f606\U0001f62d\U0001f926\U0001f937\U0001f648"
    r"\U0001f644\U0001f611\U0001f612\U0001f629\U0001f62b\U0001f92a\U0001f643]"
)


def laughed_off(sentence: str) -> bool:
    """Whether a sentence laughs or groans at what it tells: it ends on a laugh, a groan
    or a laughing emoji ("... again lol", "... \U0001f602"), or starts with a groan ("Ugh,
    ..."); a laugh it starts with answers what was said before it."""
    s = sentence.rstrip()
    end = _symbols_end(s, len(s))
    if re.search(_LAUGH_EMOJI, s[end:]):
        return True
    if re.fullmatch(_GROAN, _last_word(s, end)[1], _I):
        return True
    return re.match(r"(?:ugh+|omg|ffs|typical|smh)\b", s, _I) is not None


_MOMENT = (
    r"\b(?:just|again|today|tonight|this\s+(?:morning|afternoon|evening)|right\s+now|earlier"
    r"|a\s+(?:minute|moment|second)\s+ago)\b"
)
# a change that lasts, told as laughingly as a mishap: kept
_LASTING = (
    r"\b(?:adopted|bought|moved|started|joined|married|engaged|signed|enrolled|graduated|hired"
    r"|promoted|booked|passed|quit|left|finished|won|diagnosed|pregnant|born|named|called"
    r"|got\s+(?:a|an|my|our|into|married|engaged|promoted|hired|accepted)|first|new|turned"
    r"|retired|broke\s+up|split\s+up|became|decided)\b"
)


# what is done again and again: no moment
_HABIT = (
    r"\b(?:every|usually|always|often|normally|generally|nights|mornings|evenings|weekends"
    r"|(?:mon|tues|wednes|thurs|fri|satur|sun)days|most\s+days|all\s+the\s+time)\b"
)


def momentary(clause: str) -> bool:
    """Whether a clause tells, in its main part (up to a comma, a dash or "so"), of a
    moment ("just", "again", "this morning") and of no change that lasts or habit:
    "I drive nights to pay for school, sitting in a car park right now" tells of a habit."""
    main = re.split(r"\s*[,;:]\s*|\s+-\s+|\s+(?:so|because|but)\s+", clause, maxsplit=1)[0]
    return (
        re.search(_MOMENT, main, _I) is not None
        and re.search(_LASTING, main, _I) is None
        and re.search(_HABIT, clause, _I) is None
    )


# -- a cleft sentence: "I'm the one who can't handle spicy food" -------------------------

# among whom the one is singled out: "at home", "in the family", "of us", "here"
_AMONG = r"(?:\s+(?:(?:at|in|of|around|from)\s+(?:[\w'-]+\s+){0,2}?[\w'-]+|here))?"
_THE_ONE = rf"(?:is|'s|am|are)\s+the\s+(?:only\s+)?(?:one|person){_AMONG}\s+(?:who|that)\s+"
_CLEFT_I = re.compile(rf"I\s+{_THE_ONE}(?P<rest>\S.*)", _I)
_CLEFT_IT_ME = re.compile(r"it\s+is\s+(?:me|I)\s+(?:who|that)\s+(?P<rest>\S.*)", _I)
_SOMEONE = r"(?P<who>(?:my|our)\s+[\w-]+(?:\s+[\w-]+){0,2}?|(?-i:[A-Z])[a-z]+)"
_CLEFT_THEM = re.compile(rf"{_SOMEONE}\s*{_THE_ONE}(?P<rest>\S.*)", _I)
_CLEFT_IT_THEM = re.compile(rf"it\s+is\s+{_SOMEONE}\s+(?:who|that)\s+(?P<rest>\S.*)", _I)
# who a cleft's subject cannot be read as: "this is the one that broke"
_NO_ONE = frozenset("it this that he she they which what there here mine ours".split())
_FIRST_PERSON = {"is": "am", "has": "have", "does": "do", "goes": "go", "was": "was"}
_ADVERBS = frozenset(
    "always never usually really just also still actually only often sometimes even "
    "definitely totally".split()
)


def _said_by_me(rest: str) -> str:
    """A third-person verb phrase said of "I": "always cooks" -> "always cook"."""
    words = rest.split(" ")
    i = 0
    while i < len(words) - 1 and (words[i].lower() in _ADVERBS or words[i].lower().endswith("ly")):
        i += 1
    w = words[i]
    low = w.lower()
    if low in _FIRST_PERSON:
        words[i] = _FIRST_PERSON[low]
    elif re.fullmatch(r"[a-z]+(?:ch|sh|ss|x|z)es", low):
        words[i] = w[:-2]
    elif re.fullmatch(r"[a-z]+[^aeiou]ies", low):
        words[i] = w[:-3] + "y"
    elif re.fullmatch(r"[a-z]+[^su]s", low):
        words[i] = w[:-1]
    return " ".join(words)


def uncleft(clause: str) -> str:
    """The clause without the cleft that singles its subject out: "I am the one who
    cannot handle spicy food" -> "I cannot handle spicy food"; "my husband is the one
    who is vegetarian" / "it is my husband who is vegetarian" -> "my husband is
    vegetarian". Anything else is returned as it is."""
    if m := _CLEFT_I.fullmatch(clause) or _CLEFT_IT_ME.fullmatch(clause):
        return f"I {_said_by_me(m['rest'])}"
    if m := _CLEFT_THEM.fullmatch(clause) or _CLEFT_IT_THEM.fullmatch(clause):
        if m["who"].lower() in _NO_ONE:
            return clause
        return f"{m['who']} {m['rest']}"
    return clause
