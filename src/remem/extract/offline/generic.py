"""Plain first-person facts no rule of `remem.extract.offline.rules` claims.

"I volunteer at the shelter every Sunday" is worth keeping though no rule has a
field for it; "I think so", "I'll keep pushing" and "My family, exercise, and
friends" are not. `generic_facts` decides, for one normalised clause.
"""

from __future__ import annotations

import re

from remem.extract.offline.fact import Fact
from remem.extract.offline.person import VERBS, third_person
from remem.extract.offline.prefs import rule_judged, rule_likes, rule_prefer, rule_stance
from remem.extract.offline.said import leans_on_context
from remem.extract.offline.text import ADV, MAX_TEXT
from remem.model import Kind

__all__ = ["ASKED_TO_REMEMBER", "FINITE", "generic_facts", "goes_on_to_a_stance"]

ASKED_TO_REMEMBER = "asked to remember"  # how a verbless explicit clause is kept

_I = re.IGNORECASE

# a word that makes a piece a clause of its own: a finite verb
FINITE = (
    r"\b(?:am|is|are|was|were|be|been|has|have|had|does|do|did|will|would|can|could|should|may"
    r"|might|must|got|gets|goes|went|came|comes|[a-z]{2,}ed|(?:live|work|love|like|want|need|make"
    r"|take|keep|know|think|feel|seem|look|help|mean|let|run|play|start|tri|hate|prefer|enjoy|own"
    r"|use|move|stay|studi|teach|drive|eat|drink|sleep|read|write|sing|cook|travel|visit|call|watch"
    r"|miss|grow|show|give|say|tell|find|cost|belong|remain|sound|turn|become|cause)(?:s|es))\b"
)


