"""Someone the speaker introduced by name, said again by the name alone or by "he" / "she".

"My daughter Mia turns 7 on Saturday" introduces Mia; "Mia is allergic to peanuts"
said later in the session is then read as "my daughter Mia is allergic to peanuts",
and the rules read that as they read any "my <relation>" ("Daughter Mia is allergic
to peanuts", "Priya's daughter Mia ..." when the speaker is named). A person is
introduced as "my <relation> <Name>", "<Name>, my <relation>", "my <relation>,
<Name>,", "my <relation>'s name is <Name>" / "my <relation> is called <Name>" or "I
have a <relation> named <Name>" by the same speaker, in the turn or an earlier one
of the session.

Only what cannot be misread is read so: a name introduced for two relations, a
name the speaker or the listener goes by, a name with nothing after it that a
subject's verb could be ("Will you ...", "Mark the date") and a word never
introduced as a name ("Will", "June", "Rose" at a sentence start) stay as said. A
"he" / "she" (and "his" / "her") is read only at the start of the sentence right
after one that names the person and no one else, and only when the relation says
the person is a man or a woman ("my sister", not "my friend"); a "they" / "their"
only when it says neither ("my friend Sam") and that sentence holds no plural
"they" could mean. The sentence before may end the speaker's previous turn when
only the assistant's reply came between and it names no one else
(`People.across`): "My son Leo has a nut allergy." - "Does he react to tree nuts?"
- "He also can't have dairy." A pronoun that could mean two people, or someone the
reply names, is left as said, and a clause of "he" stores nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from remem.extract.offline.person import is_adverb, third_singular
from remem.extract.offline.rules import RELATION, RELATION_ADJ
from remem.extract.offline.text import normalise, sentences

__all__ = ["NAME", "NOT_NAMES", "PLURAL", "People", "Person", "apposed", "introduced", "self_names"]

_I = re.IGNORECASE

# a first name (or a first name and a surname), capitalised, letters only
NAME = r"(?-i:[A-Z\u00c0-\u00d6\u00d8-\u00de][a-z\u00df-\u00f6\u00f8-\u00ff]+)"
_WHO = rf"(?P<n>{NAME})(?:\s(?P<s>{NAME}))?"
# the relations one person can be: "my kids Mia" names no kid
PLURAL = frozenset("parents kids children grandparents in-laws".split())
_REL = rf"(?P<adj>(?:other\s)?{RELATION_ADJ})(?P<r>{RELATION})"  # "my other sister Bec"
# after an introduction: the end of the phrase, not a list going on ("Tom, my brother, and Ana")
_ENDS = r"(?=\s?(?:[,.;:!?)]|$))(?!,\s(?:and|or)\b)"
_INTRODUCTIONS = (
    re.compile(rf"\b(?P<my>my|our)\s{_REL}\s{_WHO}\b(?!-)", _I),  # my daughter Mia
    re.compile(rf"\b(?P<my>my|our)\s{_REL},\s{_WHO}{_ENDS}", _I),  # my son, Leo,
    re.compile(rf"(?<![\w'-]){_WHO},\s(?P<my>my|our)\s{_REL}{_ENDS}", _I),  # Sofia, my niece,
    # my son's name is Leo, my son is called Leo
    re.compile(
        rf"\b(?P<my>my|our)\s{_REL}(?:'s\sname\sis|\sis\s(?:called|named)|\sgoes\sby)"
        rf"\s{_WHO}\b(?!-)",
        _I,
    ),
    # I have a daughter named Mia, we've got a dog called Rex
    re.compile(
        r"\b(?P<we>I|we)(?:'ve|\shave)?\s(?:also\s|still\s)?(?:have|got|have\sgot)?\s?"
        rf"(?:a|an|one|another)\s{_REL}\s(?:called|named)\s{_WHO}\b(?!-)",
        _I,
    ),
)
_MY = re.compile(r"\b(?:my|our|named|called)\s", _I)
# capitalised words that begin a sentence before a comma and are no one's name
NOT_NAMES = frozenset(
    "oh ah well so also and but yes yeah yep no nope ok okay thanks thank hi hey hello dear "
    "sorry please anyway anyways honestly actually basically sadly luckily unfortunately "
    "fortunately thankfully hopefully obviously apparently seriously clearly surely really "
    "personally frankly literally originally currently usually generally normally eventually "
    "lately naturally certainly definitely probably possibly recently finally today tomorrow "
    "yesterday tonight now then also plus btw meanwhile besides however still anyhow alright "
    "great wow cool congrats congratulations guys everyone folks love honey sweetie babe "
    "monday tuesday wednesday thursday friday saturday sunday the this that these those it "
    "he she they we you who what when where why how which my our your his her their its "
    "mom mum dad mommy mummy daddy mama papa grandma grandpa granny nana lol haha omg ugh um "
    "hmm".split()
)
_FEMALE = frozenset(
    "wife girlfriend fiancee fianc\u00e9e daughter mom mum mother sister grandma grandmother "
    "granny gran nan nana granddaughter aunt niece landlady stepmom stepmum step-mom step-mum "
    "stepdaughter step-daughter mother-in-law sister-in-law".split()
)
_MALE = frozenset(
    "husband boyfriend fiance fianc\u00e9 son dad father brother grandpa grandfather grandad "
    "granddad grandson uncle nephew landlord stepdad step-dad stepson step-son father-in-law "
    "brother-in-law".split()
)
# what follows a name that is no subject's verb: "Will you ...", "Mark the date", "Rose to"
_NOT_VERBS = frozenset(
    "the a an this that these those my your our his her their its it you we they he she me us "
    "him them there or nor but who whom whose which what when where why how if than then so to "
    "of in on at for with by from as".split()
)
_START = re.compile(rf"{_WHO}(?P<poss>'s)?\s(?P<next>[a-z][\w'-]*)(?P<i>\sI\b)?")
_AND_I = re.compile(r"\sI\b")
_PRONOUN_START = re.compile(
    r"(?P<p>(?i:he|she|his|her|they|their))(?P<c>'s|'re)?\s(?P<next>[a-z0-9][\w'-]*)"
)
_KIN = re.compile(rf"\b(?:my|our|his|her|their|your)\s{_REL}\b", _I)
# words a sentence may start with that name no one
_STARTERS = NOT_NAMES | frozenset(
    "after before last when while at on in during since we then there here just".split()
)
# a capitalised word after one of these is a place or a time, not another person
_PLACE_WORDS = frozenset(
    "in to from at near of on for around across visit visited visiting like until since".split()
)


@dataclass(frozen=True, slots=True)
class Person:
    """Someone the speaker introduced: "my daughter Mia" is `said`, "daughter" the relation."""

    name: str
    surname: str
    said: str
    relation: str

    @property
    def pronoun(self) -> str:
        """ "she" or "he" when the relation says which, else ""."""
        r = self.relation.lower()
        return "she" if r in _FEMALE else "he" if r in _MALE else ""


@dataclass(frozen=True, slots=True)
class People:
    """The people a speaker introduced by name in a session, by first name."""

    by_name: dict[str, Person] = field(default_factory=dict)

    def named(self, clause: str, before: str | None = None, *, they: bool = True) -> str:
        """The clause with its subject said as the speaker introduced them.

        "Mia is allergic to peanuts" -> "my daughter Mia is allergic to peanuts"; with
        `before`, the sentence said right before it in the same turn, "She lives in
        Bristol" -> "my sister Ana lives in Bristol" when `before` names Ana and no
        one else. A "they" / "their" is read so only for a relation that says no sex
        ("my friend Sam"), when `they` and `before` holds no plural that "they" could be
        (`_plural_in`): "My friend Sam is vegan. They also don't drink." Anything else is
        returned as it is.
        """
        if not self.by_name:
            return clause
        if (m := _START.match(clause)) and (person := self.by_name.get(m["n"])):
            if m["next"] in _NOT_VERBS or (m["next"] == "and" and not m["i"]):
                return clause
            if m["poss"] and m["next"] in ("is", "was", "are", "were"):
                return clause  # "Mia's is pasta": whose what, it does not say
            if m["s"] and m["s"] != person.surname:
                return clause  # "Mia Jones" is not the daughter Mia
            end = m.end("s") if m["s"] else m.end("n")
            return f"{person.said}{clause[end:]}"
        if before is not None and (m := _PRONOUN_START.match(clause)):
            person = self._only_one_in(before)
            word = m["p"].lower()
            he_she = {"his": "he", "her": "she", "their": "they"}.get(word, word)
            if person is None or (person.pronoun or "they") != he_she:
                return clause
            if he_she == "they" and (not they or _plural_in(before, person.name)):
                return clause  # "... loves dinosaurs. They ...": the dinosaurs, maybe
            if m["next"] in _NOT_VERBS and not (m["c"] and word in ("he", "she", "they")):
                return clause
            if m["next"][0].isdigit() and not m["c"]:
                return clause  # "she's 8" is read, "she 8 ..." is not
            possessive = word in ("his", "her", "their")
            if m["next"] == "and" and (possessive or not _AND_I.match(clause, m.end())):
                return clause  # "she and I ..." is read, "she and my mom ..." is not
            if possessive:
                return f"{person.said}'s{clause[m.end('p') :]}"
            if m["c"]:  # "she's", "they're" (had, has: expanded before)
                return f"{person.said} is{clause[m.end('c') :]}"
            rest = clause[m.end("p") :]
            return f"{person.said}{_of_one(rest) if he_she == 'they' else rest}"
        return clause

    def across(self, last: str, between: Sequence[str]) -> tuple[str, bool] | None:
        """The sentence a "he" / "she" / "they" opening the speaker's next turn is read
        against: `last`, the last sentence of their previous turn, when at most one turn
        (the assistant's reply, `between`) came after it and it names no one else: no
        singular kin ("your husband"), no capitalised word but the sentence's first (a
        name there when a verb follows it: "Tom sounds ..."), the person's name and "I";
        with whether a "they" may be read (no plural in the reply). None otherwise."""
        if len(between) > 1:
            return None
        they = True
        for text in between:
            for sentence in sentences(text):
                if not _names_no_one_else(sentence, self):
                    return None
                they = they and not _plural_in(sentence, "")
        return last, they

    def split_before(self) -> str:
        """Where a clause about one of these people starts inside a sentence, as more of
        an alternation of splits: after a "but", "although", "while" or "whereas", their
        name and a verb of its own ("Leo loves the beach, but Mia hates loud noises"),
        and after those, "and", "so" or a comma, a "he" / "she" and a verb ("my daughter
        Mia is 6 and she loves horses"), which the extractor reads against the clause
        before it (`named`) or joins to it again. A name after "and" or a comma is no
        split: those join what one clause says ("we went to the zoo and Mia loved the
        penguins": where she did). "" when no one was introduced."""
        if not self.by_name:
            return ""
        names = "|".join(sorted(map(re.escape, self.by_name), key=len, reverse=True))
        return (
            r"|\s*,?\s+(?:but|although|though|while|whereas)\s+"
            rf"(?=(?-i:(?:{names}){_VERBISH}))"
            r"|(?:\s*,\s*(?:and|but|so|while|although|though|whereas)?|\s+(?:and|but|so|while"
            rf"|although|though|whereas))\s+(?=(?-i:he|she){_VERBISH})"
        )

    def unread(self, part: str, before: str | None) -> bool:
        """Whether a piece of a sentence opens with a "he" / "she" that no one the sentence
        before it names is, or goes on to what only that sentence says ("and she loves the
        light there", "and he loves it"): the extractor keeps it joined to the clause
        before."""
        if not (m := re.match(r"(?:he|she)\s", part, _I)):
            return False
        leans = re.search(
            r"\b(?:it|its|there|that|this|those|these|them|him|her)\b", part[m.end() :], _I
        )
        return leans is not None or self.named(part, before) == part

    def without(self, not_names: Iterable[str]) -> People:
        """These people but those whose name is the first word of one of `not_names` (the
        speaker's, the listener's, the assistant's)."""
        barred = {w.casefold() for n in not_names for w in n.split()[:1]}
        return People({n: p for n, p in self.by_name.items() if n.casefold() not in barred})

    def _only_one_in(self, sentence: str) -> Person | None:
        """The one person a sentence names, by the name they were introduced with."""
        words = re.findall(r"[^\W\d_]+", sentence)
        named = {self.by_name[w] for w in words if w in self.by_name}
        if len(named) != 1:
            return None
        (person,) = named
        rest = sentence
        for pattern in _INTRODUCTIONS:  # the introduction itself is no one else
            rest = pattern.sub(lambda m: "" if m["n"] == person.name else m.group(0), rest)
        if any(_singular(m) for m in _KIN.finditer(rest)):
            return None  # "... and my mom ...": whom "she" means is unclear
        words = rest.split()
        first = sentence.split()[0] if sentence.split() else ""
        for n, word in enumerate(words):
            w = word.strip(",.;:!?'\"()").removesuffix("'s")
            if not w[:1].isupper() or w in ("I", person.name, person.surname):
                continue
            if n == 0 and word == first and w.lower() in _STARTERS:
                continue  # "Yesterday my sister Ana ...": capitalised as the sentence starts
            if n == 0 or words[n - 1].lower().strip(",") not in _PLACE_WORDS:
                return None  # "Ana met Laura": either may be "she"
        return person


# a verb of one person's own after their name (lower case): "is", "hates", "loved"
_VERBISH = (
    r"\s(?:is|was|has|had|does|did|can|cannot|could|will|would|should|must|may"
    r"|might|never|always|also|just|still|really|[a-z]+[^s\W]s|[a-z]+ed)\b"
)
# words that end in "s" and are no plural; words that are plurals without one
_NOT_PLURAL = frozenset(
    "is was has does his hers its this yes us always perhaps plus thus bus gas less unless "
    "across besides sometimes nowadays news whereas as".split()
)
_PLURALS = frozenset("children people men women kids feet teeth mice we us our ours both".split())
# a word a capitalised first word of a reply may be followed by when it is a name
_NAME_VERBS = frozenset(
    "is was has had sounds seems might may can could will would should and also does did "
    "says said".split()
)
_OPENERS = frozenset(
    "noted thanks thank got great sure sorry good perfect understood absolutely of i that's "
    "it's lovely nice oh ah".split()
)


_APPOSED = (
    re.compile(rf"(?P<my>my|our)\s{_REL},\s{_WHO},\s+(?P<rest>[a-z].*)", _I),  # my son, Leo, is
    re.compile(rf"{_WHO},\s(?P<my>my|our)\s{_REL},\s+(?P<rest>[a-z].*)", _I),  # Ana, my sister, is
)


def apposed(clause: str) -> str:
    """A clause opening with a person introduced beside their relation, said as "my
    <relation> <Name> ...": "Ana, my sister, lives in Leeds" -> "my sister Ana lives in
    Leeds" (cut at the commas, it read "Sister, lives in Leeds"); anything else as it is."""
    for pattern in _APPOSED:
        m = pattern.fullmatch(clause)
        if m and m["r"].lower() not in PLURAL and m["n"].casefold() not in NOT_NAMES:
            who = " ".join(f"{m['my']} {m['adj']}{m['r']} {m['n']} {m['s'] or ''}".split())
            return f"{who} {m['rest']}"
    return clause


def _plural_in(sentence: str, name: str) -> bool:
    """Whether `sentence` holds a word a "they" could mean besides `name`'s bearer: a
    plural (a word ending in "s" but for her own verb right after her name: "Sam loves
    dinosaurs" holds "dinosaurs"), "we", "us", "both", or "and" joining two."""
    said = [w.strip(',.;:!?"()') for w in sentence.split()]
    words = [w.lower() for w in said]
    for n, w in enumerate(words):
        if w in _PLURALS or w in ("and", "they", "them", "their"):
            return True
        if n and (words[n - 1] == name.lower() or said[n][:1].isupper()):
            continue  # her verb ("Sam loves ..."), a name or a place ("Leeds")
        if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "'s", "us", "is")):
            if w not in _NOT_PLURAL:
                return True
    return False


