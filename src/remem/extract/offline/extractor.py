"""The offline extractor: deterministic rules that turn one user turn into candidates.

No model, no I/O, no clock: the same event and context always yield the same
candidates, so the extractor runs anywhere, re-runs safely and is tested line by
line. Only user turns are read; each sentence (and each first-person clause of
it) is matched against a few dozen regular-expression rules
(`remem.extract.offline.rules`, over text normalised by
`remem.extract.offline.text`), and a first-person statement with at least three
content words that no rule claims is kept as a plain fact (kind semantic, no
field). Candidates are authority INFERRED, except explicit ones ("remember that
...", "don't forget ...", "note that ...", "... please keep that in mind"),
which are CONFIRMED and keep the kind and field of the rule the remembered
clause matches (semantic and no field when none does). `is_correction` is set
when the statement says it corrects ("actually", "no,", "correction:") or, for a
candidate with a field, reports a change ("moved", "increased", "no longer",
"anymore", "now", "again").

A candidate's text is the clause as said, turned to the third person: only the
verb is conjugated ("I strongly dislike seafood" -> "Strongly dislikes
seafood"), "I remember / know / think that <clause>" keeps the clause, and a
qualifier said before the clause stays ("On long flights, always books an aisle
seat"). When the event names its speaker (`metadata.speaker`) the text names
them ("Ines strongly dislikes seafood", "Ines's sister lives in Oslo", "Ines
says they ..." for "we ...") and a leading "Ines:" is dropped from the turn; a
clause whose statement would not name the speaker is dropped. Without a
speaker the text keeps the note form of a profile about the user ("Prefers
aisle seats").

Chat is read as it is written (`remem.extract.offline.chat`): the filler a clause
ends on ("tho", "lol", an emoji) and a verbless piece after "so" are cut, a person
said without "my" ("mum lives in York", "gf rose is vegan") is the speaker's, a cleft
("I'm the one who ...") is read as its clause, and a mishap laughed off ("Cat just
knocked my tea over again lol") makes no plain fact.

Nothing is proposed from a turn that is code or pasted text
(`remem.extract.offline.text.pasted`) or play-acting in a game or role-play
(`remem.extract.offline.said.in_role_play`), nor from quoted speech reported
in a turn ("my aunt told me "..."") or the cut-off last sentence of a written
turn, nor from a clause that addresses or praises the listener, is a request,
a question, a hypothetical or conditional, holds a blank to fill in, or is cut
off mid-phrase (`remem.extract.offline.said.not_a_statement`). A plain fact that
names a person or thing only by a pronoun ("I made it with ...", "he told me ...")
and a mood of the moment ("I'm feeling hopeful") store nothing. A rule's fact said
with a hedge ("I think I'm allergic to kiwi") keeps the hedge in its text ("Thinks
they are allergic to kiwi") and sets no field, so it never replaces an exact fact.

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
    uses:<aid>, condition:<x>,          what the body needs (`remem.extract.offline.needs`):
    cannot:<x>, needs:<x>               "I use a wheelchair", "I get seasick", "I can't
                                        climb stairs", "I need step-free access"
    occupation, employer                "I'm a nurse", "I work as / at ..."
    children, count:<x>                 "I have two kids" -> "2 children"; "count:cat"
    relation:<x>                        name of a person or pet: "relation:wife" = "Ana";
                                        "passed away" when they died ("our cat passed away")
    device:<x>, car                     "I ditched my old phone for a Pixel" -> device:phone
    employer "left <x>"                 "I left the agency" (`remem.extract.offline.changes`)
    home:<x>                            where they live: "my sister lives in Berlin"
    <relation>_<name>:<field>           a named third party's fact, on a field of theirs:
                                        "my sister Ana lives in Bristol" -> sister_ana:home,
                                        "Mia is allergic to eggs" -> daughter_mia:allergy:egg
                                        (`remem.extract.offline.theirs`)
    likes:<x>                           likes | dislikes ("I love pizza" / "I hate pizza")
    preference:<topic>                  "I prefer aisle seats" -> preference:seat; topics
                                        fold synonyms (seat, drink, contact, transport ...)
    favorite:<x>                        "my favourite colour is blue" -> favorite:color
    date:<x>[_expiry|_due|_end|...]     "my flight is on March 3" -> date:flight;
                                        "my passport expires in 2031" -> date:passport_expiry
    budget, rent, salary, price ...     money amounts, the head noun only; a limit said on
                                        spending is the budget ("keep it under £150",
                                        "max 50 euros": "Budget is up to €50")
    choice:<x>                          a choice made instead of <x>: "I'm doing the 10k
                                        instead of the half" -> choice:half = "10k"; it ends
                                        the records of <x> (`remem.consolidate.rules`)
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
  user says "remember that ..." or introduced them by name earlier in the session
  ("my friend Sam ...": then the clause is read as said of "my friend Sam", see
  `remem.extract.offline.named`); facts about the user in the third person;
- implicit preferences and habits: "can you find me a vegetarian place again?",
  booking the aisle seat every time, a tone of voice;
- coreference: pronouns and ellipsis are not resolved ("I love it", "she moved
  to Berlin", "the second one", "same as last time"), but for a "he" / "she" (or
  "they", `remem.extract.offline.named`) after a sentence naming one person introduced
  by name ("My sister Ana came over. She lives in Bristol."), also the sentence ending
  the turn before, and a name after a hedge ("I think Mia ..."); across turns only the
  bare yes / no answer to the assistant's immediately preceding yes/no question
  ("Are you still vegetarian?" - "not anymore") is resolved, and only when the
  resulting statement matches a rule with a field, and a word put right ("actually
  it's Tuesday, not Monday") in the latest earlier statement that holds it
  (`remem.extract.offline.earlier`); answers to choice questions ("window or aisle?" -
  "aisle") are not;
- relative dates stay relative: "my flight is tomorrow" stores "tomorrow", not a
  calendar date; durations and recurring events are not understood;
- hypothetical, past or future statements (a hedged fact keeps its hedge and
  no field; "I think that <clause>" keeps the clause as said):
  "if I move to Porto", "I used to live in Lisbon", "I'm moving to Porto next
  month", "I might go vegan"; negated facts without a replacement ("I don't live
  in Lisbon anymore") give no home at all;
- requests, tasks and instructions: "I need a hotel in Paris", "remember to
  call mom", "always answer in French" (procedural memory);
- feelings and small talk about the moment ("I'm so excited about the trip");
- quoted speech is recognised only by a speech verb next to a double-quoted
  span ("she said "I love cats""); a quotation without one, or in single
  quotes, is read as the user's words; a whole turn in quotes is read as the
  user's statement;
- role-play is recognised by how it is set up or acted ("let's play ...",
  "pretend you are ...", "*bows*"), not by what is said in it; a game the
  assistant set up without such words is not noticed;
- third-person pronouns stay neutral ("their", "them") even when the speaker is
  named, and "we" becomes "<speaker> says they ...";
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
from collections.abc import Sequence
from dataclasses import dataclass, replace

from remem.extract.offline.changes import with_subject
from remem.extract.offline.chat import (
    laughed_off,
    momentary,
    uncleft,
    with_owner,
    without_chatter,
    without_fragment,
)
from remem.extract.offline.earlier import answer_facts, put_right
from remem.extract.offline.fact import Fact
from remem.extract.offline.generic import ASKED_TO_REMEMBER, FINITE, generic_facts
from remem.extract.offline.money import rule_budget_limit
from remem.extract.offline.named import People, apposed
from remem.extract.offline.person import hedged, third_person, with_lead
from remem.extract.offline.rules import RULES, greeting_name, rule_facts
from remem.extract.offline.said import (
    CHATTER,
    CONTRAST,
    HYPOTHETICAL,
    asserted,
    cut_off_tail,
    in_role_play,
    leans_on_context,
    not_a_statement,
    strip_end,
    without_quoted_speech,
    without_unknown_person,
    without_vocatives,
)
from remem.extract.offline.speakers import last_turn, listeners_of, people_of, speaker_of
from remem.extract.offline.style import style_facts
from remem.extract.offline.text import (
    ADV,
    between_kept,
    pasted,
    sentences,
)
from remem.extract.offline.theirs import person_facts, relation_fact
from remem.model import Authority, Candidate, Event, Kind, Role, Source

__all__ = ["EXTRACTOR_VERSION", "STRATEGY", "extract_offline"]

EXTRACTOR_VERSION = "offline-rules/1"
STRATEGY = "offline"

_I = re.IGNORECASE


@dataclass(frozen=True, slots=True)
class _Clause:
    text: str
    explicit: bool
    correction: bool
    greeted: bool
    lead: str = ""  # a qualifier said before the clause: "on long flights", "due to ..."
    hedge: str = ""  # "I think" said before a clause a rule reads: kept in the text
    together: str = ""  # who else the subject was: "my mom" of "my mom and I ..."
    laughed: bool = False  # the sentence laughs or groans at what it tells ("... lol")
    singled_out: bool = False  # said as a cleft: "my husband is the one who's vegetarian"


def extract_offline(event: Event, context: Sequence[Event] = ()) -> list[Candidate]:
    """Propose candidates from one event with deterministic rules; [] for non-user turns.

    `context` are earlier events of the same session; they are used to read a
    bare "yes" / "no" / "not anymore" as the answer to the assistant's question,
    and to tell a turn of a game or role-play the session set up.
    """
    if event.role != Role.USER:
        return []
    speaker = speaker_of(event)
    text = event.text
    if speaker:
        text = re.sub(rf"^\s*{re.escape(speaker)}\s*:\s*", "", text)
    if pasted(text) or in_role_play(text, context):
        return []
    listeners = listeners_of(context, speaker)
    text = without_vocatives(without_quoted_speech(text), listeners)
    found: list[tuple[Fact, bool, bool]] = []
    people = people_of(event, context, speaker, text, listeners)
    for clause in _clauses(text, people, last_turn(event, context, speaker, people)):
        if clause.lead and not_a_statement(clause.lead):
            continue
        short = without_fragment(clause.text)  # "... every spring so antihistamines"
        if short != clause.text and _facts(short, explicit=clause.explicit):
            clause = replace(clause, text=short)  # else read whole: nothing is lost
        facts = _facts(
            clause.text,
            greeted=clause.greeted,
            explicit=clause.explicit,
            singled_out=clause.singled_out,
        )
        if clause.hedge:  # no exact fact from a hedge: the statement, hedge and all
            said_so = hedged(clause.hedge, clause.text, speaker)
            facts = [replace(f, text=said_so, field=None, value=None) for f in facts][:1]
        if clause.laughed and not clause.explicit and momentary(clause.text):
            facts = [f for f in facts if f.field is not None]  # "Cat just ... again lol"
        for fact in facts:
            changed = fact.field is not None and (
                fact.change or re.search(_CHANGE_WORDS, clause.text, _I) is not None
            )
            said = fact.text
            if clause.together and not clause.hedge:
                said = _together(clause, speaker)
            elif speaker:
                if said.lower().startswith(ASKED_TO_REMEMBER):
                    continue  # "Remember, patience pays off": said to the other person
                said = said if clause.hedge else _named(said, clause.text, speaker)
                if not re.search(rf"\b{re.escape(speaker)}\b", said):
                    continue  # in a thread of several people a record says whose it is
            if clause.lead:
                said = with_lead(clause.lead, said, speaker)
            said = without_unknown_person(said)  # "... until she lands something": who?
            found.append((replace(fact, text=said), clause.explicit, clause.correction or changed))
    # the question a bare answer answers, or the turn a correction puts right: a source too
    earlier: tuple[str, ...] = ()
    if not found and (answered := answer_facts(event, context)):
        earlier, found = (answered[0],), answered[1]
    if not found and (righted := put_right(event, context, extract_offline)):
        earlier, found = (righted[0],), [righted[1]]
    if not speaker:  # how to answer, said to the assistant (`remem.extract.offline.style`)
        found += [(fact, True, False) for fact in style_facts(text)]
    source = Source(
        type="event",
        event_ids=(*earlier, event.id),
        strategy=STRATEGY,
        extractor=EXTRACTOR_VERSION,
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


def _named(text: str, clause: str, speaker: str) -> str:
    """A fact's statement naming its speaker ("Prefers tea" -> "Caroline prefers tea")."""
    if text == third_person(clause):
        return third_person(clause, speaker)
    if re.match(rf"{re.escape(speaker)}\b", text):
        return text
    if re.match(r"(?:Name|Budget|Favou?rite\s+\w+)\s", text):
        return f"{speaker}'s {text[:1].lower()}{text[1:]}"
    if (m := re.match(r"(?:my|our)\s+([\w-]+)", clause, _I)) and text.lower().startswith(
        m[1].lower() + " "
    ):  # "Daughter Mia is allergic to eggs", one of a list: "Ines's daughter Mia ..."
        return f"{speaker}'s {text[:1].lower()}{text[1:]}"
    return f"{speaker} {text[:1].lower()}{text[1:]}"