_GENERIC_DENY = (
    rf"(?:I|we)\s+{ADV}(?:think|guess|suppose|believe|mean|meant|see|agree|disagree|understand"
    r"|know|do\s+not\s+(?:know|think|understand|care|mind|remember|get)|did\s+not\s+(?:know|mean"
    r"|realize|realise)|wonder|was\s+wondering|hope|feel\s+like|need|needed|wanted"
    # "I want to ..." is a request ("... to know how"), unless it names a life's aim
    r"|want(?!\s+to\s+(?:start|open|become|learn\s+(?!more|how|about|what|why)|visit|travel"
    r"|move|buy|build|run|write\s+(?:a\s+)?(?:book|novel|memoir|screenplay)|adopt|study|try\s+out"
    r"|keep|help\s+(?!me\b)|make\s+a\s+difference|teach|go\s+back|own|finish|retire|settle))"
    r"|would\s+(?:like|love\s+to\s+know|appreciate)|am\s+(?:not\s+)?sure"
    rf"|(?:am|are|was|were)\s+{ADV}(?:wondering|looking|trying|thinking|asking|planning\s+to\s+ask"
    r"|curious|confused|lost|stuck|fine|good|ok|okay|great|here|back|ready|done|tired|busy|happy"
    r"|glad|excited|bored|hungry|sad|stressed|sorry|afraid|worried|not\s+sure|going\s+to\s+(?:think"
    r"|check|try|see|ask|look))|have\s+(?:a|another|one\s+more|some|a\s+quick)\s+questions?"
    r"|had\s+a\s+question|appreciate|apologi[sz]e|forgot|will\s+(?:think|check|try|see|ask|look|let"
    r"|get\s+back|be\s+right\s+back)|(?:can|could|may|might|should)\s+(?:ask|get|have|try|check)"
    r"|just\s+(?:wanted|want|need|needed)|got\s+it|love\s+(?:it|this|that)|like\s+(?:it|this|that)"
    r"|would\s+love\s+to\s+(?:hear|know|see|learn|get|help|chat|talk)"
    # a preference a rule declined (its object is a pronoun, "the first one") is no fact either
    r"|(?:would\s+)?(?:prefer|rather|like|love|enjoy|adore|hate|dislike)"
    r"|(?:am|are)\s+(?:\w+\s+){0,3}?(?:away|late|on\s+(?:my|our)\s+way)"
    # how they feel or are doing at the moment, and what "we" can or should do together
    rf"|(?:am|are)\s+{ADV}(?:feeling|determined|pumped|stoked|thrilled|psyched|grateful|thankful"
    r"|hopeful|optimistic|nervous|proud|lucky|blessed|amazed|inspired|touched|honou?red"
    r"|doing\s+(?:ok|okay|well|good|great|fine|alright|better|awesome|amazing))"
    # resolve said as a mood, not a fact: "I'll keep pushing", "I'm not going to quit"
    rf"|(?:will|am\s+going\s+to|are\s+going\s+to)\s+{ADV}(?:keep\s+(?:going|pushing|trying"
    r"|at\s+it|chasing\s+(?:my|our|those|the)\s+dreams?|moving\s+forward|fighting|dreaming"
    r"|striving)|(?:not|never)\s+(?:quit|give\s+up|stop)|do\s+(?:my|our)\s+best|make\s+(?:this"
    r"|it|that)\s+work|stay\s+(?:positive|strong|focused|motivated))"
    rf"|(?:am|are)\s+{ADV}staying\s+(?:positive|strong|focused|motivated)"
    rf"|(?<=we\s){ADV}(?:can|could|should|will|shall|must|have\s+to|need\s+to|got\s+to|gotta))\b"
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


# A statement whose only content words are one of these verbs and words of time says
# nothing of what it is about ("I go twice a week": to what?).
_BARE_VERBS = frozenset("go goes going went gone do does doing did done have has had".split())
_WHEN_WORDS = frozenset(
    "once twice times time every each per week weeks weekly day days daily month months monthly "
    "year years yearly morning mornings evening evenings night nights weekend weekends today "
    "tomorrow yesterday tonight usually often sometimes always never ago last next since "
    "monday mondays tuesday tuesdays wednesday wednesdays thursday thursdays friday fridays "
    "saturday saturdays sunday sundays one two three four five six seven".split()
)


# Where a statement goes on to a second part: "..., so I ...", "... and avoid ...", "...; I ...".
_GOES_ON = r"(?:,?\s+(?:and|so|but)(?:\s+so)?|\s*;)\s+"
# ... that says what they need: "so I need a car with seven seats", "and require a quiet room"
_NEEDS = rf"(?:I|we)\s+{ADV}(?:need|require)\s+(?:a|an|at\s+least|only)\s"


def goes_on_to_a_stance(s: str) -> bool:
    """Whether a statement goes on, after its first part, to what its speaker avoids,
    prefers, likes, judges or needs: "I have very sensitive skin and avoid essential oils",
    "I'm an environmentalist, so I only consider electric cars". The reason said first
    does not make it less of a standing preference. A clause longer than `MAX_TEXT` (what a
    record keeps of it) is not read: each part is read by the stance rules to its end."""
    if len(s) > MAX_TEXT:
        return False
    for m in re.finditer(_GOES_ON, s, _I):
        rest = s[m.end() :]
        if not re.match(r"(?:I|we)\s", rest, _I):
            rest = f"I {rest}"
        if re.match(_NEEDS, rest, _I):
            return True
        if any(rule(rest) for rule in (rule_stance, rule_prefer, rule_likes, rule_judged)):
            return True
    return False


def generic_facts(s: str, explicit: bool) -> list[Fact]:
    """A first-person statement with content that no rule claims; explicit ones need less."""
    said = re.findall(r"[^\W_][\w'$\u20ac\u00a3-]*", s)
    words = [w.lower() for w in said]
    # a capitalised word after the first is a name, never a stopword ("my son Will is ...")
    content = [w.lower() for n, w in enumerate(said) if w.lower() not in _STOPWORDS or _name(n, w)]
    if explicit:
        if not content or re.match(r"to\s", s, _I):
            return []
        if not re.match(r"(?:I|we)\s", s, _I) and not re.search(FINITE, s, _I):
            # "remember Knopf", "remember my hands, nothing with prep": no statement, but
            # what was asked to be kept, said as such
            return [Fact(third_person(f"I {ASKED_TO_REMEMBER} {s}"), _kind(s))]
        return [Fact(third_person(s), _kind(s))]
    if not re.match(r"(?:I|we|my|our)\s", s, _I) or re.match(_GENERIC_DENY, s, _I):
        return []
    if re.match(rf"(?:I|we)\s+{ADV}(?:would|could|might|may)\b", s, _I):  # conditional
        return []
    if {"you", "your", "yours"} & set(words) or len(content) < 3 or leans_on_context(s):
        return []
    if not set(content) - _BARE_VERBS - _WHEN_WORDS:
        return []  # "I go twice a week", "we did it on Monday": of what, it does not say
    last = s.rsplit(",", 1)[-1].lower().split()  # "..., play soccer": a verb after the aside
    if re.match(r"(?:my|our)\s+[\w' -]+,", s, _I) and not (
        re.search(FINITE, s, _I) or VERBS & set(last)
    ):
        return []  # "My family, exercise, and friends": a list answering a question
    return [Fact(third_person(s), _kind(s))]


def _name(n: int, word: str) -> bool:
    return n > 0 and word != "I" and word[:1].isupper() and word[1:].islower()


def _kind(s: str) -> Kind:
    """A plain fact's kind: a preference when it goes on to a stance (`goes_on_to_a_stance`)."""
    return Kind.PREFERENCE if goes_on_to_a_stance(s) else Kind.SEMANTIC
