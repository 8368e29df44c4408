"""What of a turn is the speaker's own statement, for the offline extractor.

Pure functions over a turn's text (and its session's earlier turns) that say
what `remem.extract.offline.extractor` must not read as something the speaker asserts
about themselves:

- role-play and games: a turn that sets one up ("let's play a game: you are a
  pirate ..."), acts in one ("*draws a sword*", "in character"), or comes after
  one was set up in the session and before it was left ("out of character",
  "game over") states nothing about the speaker;
- quoted speech: a quotation reported with a speech verb ("she said "I love
  cats"", ""I hate spicy food," he told me") is someone else's words, and is
  taken out of the turn before it is read (a whole turn in quotes, or a quoted
  title, is not speech and stays);
- a cut-off turn: the last sentence of a long punctuated turn that ends
  without punctuation on a letter ("... PromptInfuser trans") was cut off and
  is left out;
- a clause that asserts nothing durable (`not_a_statement`): a remark to the
  listener, a hypothetical, a request, a blank to fill in, a clause cut off
  mid-phrase, or one taken back as a joke ("I'm 21 jk");
- a plain statement that does not stand on its own (`leans_on_context`): a
  third person by pronoun only ("he told me ...") or a thing by pronoun only
  ("I made it with ...", "I'm obsessed with those"), which no reader of the
  record can resolve.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from remem.extract.offline.text import with_initials
from remem.model import Event

__all__ = [
    "CONTRAST",
    "HYPOTHETICAL",
    "asserted",
    "cut_off_tail",
    "in_role_play",
    "leans_on_context",
    "not_a_statement",
    "without_quoted_speech",
]

_I = re.IGNORECASE

_SETUP = (
    r"\b(?:let(?:'s|\s+us)\s+(?:play|pretend|role-?play|do\s+(?:a|some)\s+role-?play"
    r"|start\s+(?:a|the)\s+(?:game|role-?play|adventure))|role-?play\s+(?:with\s+me|as|a\s+scene)"
    r"|(?:we|you)\s+(?:can|could|will|should|must)\s+role-?play|pretend\s+(?:to\s+be"
    r"|you\s+are|that\s+you|I\s+am|we\s+are)|act\s+as\s+(?:if|though)\s+(?:you|we|I)|text\s+adventure"
    r"|(?:dungeon|game)\s+master|(?:you\s+are|you\s+will\s+be|you\s+play)\s+(?:playing\s+)?the\s+(?:role"
    r"|character)|(?:in|stay\s+in)\s+character|my\s+character\s+(?:is|will|says|does)"
    r"|play\s+(?:a|the)\s+role\s+of)"
)
_ACTING = r"(?:^|\s)\*[^*\n]{2,80}\*(?:\s|$)|\b(?:in\s+character|IC)\s*:"
_LEAVE = (
    r"\b(?:out\s+of\s+character|OOC\b|stop\s+(?:the|this|our)\s+(?:game|role-?play)|game\s+over"
    r"|end\s+(?:the|this|our)\s+(?:game|role-?play)|let(?:'s|\s+us)\s+stop\s+(?:playing|the\s+game)"
    r"|(?:back\s+to|in)\s+real\s+life|for\s+real\s+now)\b"
)


def in_role_play(text: str, context: Iterable[Event]) -> bool:
    """Whether a turn is play-acting: it sets up or acts in a game or role-play, or the
    session set one up before it and has not left it since."""
    if re.search(_LEAVE, text, _I):
        return True  # the leaving turn itself is about the game
    if re.search(_SETUP, text, _I) or re.search(_ACTING, text):
        return True
    playing = False
    for earlier in sorted(context, key=lambda e: e.time):
        if re.search(_LEAVE, earlier.text, _I):
            playing = False
        elif re.search(_SETUP, earlier.text, _I):
            playing = True
    return playing


_SPEECH_VERB = (
    r"(?:said|says|say|told|tells|tell|asked|asks|ask|wrote|writes|replied|replies|answered"
    r"|yelled|shouted|screamed|whispered|texted|messaged|goes|went|was\s+like|is\s+like"
    r"|were\s+like|quote|quoted|added|explained|insisted|claimed|announced)"
)
_QUOTED = r"[\"\u201c\u201d][^\"\u201c\u201d\n]{1,400}[\"\u201c\u201d]"


def without_quoted_speech(text: str) -> str:
    """The turn with every quotation someone is reported saying taken out.

    A quotation counts as speech when a speech verb stands within a few words
    before it ("she said: "...") or right after it (""...," he told me"); the
    sentence reporting it is dropped with it, since what is left ("she said")
    is no statement of the speaker's either.
    """
    before = rf"[^.!?\n]{{0,60}}\b{_SPEECH_VERB}\b(?:\s+\w+){{0,2}}[\s,:-]*{_QUOTED}[^.!?\n]*[.!?]*"
    after = rf"{_QUOTED}[\s,]*[^.!?\n\"]{{0,30}}\b{_SPEECH_VERB}\b[^.!?\n]*[.!?]*"
    out = re.sub(before, " ", text, flags=_I)
    return re.sub(after, " ", out, flags=_I)


def cut_off_tail(sentences: list[str]) -> list[str]:
    """The sentences without a last one that looks cut off ("... PromptInfuser trans").

    A turn of written sentences (at least three, every one but the last
    ending in punctuation, `CUT_OFF_MIN` characters or more) whose last
    sentence ends without punctuation on a letter was cut mid-sentence or
    mid-word: that sentence is left out. A short chat turn without a final
    full stop ("Hi! I love hiking") is read whole.
    """
    if len(sentences) < 3 or sum(len(s) for s in sentences) < CUT_OFF_MIN:
        return sentences
    if any(not re.search(r"[.!?\"')\]]$", s) for s in sentences[:-1]):
        return sentences
    if re.search(r"[^\W\d_]$", sentences[-1]) is None:
        return sentences
    return sentences[:-1]


CUT_OFF_MIN = 200

_PERSON = r"\b(?P<person>he|she|him|her)\b"
_PEOPLE = r"\b(?P<people>they|them)\b"
_THING = (
    # "it" before "to" is no thing in "made it to the final" (arrived), but is in "I use it
    # to ..."; nor is it in "found it hard to ...", "love it when ..."
    r"\b(?P<thing>it(?!\s+(?:is|was)\s+(?:a|an|my|our|the)\b|\s+(?:\w+\s+){1,2}(?:to|when|that|if"
    r"|how)\b|\s+(?:when|that|if|how)\b|\s+to\s+(?:(?:the|a|an|my|our)\b|(?-i:[A-Z0-9])))"
    r"|that(?=\s*(?:$|[,.;:!?)-]))|(?:this|these|those)(?=\s*(?:$|[,.;:!?)-]|\s(?:is|are|was"
    r"|were|so|and|but|for|to|with|at|in|on|of|because|when|as|too|again|now|yesterday|today"
    r"|every|one|ones|thing|things|stuff|guys|little|lately|recently|a\s+lot|all)\b)))\b"
)


def leans_on_context(clause: str) -> bool:
    """Whether a first-person clause names a person or thing only by a pronoun.

    Its main part, up to the first comma, dash or "so / because", is read,
    and a pronoun in it leans on what was said before unless the clause
    names what it stands for before it: a person ("he", "her") by a name or
    "my X", people ("they", "them") by a name, "my X" or a plural, a thing
    ("it", "those") by any of those or a noun after an article. "I made it
    with coconut milk" and "I told him about the route" lean on context; "I
    met Jon and he told me ...", "I went to a workshop and it was great" and
    "I find horror films distressing and avoid them" do not.
    """
    main = re.split(_MAIN_END, clause, maxsplit=1)[0]
    if (m := re.search(_OF_PRONOUN, main, _I)) and not re.search(r"\band\b", main[: m.start()]):
        return True  # "I'm a huge fan of it": the noun before is the phrase's own, not its referent
    for m in re.finditer(f"{_PERSON}|{_PEOPLE}|{_THING}", main, _I):
        before = main[: m.start()].split()[1:]  # not the "I" / "my" it starts with
        text = " ".join(before)
        named = any(w[:1].isupper() for w in before) or re.search(_KIN, text, _I) is not None
        plural = any(re.fullmatch(_PLURAL, w, _I) for w in before)
        if m["person"]:
            resolved = named
        elif m["people"]:
            resolved = named or plural
        else:
            resolved = named or plural or re.search(_NOUN, text, _I) is not None
        if not resolved:
            return True
    return False


_OF_PRONOUN = r"\bof\s+(?:it|them|this|that|these|those)\b(?!\s+\w)"
_NOUN = r"\b(?:a|an|the|this|that|these|those|some|his|her|their|its)\s+\w+"
_MAIN_END = r"\s*[,;:(]|\s+-\s|\s+(?:so|because|since|which|who|when)\s"
_PLURAL = r"(?!(?:this|his|its|was|has|does|is|always|perhaps|across|unless|less|yes)$)[a-z]{3,}s"
_KIN = r"\b(?:my|our)\s+\w+"


# where a statement goes on to a part of its own: "... until she lands something"
_TAIL_START = r",?\s+(?:until|til|till|because|cos|since|so|but|when|while|and|which|as)\s+|,\s+"


def without_unknown_person(text: str) -> str:
    """A statement (already in the third person) without the part that goes on about
    someone it names only as "he" or "she": "Money is going to be tight until she lands
    something" -> "Money is going to be tight". A pronoun after a name ("Tanya got laid
    off, so she ...") or "their <noun>" ("their sister ... she") is known, and a
    statement that would keep under two words is left whole."""
    m = re.search(r"\b(?:he|she|him|his)\b|\bher\b", text, _I)
    if m is None:
        return text
    before = text[: m.start()]
    if (
        any(w[:1].isupper() for w in before.split()[1:])
        or re.search(r"\b(?:their|his|her)\s+\w+", before, _I)
        or re.search(r"\b[A-Z][\w-]*'s\s+\w+", before)  # "Maria's cousin ... her"
    ):
        return text
    ends = list(re.finditer(_TAIL_START, before, _I))
    if not ends or len(before[: ends[-1].start()].split()) < 2:
        return text
    return before[: ends[-1].start()].rstrip(" ,;:")


# what chat says that holds no fact: an acknowledgement, thanks, a greeting, a laugh
CHATTER = (
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


def without_vocatives(text: str, listeners: set[str]) -> str:
    """The turn without the listener's name said to them ("..., Jon." / "Jon, I ...")."""
    for name in listeners:
        n = re.escape(name)
        text = re.sub(rf",\s*{n}(?=\s*[.!?\u2026]|\s*$)", "", text)
        text = re.sub(rf"(?:(?<=^)|(?<=[.!?]\s)){n}\s*,\s*", "", text)
    return text


def strip_end(sentence: str) -> tuple[str, bool]:
    """The sentence without trailing punctuation and politeness; whether it asked a question."""
    question = re.search(r"\?[^\w]*$", sentence) is not None
    body = re.sub(r"[^\w$\u20ac\u00a3\u00a5%)\"']+$", "", sentence)
    tail = r"(?<!must)(?<!essential)(?<!important)(?<!crucial)(?<!necessity)(?<!priority)"
    # "a bit of cheese is ok": after a verb of being, "ok" is what is said, not a sign-off
    tail += r"(?<!\bis)(?<!\bare)(?<!\bam)(?<!\bwas)(?<!\bwere)(?<!\bbe)(?<!\bbeing)"
    tail += r"(?:[\s,]+(?:please|pls|plz|thanks|thank\s+you|thx|ty|for\s+me|for\s+next\s+time"
    tail += r"|for\s+later"
    tail += r"|for\s+the\s+future|for\s+future\s+reference|ok|okay|lol|haha|by\s+the\s+way|btw"
    tail += r"|fyi|just\s+so\s+you\s+know|just\s+saying|take\s+a\s+look|have\s+a\s+look"
    tail += r"|check\s+it\s+out|look\s+at\s+(?:this|that)|trust\s+me|believe\s+me))+$"
    return with_initials(re.sub(tail, "", body, flags=_I).strip(" ,")), question


# -- what a clause asserts ---------------------------------------------------------------

# the listener, also in chat spelling ("keep ya posted", "love u"; "U.S." is no one)
_LISTENER = (
    r"\b(?:you|your|yours|yourself|yourselves|y'?all|ya'll)\b|(?<=\w\s)ya\b"
    r"|(?-i:\b(?:u|ur)\b)(?!\.)"
)
HYPOTHETICAL = (
    r"(?:if|suppose|supposing|imagine|assuming|assume|what\s+if|let\s+us\s+say|say|in\s+case"
    r"|unless|when\s+I\s+(?:grow\s+up|retire))\b"
    r"|.*\b(?:if\s+(?:I|we)\s+(?:had|were|was|could|would|did|won|lost|got)|were\s+to"
    r"|would\s+have)\b|.*(?:,|\b(?:but|and|so|or))\s+(?:if|unless)\s+[^,]*$"
)
CONTRAST = r";|\b(?:but|although|though|whereas)\b"  # ends what a condition governs


def asserted(part: str) -> bool:
    """Whether a clause said after a condition is asserted, not governed by it."""
    return not re.match(HYPOTHETICAL, part, _I) and not re.search(_MODAL, part, _I)


_MODAL = r"\b(?:would|could|might)\b|'d\b"
_REQUEST = (
    r"(?:please|pls|help|tell|give|write|explain|convert|make|show|list|find|suggest|recommend"
    r"|translate|summari[sz]e|rewrite|create|generate|fix|let\s+me|let\s+us|describe|compare"
    r"|correct|check|answer|solve|calculate|draft|edit|improve|provide|continue|complete|design"
    r"|imagine|pretend|act\s+as|consider|read|use|add|remove|change|keep|take|look)\b"
)
_DANGLING = (
    r".*\b(?:to|of|the|a|an|and|or|but|be|for|with|that|which|in|on|at|from|by|is|are|was|my"
    r"|our|their|as|than|into|about|will|would|can|could|should|must|shall|have|has"
    r"|had|do|does|did|am|were|been|being|not|very|just|even|also|if|when|because|since|though"
    r"|although|while|where|who|whose|his|her|its)$"
)


def not_a_statement(text: str) -> bool:
    """A clause that asserts nothing durable about its speaker.

    Remarks to or about the listener ("I'm so proud of you"), hypotheticals
    ("if I had more time ..."), requests to the assistant ("write me a poem"),
    blanks to fill in ("I ____ enough money"), clauses cut off mid-phrase
    ("... testing of") and what is taken back as a joke ("I'm 21 jk").
    """
    return (
        re.search(_LISTENER, text, _I) is not None
        or re.match(HYPOTHETICAL, text, _I) is not None
        or re.match(_REQUEST, text, _I) is not None
        or "__" in text
        or re.fullmatch(_DANGLING, text, _I) is not None
        or re.search(_JOKING, text[-20:], _I) is not None
    )


# "... jk": what was said is taken back
_JOKING = r"\b(?:jk|j/k|just\s+kidding|just\s+joking|kidding)\W*$"