def _together(clause: _Clause, speaker: str | None) -> str:
    """A statement of "my mom and I ..." naming both: "Maria and their mom made dinner"."""
    they = third_person(clause.text)  # "we made dinner" -> "the user says they made dinner"
    rest = re.sub(r"^(?:the\s+user\s+says\s+)?they\s+", "", they, flags=_I)
    who = re.sub(r"^(?:my|our)\b", "their", clause.together.strip(), flags=_I)
    return f"{speaker or 'The user'} and {who} {rest}"


_SEP = r"(?:\s*[,:;.!-]+\s*|\s+)"
_GREETING = (
    r"(?:hi|hello|hey|hiya|heya|howdy|greetings|good\s+(?:morning|afternoon|evening))"
    r"(?:\s+there)?(?:\s*[,:;.!-]+\s*|\s+|$)"
)
_CORRECTION = (
    r"(?:actually|correction|sorry|wait|oops|whoops|my\s+bad|scratch\s+that|I\s+meant\s+to\s+say"
    r"|I\s+mean|to\s+be\s+clear|let\s+me\s+correct\s+(?:that|myself)|update|no|nope|not\s+quite"
    r"|that(?:\s+is|'s|\s+was)\s+(?:wrong|not\s+right|not\s+correct|incorrect|not\s+true)"
    r"|that\s+(?:isn't|is\s+not)\s+(?:right|correct|true)|not\s+true|wrong|now|these\s+days"
    r"|nowadays)"
    r"(?:\s*[,:;.!\u2013\u2014-]+\s*|\s+(?=(?:I|my|we|our|it|that|the)\b))(?=\S)"
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
    r"|um+|uh+|hmm+|yeah|yes|yep|ya|yea|yup|sure|honestly|basically|anyway|anyways|alright|right|ha(?:ha)+"
    r"|lol|lmao|tbh|ngl|omg|ugh|welp|ffs|though|one\s+more\s+thing|quick\s+update|heads\s+up"
    r"|just\s+fyi|for\s+what\s+it\s+is\s+worth"
    r"|(?:good|great|bad|big|some|exciting|sad|other|more|in\s+other)\s+news|update|guess\s+what"
    r"|other\s+(?:thing|things|stuff)|unrelated|side\s+note)" + _SEP + r"(?=\S)"
)
_QUESTION_START = (
    r"(?:what|where|when|who|whom|whose|why|how|which|do|does|did|is|are|am|was|were|can|could"
    r"|would|should|will|shall|may|might|have|has|had|any)\b"
)
_CLAUSE_SPLIT = (
    r"\s*;\s*|\s*,?\s+(?:and|but|although|though|while|whereas|plus)\s+(?=(?:I|we|my|our)\s)"
    r"|\s*,\s+(?=(?:I|we|my|our)\s)"
)
# a subject of two: "my mom and I ...", "Tom and I ...", "me and my husband ..." (a person
# named by "my <words>" or a capitalised name, then a verb)
# ("he and I ..." names no one: a pronoun no person was read for is no name, and the user's
# part is read alone, "Went hiking ...", never "The user and He ...")
_WHO = (
    r"(?P<who>(?:my|our)\s+[^\W\d_][\w'-]*(?:\s+[\w'-]+){0,2}?"
    r"|(?!(?:he|she|they|it|you|him|her|them|this|that)\b)[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)"
)
_TOGETHER = rf"{_WHO}\s+and\s+I\s+(?P<rest>.+)"
_TOGETHER_ME = (
    rf"(?:me|I)\s+and\s+{_WHO}\s+(?P<rest>(?:(?:both|all|just|also|recently|finally)\s+)*"
    r"(?:am|are|were|was|have|has|had|did|do|does|will|would|can|could|live|work|love|like"
    r"|enjoy|go|went|get|got|make|made|take|took|met|see|saw|adopted|bought|moved|started"
    r"|visited|[a-z]{2,}ed)\b.*)"
)
_LEAD = (
    r"(?!(?:I|we|my|our)\b)(?:for|on|at|in|during|due\s+to|because\s+of|when|while|since|as"
    r"|after|before|with|without|given|like|unlike|apart\s+from|except|besides|whenever"
    r"|wherever|especially|generally|usually|personally|honestly|these\s+days|nowadays|lately"
    r"|recently)\b[^,]{0,60}"
)
_ASSERTS = (  # "think / believe that" are hedges (`_HEDGE`): what was said keeps them
    rf"(?:I|we)\s+{ADV}(?:remember|recall|know|knew|realized|realised|noticed"
    r"|found\s+out|learned|learnt)\s+that\s+(?=(?:I|we|my|our)\s)"
)
_HEDGE = (  # "I think I'm allergic to ...": the clause after it, said with less certainty
    rf"(?:(?:I|we)\s+{ADV}(?:do\s+not\s+)?(?:think|believe|guess|suspect|reckon|feel\s+like)"
    r"\s+(?:that\s+)?|(?:I\s+am|we\s+are)\s+not\s+(?:sure|certain)\s*,?\s*but\s+"
    r"|(?:probably|maybe|perhaps|possibly)\s*,?\s+)(?=(?:I|we|my|our)\s)"
)
# the same hedges before anyone: "I think Mia is ..." (read only before a person introduced)
_HEDGE_ANY = _HEDGE.removesuffix(r"(?=(?:I|we|my|our)\s)")
# what may come before a person's name, the statement being about them: "turns out Mia ..."
_LEAD_IN = (
    rf"(?:(?:I|we)\s+{ADV}(?:remember|recall|know|knew|realized|realised|noticed|found\s+out"
    r"|learned|learnt)(?:\s+that)?|(?:it\s+)?turns\s+out(?:\s+that)?|apparently|now"
    r"|(?:and|so)\s+now)\s*,?\s+"
)
_HEDGE_TAIL = (  # "My brother is a nurse, I believe": the same hedge, said after the clause
    r"(?<=\w)\s*,\s*((?:I|we)\s+(?:think|believe|guess|suspect|reckon|suppose))$"
)
_CHANGE_WORDS = r"\b(?:no\s+longer|any\s*more|any\s+longer|instead|now|again)\b"


