"""A first-person clause as a third-person statement: "I prefer aisle seats" -> "Prefers
aisle seats", "Caroline prefers aisle seats" when the speaker is named.

Only the verbs are conjugated, the speaker's and those "and" joins to it, and
English decides which words those are: a noun stays a noun ("love and support",
"the look and feel", "support I got"), a "to" that names a thing is no
infinitive's ("an aversion to crowds and prefers"), a verb that hangs on a
modal or on another clause's subject stays bare, a past "read" stays past, and
a misspelt adverb is still an adverb. A question tag ("..., shouldn't I") and a
dangling dash are dropped.
"""

from __future__ import annotations

import itertools
import re

from remem.extract.offline.text import LY_VERBS, MAX_TEXT, with_initials

_I = re.IGNORECASE

_LEAD_ADVERBS = frozenset(
    "really also just now currently still actually recently finally definitely absolutely "
    "totally usually generally always truly honestly so very much mostly already originally "
    "officially genuinely seriously never often sometimes rarely seldom even only mainly "
    "normally typically occasionally hardly barely ever once literally basically kinda sorta "
    "probably maybe apparently obviously".split()
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
_SAME_PAST = frozenset("read split".split())
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
    return len(w) > 4 and w.endswith("ly") and re.fullmatch(LY_VERBS, w) is None


def third_singular(verb: str) -> str:
    """A verb's third person singular: "live" -> "lives", "are" -> "is"; a past form stays."""
    w = verb.lower()
    special = {"am": "is", "are": "is", "have": "has", "do": "does", "go": "goes", "be": "is"}
    if w in special:
        return special[w]
    if re.fullmatch(r"[a-z]+(?:-[a-z]+)+", w):  # "color-code" -> "color-codes"
        head, _, last = verb.rpartition("-")
        return f"{head}-{third_singular(last)}"
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
            words[i] = third_singular(words[i])
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
                words[k] = third_singular(words[k])
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


def hedged(hedge: str, clause: str, speaker: str | None) -> str:
    """The clause said with its hedge: "Thinks they are allergic to kiwi", "Ann is not
    sure but they think ...", "Maybe they prefer tea", "Probably Ann's favourite ..."."""
    clause = re.sub(r"^(My|Our)\b", lambda m: m.group(1).lower(), clause)
    if speaker and re.fullmatch(r"probably|maybe|perhaps|possibly", hedge, _I):
        return f"{hedge[:1].upper()}{hedge[1:].lower()} {third_person(clause, speaker)}"
    return third_person(f"{hedge} {clause}", speaker)


def with_lead(lead: str, text: str, speaker: str | None) -> str:
    """The statement with the qualifier said before it ("Due to X, needs to avoid Y")."""
    if not (speaker and text.startswith(speaker)):
        text = text[:1].lower() + text[1:]
    return third_person(f"{lead}, {text}")


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
    return shaped and word.isalpha() and re.fullmatch(LY_VERBS, word) is None


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
