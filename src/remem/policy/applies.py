"""What a standing preference applies to, and which requests it applies to.

A standing preference or constraint ("I get seasick", "I'm on a tight budget
this month", "my knees can't handle stairs") should shape a later request for
a recommendation, plan, booking or suggestion ("plan a weekend in Croatia")
even when the two share no word and little meaning. Both are placed in a few
broad life domains (`DOMAINS`), each described by a few sentences; a text's
domains are those its embedding is near (`domains_of`), or, without an
embedder, those whose words it holds. A request (`is_request`) shares a domain
with a standing record (`is_standing`) when the record applies to it. Two
domains cut across every request (`Domain.everywhere`): money and physical
limits bound any plan or purchase, whatever it is about.

The domains are life areas, not the topics of any benchmark: they are meant to
hold for preferences phrased in ways nobody listed. Pure: the cosines come from
the caller (`remem.recall.gather` embeds the descriptions once per embedder).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from remem.model import Kind, Record

# A text is in the domains nearest to it: those whose cosine with it (the best of
# their sentences') is within DOMAIN_MARGIN of the best one and at least
# NEAREST_COSINE (all-MiniLM-L6-v2's scale; below it a text is in no domain).
NEAREST_COSINE = 0.2
DOMAIN_MARGIN = 0.08
CROSS_CUTTING = True


@dataclass(frozen=True, slots=True)
class Domain:
    """A broad area of life: its name, what it covers, and words that place a text in it."""

    name: str
    description: str  # a few sentences, each embedded on its own (`sentences`)
    words: frozenset[str]
    everywhere: bool = False  # a constraint of this domain bounds any request

    @property
    def sentences(self) -> tuple[str, ...]:
        """The description's sentences: a text's cosine with the domain is its best one."""
        return tuple(s.strip() + "." for s in self.description.split(".") if s.strip())


def _d(name: str, description: str, words: str, everywhere: bool = False) -> Domain:
    return Domain(name, description, frozenset(words.split()), everywhere)


DOMAINS: tuple[Domain, ...] = (
    _d(
        "food",
        "Food, meals, recipes and cooking. Restaurants, cafes and eating out. Diets such as "
        "vegetarian or vegan, and foods someone does not eat. Food allergies and "
        "intolerances. Snacks, drinks, flavours and cuisines.",
        "food meal meals recipe recipes dish dishes dinner lunch breakfast restaurant "
        "restaurants cafe eat eating cook cooking cuisine diet vegan vegetarian snack snacks",
    ),
    _d(
        "travel",
        "Trips, holidays and vacations. Hotels, hostels, resorts and where to stay. "
        "Sightseeing, tours and excursions in a city. Visiting another country or "
        "destination.",
        "travel trip trips holiday holidays vacation vacations hotel hotels hostel resort "
        "sightseeing tour tours itinerary destination destinations abroad",
    ),
    _d(
        "outdoors",
        "Outdoor activities, hiking, climbing and camping. Sport, running, cycling, "
        "swimming and skiing. Fitness, the gym, exercise and workouts. Adventures in "
        "nature.",
        "outdoor outdoors hike hiking climb climbing cycling swim swimming ski skiing camping "
        "gym fitness exercise workout workouts sport sports adventure adventures",
    ),
    _d(
        "entertainment",
        "Music, songs, bands and concerts. Films, movies, television shows and series. "
        "Books, novels and reading. Video games and board games. Theatre, museums and "
        "festivals.",
        "music song songs concert concerts band film films movie movies show shows series "
        "book books novel novels game games podcast podcasts theatre museum museums festival",
    ),
    _d(
        "shopping",
        "Shopping and buying things. Clothes, shoes, fashion and outfits. Brands, products "
        "and what they are made of. Gadgets, electronics and gifts.",
        "buy buying shop shopping store stores brand brands clothes clothing fashion outfit "
        "outfits shoes gadget gadgets product products purchase gift gifts",
    ),
    _d(
        "home",
        "The home, the house or apartment. Furniture, decoration, cleaning and chores. "
        "Gardening. Pets, dogs and cats and their care. Children and family routines.",
        "home house apartment garden gardening pet pets dog dogs cat cats kids children "
        "chores furniture",
    ),
    _d(
        "care",
        "Health, wellbeing and sleep. Medicine, doctors and medical conditions. Skincare, "
        "cosmetics and beauty products. Hair, grooming and personal care routines.",
        "health healthy sleep doctor medicine medical skincare skin cosmetics makeup hair "
        "beauty grooming",
    ),
    _d(
        "work",
        "Work, jobs and careers. The office, meetings, projects and colleagues. School, "
        "university and courses. Studying, learning, exams and homework.",
        "work job career office meeting meetings project projects colleague colleagues school "
        "university course courses study studying learn learning exam exams homework",
    ),
    _d(
        "social",
        "Friends and social life. Parties, weddings, birthdays and celebrations. Dates, "
        "going out and nightlife. Gatherings and meeting people.",
        "friend friends party parties wedding weddings birthday birthdays celebration nightlife",
    ),
    _d(
        "transport",
        "Transportation and getting around. Driving and cars. Trains, buses and commuting. "
        "Flights, airlines and seats. Boats, ferries and cruises.",
        "transport transportation drive driving car cars train trains bus buses flight "
        "flights airline boat boats ferry ferries commute commuting cruise cruises",
    ),
    _d(
        "money",
        "A budget and spending limits. Money, costs and prices. Saving money and what "
        "someone can afford. Cheap or expensive things.",
        "budget money afford cheap expensive cost costs price prices spend spending saving savings",
        everywhere=True,
    ),
    _d(
        "limits",
        "Physical limits, disabilities and accessibility. Mobility, wheelchairs, stairs and "
        "long walks. Bad knees, a bad back, hearing or sight. Motion sickness, seasickness "
        "and nausea. A fear of heights, of water or of crowds, and other phobias.",
        "wheelchair stairs mobility accessible accessibility knee knees seasick motion "
        "phobia heights disability disabled",
        everywhere=True,
    ),
)

NAMES = tuple(d.name for d in DOMAINS)
_BY_NAME = {d.name: d for d in DOMAINS}

# Constraint fields of the vocabulary (`remem.policy.fields`) a record holds a
# standing constraint in, beside every preference record.
STANDING_FIELDS = ("diet", "allergies", "allergy", "budget")
_STANDING_FAMILIES = tuple(f"{f}:" for f in STANDING_FIELDS)  # "budget:trip"
_PREFERENCE, _SEMANTIC = Kind.PREFERENCE, Kind.SEMANTIC  # read once, not per record

# The family of fields of standing instructions on how to answer ("answer_style:format",
# "answer_style:order", ...): every packet of the person holds them
# (`remem.recall.instructions`; the offline extractor's are `remem.extract.offline.style`).
ANSWER_STYLE = "answer_style:"

_WORD = re.compile(r"[a-z]+")
# A request asks for something to be chosen, planned, suggested or found: a
# verb of recommending, or a question about what the asker could or should do.
_ASK = re.compile(
    r"\b(?:suggest\w*|rec+om+end\w*|advi[sc]e|ideas?|tips?|plan|planning|book|booking|"
    r"reserve|options?|itinerary|looking\s+for|help\s+me\s+(?:choose|pick|find|decide|plan)|"
    r"where\s+(?:should|can|could|shall)|what\s+(?:should|can|could|shall)|"
    r"how\s+(?:can|could|should|shall)\s+(?:i|we)|best|good|great|resources?|ways?|"
    r"which\s+\w+(?:\s+\w+)?\s+(?:should|would|could)|"
    r"(?:can|could|should|shall)\s+(?:i|we)|(?:i|we)\s+(?:should|could|might|can)|"
    r"help\s+me|are\s+there\s+any|what\s+are\s+some|must-\w+)\b"
)
# ... for the asker, or, asked in general ("what are some good pets for a flat?"), about no
# one named ("what are some of Caroline's hobbies?" is a question about Caroline)
_ASKER = re.compile(
    r"\b(?:i|me|my|we|us|our|ours|you|your)\b|^\s*(?:plan|suggest|recommend|find|book)\b"
)
_GENERAL = re.compile(r"^\s*what(?:\s+are|\s+is|'s)\s+(?:some|the\s+best)\b")
# ... or it names, as its opening words, a thing to be made for the asker: "Packing list for
# a weekend away?", "Gift ideas for a colleague", "What to wear to a winter wedding?"
_THING = re.compile(
    r"^\s*(?:an?\s+|some\s+)?(?:(?!(?:the|this|that|his|her|its|their)\b)[a-z]+[\s-]+)?"
    r"(?:list|check-?list|ideas|tips|suggestions|options|itinerary|plan)\s+(?:for|to)\b"
    r"|^\s*what\s+to\s+(?:pack|bring|wear|buy|get|cook|make|eat|see|read|watch|give)\b"
)


# "Caroline's", after the first word ("What's" is none): about someone named
_SOMEONE = re.compile(r"(?<=\s)[A-Z][a-z]+'s\b")


def is_request(text: str) -> bool:
    """Whether `text` asks for a recommendation, plan, booking or suggestion for the asker,
    or opens by naming a thing to be made for them ("Packing list for ...?", `_THING`)."""
    text = text.replace("\u2019", "'")  # a typographic apostrophe, as in "What\u2019s the best"
    low = text.lower()
    if _THING.search(low) is not None:
        return True
    if _ASK.search(low) is None:
        return False
    return _ASKER.search(low) is not None or (
        _GENERAL.search(low) is not None and _SOMEONE.search(text) is None
    )


# Beside the words `_ASK` reads, "like" frames a request ("I would like ...", "for someone
# like me", "perfumes I might like") and never names what it asks for.
_FRAMING = frozenset({"like"})


def asking_words(text: str) -> frozenset[str]:
    """The words `text` asks with, lower-cased: those `_ASK` reads ("suggest", "recommend",
    "options", "best", "help me", "looking for"; a hyphened word such as "must-watch"
    keeps its parts) and "like" (`_FRAMING`). They say that something is asked for, not
    what (`remem.recall.fusion.without_asking`)."""
    low = text.replace("\u2019", "'").lower()
    asking = {w for m in _ASK.finditer(low) for w in m.group().split() if "-" not in w}
    return frozenset(asking | _FRAMING)


def is_standing(record: Record, domains: Sequence[str] = ()) -> bool:
    """Whether a record holds a standing preference or constraint (likes, dislikes,
    habits, fears, diet, allergies, budget): one that may shape later requests.

    A preference record is one; so is a record of a constraint field
    (`STANDING_FIELDS`), or a fact in a domain that bounds every request
    (`domains`, the record's own): "Knees cannot handle stairs", "Is on a tight
    budget this month".
    """
    kind = record.kind
    if kind is _PREFERENCE:
        return True
    field = record.field or ""
    if field in STANDING_FIELDS or field.startswith(_STANDING_FAMILIES):
        return True
    return kind is _SEMANTIC and any(_BY_NAME[n].everywhere for n in domains)


def domains_of(text: str, cosines: Sequence[float] | None = None) -> tuple[str, ...]:
    """The domains of `text`, in `DOMAINS` order.

    `cosines` are the text's cosines with each domain (in `DOMAINS` order): the
    nearest ones count, within DOMAIN_MARGIN of the best and from NEAREST_COSINE.
    The words of a domain place a text in it too, with or without cosines.
    """
    words = set(_WORD.findall(text.lower()))
    picked = {d.name for d in DOMAINS if words & d.words}
    if cosines is not None:
        least = max(NEAREST_COSINE, max(cosines, default=0.0) - DOMAIN_MARGIN)
        picked |= {d.name for d, c in zip(DOMAINS, cosines, strict=True) if c >= least}
    return tuple(n for n in NAMES if n in picked)


def applies_to(standing: Sequence[str], request: Sequence[str]) -> tuple[str, ...]:
    """The domains through which a standing record (its domains) applies to a request
    (its domains): those they share, or a domain that bounds every request."""
    if not request:
        return ()
    shared = [n for n in standing if n in request or (CROSS_CUTTING and _BY_NAME[n].everywhere)]
    return tuple(shared)