_EXPLICIT_TAIL = (
    r"[\s,;-]+(?:so\s+|and\s+)?(?:please\s+)?(?:(?:keep|bear)\s+(?:that|this|it)\s+in\s+mind"
    r"|remember\s+(?:that|this|it)|(?:do\s+not|never)\s+forget\s+(?:that|this|it)"
    r"|note\s+(?:that|this|it)|make\s+a\s+note(?:\s+of\s+(?:that|this|it))?)$"
)


# a question about what was just said, after a comma: not part of the statement
_QUESTION_TAIL = (
    r",\s*(?:so\s+)?(?:(?:what|how|where|which|when|why)(?:\s+(?:do|does|did|should|can|could"
    r"|would|is|are|was|were|have|had))?|can|could|should|would|will|do|does|is|are|am|was"
    r"|were)\s+(?:I|we|you|it|they"
    r"|that|this|these|those)\b.*$"
    # "... so bye", "... gotta go": a leave-taking after the statement
    r"|,?\s+(?:so\s+)?(?:bye|gotta\s+go|got\s+to\s+go|have\s+to\s+go|talk\s+later|ttyl|brb)"
    r"(?:\s+(?:now|for\s+now))?\W*$"
)

# a request to the listener after the statement: what it asks is no fact of the speaker's
# ("I'm dyslexic, so please keep your answers short"), so a clause that says no fact whole
# is read without it; one that does keeps it ("I'm vegetarian, so please no meat": nothing
# said is lost). A request to remember it is read before this (`_EXPLICIT_TAIL`)
_REQUEST_TAIL = r"(?<=\w)(?:,?\s+(?:so|and|but)|\s*[,;-])\s+(?:please|pls|plz|kindly)\s+\w.*$"