def _names_no_one_else(sentence: str, people: People) -> bool:
    """Whether a sentence of the assistant's reply names no one but the people introduced:
    no singular kin and no capitalised word after its first, which may be a name only
    when a verb follows it ("Tom sounds lovely") and it is no opener ("Noted, ...")."""
    if any(_singular(m) for m in _KIN.finditer(sentence)):
        return False
    words = sentence.split()
    for n, word in enumerate(words):
        w = word.strip(",.;:!?'\"()\u2014-").removesuffix("'s")
        if not w[:1].isupper() or w == "I" or w in people.by_name:
            continue
        if n == 0:
            after = words[1].lower().strip(",.;:!?") if len(words) > 1 else ""
            if w.lower() in _STARTERS or w.lower() in _OPENERS or after not in _NAME_VERBS:
                continue
        elif words[n - 1].lower().strip(",") in _PLACE_WORDS:
            continue
        return False
    return True


def _of_one(rest: str) -> str:
    """What is said of "they" said of one: " also live in Leeds" -> " also lives in Leeds";
    only the first verb changes ("are" -> "is", "were" -> "was", "have" -> "has")."""
    words = rest.split(" ")
    for n, w in enumerate(words):
        if not w or w.lower() in ("also", "still", "just", "now", "really", "never", "always"):
            continue
        if is_adverb(w):
            continue
        words[n] = "was" if w.lower() == "were" else third_singular(w)
        break
    return " ".join(words)