# a heading before a colon that opens the sentence: a few words, no verb, no one of the
# speaker's ("Family info for you: my wife is Ana", "Work stuff: I start Monday"); what
# follows is the statement. "My allergies: ..." and "I'm off: ..." say something themselves.
_LABEL = r"(?P<label>[^\W\d_][\w'-]*(?:\s+[\w'-]+){0,4}?)\s*:\s+(?=\S)"
_NOT_LABEL = rf"\b(?:I|me|my|mine|we|us|our|ours)\b|{FINITE}"


def _clauses(
    text: str, people: People | None = None, earlier: tuple[str, bool] | None = None
) -> list[_Clause]:
    """Sentences cut into first-person clauses, with their leading markers read off.

    A clause whose subject is someone `people` holds, by name or "he" / "she", is
    read as said of "my <relation> <Name>" (`remem.extract.offline.named`), also after
    a hedge or a lead-in ("I think Mia is ...", "turns out Mia ..."); `earlier` is the
    sentence said before the turn's first (`last_turn`) and whether a "they" may be
    read against it."""
    people = people or People()
    out: list[_Clause] = []
    greeted = False
    last, they = earlier if earlier else (None, True)  # the sentence said before this one
    split = _CLAUSE_SPLIT + people.split_before()  # "..., but Mia hates ...": Mia's own
    for sentence in cut_off_tail(sentences(text)):
        said_before, last = last, sentence
        they_ok, they = they, True
        if re.match(r"[\"']", sentence):
            sentence = re.sub(r"^[\"']+|[\"']+(?=[^\w]*$)", "", sentence)
        body, question = strip_end(sentence)
        body, laughed = without_chatter(body), laughed_off(sentence)
        explicit = correction = False
        hedge = ""
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
            if m := re.match(_ASSERTS, body, _I):
                body = body[m.end() :]
            if m := re.match(_HEDGE, body, _I):  # "I'm not sure but I think ..."
                hedge, body = f"{hedge} {m.group(0).strip(' ,')}".strip(), body[m.end() :]
            if (m := re.match(_LABEL, body)) and not re.search(_NOT_LABEL, m["label"], _I):
                body = body[m.end() :]  # "Family stuff for you: my wife is Ana"
            if body == before:
                break
        body = with_owner(body)  # "gf rose is vegan": "my girlfriend Rose is vegan"
        body = apposed(body)  # "Ana, my sister, lives ...": "my sister Ana lives ..."
        said = people.named(body, said_before, they=they_ok)  # "Mia is ...": "my daughter Mia"
        if said == body and people.by_name:  # "I think Mia is ...", "turns out Mia is ..."
            hedging = None if hedge else re.match(_HEDGE_ANY, body, _I)
            m = hedging or re.match(_LEAD_IN, body, _I)
            rest = body[m.end() :] if m else ""
            if m and (named := people.named(rest, said_before, they=they_ok)) != rest:
                said, hedge = named, hedging.group(0).strip(" ,") if hedging else hedge
        body = said
        if m := re.search(_EXPLICIT_TAIL, body, _I):
            explicit, body = True, body[: m.start()]
        if not hedge and (m := re.search(_HEDGE_TAIL, body, _I)):
            hedge, body = m.group(1), body[: m.start()]  # "..., I believe"
        if not body or question or re.match(_QUESTION_START, body, _I):
            continue
        body = re.sub(_QUESTION_TAIL, "", body, flags=_I)  # "I use a CPAP, can I fly with it"
        together = ""
        if m := re.match(_TOGETHER, body, _I) or re.match(_TOGETHER_ME, body, _I):
            together, body = m["who"], f"we {m['rest']}"  # read as "we ..."
        lead = ""
        first = len(out)  # this sentence's clauses start here
        pieces = between_kept(re.split(f"({split})", body, flags=_I))
        iffy = False  # in what a condition governs: "If I had a boat, I would ..."
        for n, part in enumerate(pieces[::2]):
            prev = "".join(pieces[: 2 * n - 1]) if n else None  # the sentence so far
            joined = n > 0 and re.search(r"\band\s*$", pieces[2 * n - 1], _I) is not None
            part = re.sub(r"^(?:and|but|so|also|plus)\s+", "", part.strip(" ,"), flags=_I)
            part = with_owner(without_chatter(part))
            plain = uncleft(part)  # "I'm the one who ...": "I ..."
            singled_out, part = plain != part, plain
            if iffy and not (re.search(CONTRAST, pieces[2 * n - 1], _I) and asserted(part)):
                continue
            iffy = re.match(HYPOTHETICAL, part, _I) is not None
            if iffy:  # only a contrast after it is asserted: "If it rains ..., but my ..."
                m = re.search(rf"\s*[-\u2013\u2014]\s+|,?\s+(?:{CONTRAST})\s+", part, _I)
                part = part[m.end() :] if m and asserted(part[m.end() :]) else ""
                iffy = not part
            if part and not lead and not out and re.match(_LEAD, part, _I):
                lead = part  # "For the trip, I ...": kept with the clause it qualifies
            elif part and joined and first < len(out) and _no_verb(part):
                # "I used my contacts and my skills to ...": an object, not a clause of its own
                out[-1] = replace(out[-1], text=f"{out[-1].text} and {part}")
            elif part and n and first < len(out) and people.unread(part, prev):
                # "... and he is 8" of no one: what it says stays where it was said
                out[-1] = replace(out[-1], text=f"{out[-1].text}{pieces[2 * n - 1]}{part}")
            elif part:
                # "ditched my old ...": "I" unsaid; "... and she loves horses": hers
                part = with_subject(people.named(part, prev if n else None, they=False))
                # "Mei and I watched ... and we've both gone vegan": the same two
                who = together if len(out) == first or re.match(r"we\s", part, _I) else ""
                out.append(
                    _Clause(
                        part, explicit, correction, greeted, lead, hedge, who, laughed, singled_out
                    )
                )
                lead = ""
        greeted = False
    return out


def _no_verb(part: str) -> bool:
    """Whether a "my ..." / "our ..." piece cut off after "and" has no verb of its own."""
    return re.match(r"(?:my|our)\s", part, _I) is not None and not re.search(FINITE, part, _I)


# -- matching a clause -------------------------------------------------------------------

_CONSEQUENCE = (  # "<what happened>, so <the state it led to>"
    r"(?P<head>(?:I|we)\s.+?),?\s+(?:so|and\s+so|which\s+means)\s+(?P<then>(?:I|we|my|our)\s.+)"
)


def _facts(
    text: str, *, greeted: bool = False, explicit: bool = False, singled_out: bool = False
) -> list[Fact]:
    """What one clause states: the first rule that matches, else maybe a plain fact.

    A clause `singled_out` by a cleft ("my husband is the one who is vegetarian", read
    as "my husband is vegetarian") is said on purpose: when neither a rule nor the
    plain-fact reading keeps it, it is kept as said, unless it is no statement or leans
    on what was said before."""
    if re.fullmatch(CHATTER, re.sub(r"[^\w\s']", "", text).strip(), _I):
        return []
    if found := _stated(text, greeted, explicit):
        return found  # the whole, as said ("I'm vegetarian, so please no meat")
    asked = re.sub(_REQUEST_TAIL, "", text, flags=_I)  # "I'm dyslexic, so please ..."
    if asked != text and (found := _stated(asked, greeted, explicit)):
        return found
    if singled_out and not not_a_statement(text) and not leans_on_context(text):
        return [Fact(third_person(text), Kind.SEMANTIC)]
    return []


def _stated(text: str, greeted: bool, explicit: bool) -> list[Fact]:
    """`_facts` of a clause that is not chatter."""
    if found := rule_budget_limit(text):
        return found  # "keep it under £150": said as a request, a standing limit
    if not_a_statement(text):
        return []
    if greeted and (named := greeting_name(text)):
        return named
    if m := re.fullmatch(_CONSEQUENCE, text, _I):
        # "I started eating fish again, so I'm pescatarian now": the state it led to is a
        # fact of its own, on its own field (what the clause before says stays too)
        then = [f for f in rule_facts(m["then"]) if f.field is not None]
        if then:
            return then + _facts(m["head"], explicit=explicit)  # the new state first
    if found := person_facts(text):  # "my sister Ana lives in ...": on a field of hers
        return found
    for rule in RULES:
        if found := rule(text):
            return found
    return generic_facts(text, explicit) or relation_fact(text)  # "my husband is vegetarian"