def _singular(m: re.Match[str]) -> bool:
    return m["r"].lower() not in PLURAL


def introduced(said: Iterable[str]) -> People:
    """The people introduced by name in what one speaker said (their turns, in order).

    A name introduced for two relations is no one's (nor is one the speaker, the
    listener or the assistant goes by: `People.without`).
    """
    found: dict[str, Person] = {}
    relations: dict[str, set[str]] = {}
    for text in said:
        if not _MY.search(text):
            continue  # most turns introduce no one: the cheap look first
        flat = " ".join(text.split())
        for pattern in _INTRODUCTIONS:
            for m in pattern.finditer(flat):
                name, relation = m["n"], m["r"].lower()
                if relation in PLURAL or name.casefold() in NOT_NAMES:
                    continue
                relations.setdefault(name, set()).add(relation)
                adj = " ".join(m["adj"].lower().split())
                my = m.groupdict().get("my") or ("our" if m["we"].lower() == "we" else "my")
                said_as = " ".join(f"{my.lower()} {adj} {relation} {name}".split())
                surname = m["s"] or ""
                found[name] = Person(name, surname, f"{said_as} {surname}".strip(), relation)
    return People({n: p for n, p in found.items() if len(relations[n]) == 1})


def self_names(said: Iterable[str], *, to_listener: bool = False) -> set[str]:
    """The names a speaker gives themselves ("my name is Ana", "call me Ana", "I am Ana"),
    or, `to_listener`, the listener ("your name is Max", "call you Max")."""
    if to_listener:
        lead = r"(?:your\s+name\s+is|call\s+you|you\s+are)"
    else:
        lead = r"(?:my\s+name\s+is|call\s+me|I\s+am)"
    out: set[str] = set()
    for text in said:
        flat = " ".join(normalise(text).split())
        out |= {m["n"] for m in re.finditer(rf"\b{lead}\s(?P<n>{NAME})\b(?!')", flat, _I)}
    return out
