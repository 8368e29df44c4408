"""Someone the speaker introduced by name ("my daughter Mia") and later names alone ("Mia is
allergic to peanuts") or as "she": the record says whose they are, as a "my daughter"
record does. Whatever could be misread stays as it was: a name never introduced, a
name for two people, the speaker's or the listener's own name, a "she" for two women."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from remem.extract import extract_offline
from remem.extract.offline.named import People, introduced
from remem.model import Event, Role

T = datetime(2026, 4, 2, 18, 0, tzinfo=UTC)


def _event(n: int, said: str, role: Role = Role.USER, speaker: str | None = None) -> Event:
    meta = {"speaker": speaker} if speaker else {}
    return Event(f"ev-{n}", "t", "a", "s", role, said, T + timedelta(minutes=n), meta)


def texts(*turns: str | tuple[str, str | None], speaker: str | None = None) -> list[str]:
    """The records of the last turn, the turns before it its context. A turn given as
    (text, who) is said by `who` (an assistant's when who is "assistant")."""
    events: list[Event] = []
    for n, turn in enumerate(turns):
        said, who = (turn, speaker) if isinstance(turn, str) else turn
        role = Role.ASSISTANT if who == "assistant" else Role.USER
        events.append(_event(n, said, role, None if who == "assistant" else who))
    return [c.text for c in extract_offline(events[-1], events[:-1])]


@pytest.mark.parametrize(
    ("turns", "record"),
    [
        (("My daughter Mia turns 7 on Saturday.", "Mia is allergic to peanuts."),
         "Daughter Mia is allergic to peanuts"),
        (("My son Will was diagnosed last year.", "Will is also autistic."),
         "Son Will is also autistic"),
        (("Sofia, my niece, is staying with us this week.", "Sofia can't have eggs."),
         "Niece Sofia cannot have eggs"),
        (("My son, Leo, is nine now.", "Leo wants to do archery."),
         "Son Leo wants to do archery"),
        (("My sister Ana came over for lunch. She lives in Bristol.",),
         "Sister Ana lives in Bristol"),
        (("My brother Tom called. He's a nurse in Leeds.",), "Brother Tom is a nurse in Leeds"),
        (("My sister Ana came over for lunch. Her birthday is on May 3.",),
         "Sister Ana's birthday is on May 3"),
    ],
)  # fmt: skip
def test_a_named_person_said_again_is_recorded_as_whose_they_are(
    turns: tuple[str, ...], record: str
) -> None:
    assert record in texts(*turns)


def test_a_named_speaker_s_person_is_theirs() -> None:
    said = texts("My daughter Mia turns 7.", "Mia is allergic to peanuts.", speaker="Priya")
    assert said == ["Priya's daughter Mia is allergic to peanuts"]


def test_an_assistant_turn_between_keeps_the_introduction() -> None:
    said = texts(
        "My daughter Mia turns 7 on Saturday.",
        ("Happy birthday to her! Any plans?", "assistant"),
        "Mia is allergic to peanuts, so no cake with nuts.",
    )
    assert any(s.startswith("Daughter Mia is allergic to peanuts") for s in said)


@pytest.mark.parametrize(
    "turns",
    [
        ("Mia is allergic to peanuts.",),  # never introduced
        ("Will is also autistic.",),  # "Will" is a name only when introduced as one
        ("My friend June lives nearby.", "Rose is allergic to peanuts."),  # another name
        # one name for two relations
        ("My daughter Mia turns 7. My best friend Mia is visiting.", "Mia is allergic to peanuts."),
        # the speaker's own name, and the assistant's
        ("My name is Mia. My cousin Mia was named after me.", "Mia is allergic to peanuts."),
        ("I'll call you Max. My dog Max is a beagle.", "Max is allergic to chicken."),
        (("Hi, I am Max.", "assistant"), "My dog Max is a beagle.", "Max is allergic to chicken."),
        # "she": two people, or someone else named, or a relation that says no woman
        ("My sister Ana met my mom for lunch. She lives in Bristol.",),
        ("My sister Ana met Laura for lunch. She lives in Bristol.",),
        ("My friend Ana came over for lunch. She lives in Bristol.",),
        ("My brother Tom came over for lunch. She lives in Bristol.",),
        # another turn: the reply between names someone else, or the turn before no one
        ("My sister Ana came over.", ("How is your mom?", "assistant"), "She lives in Bristol."),
        ("My sister Ana came over.", ("Laura said hi.", "assistant"), "She lives in Bristol."),
        ("My sister Ana came over.", "We had pasta.", "She lives in Bristol."),
        ("My sister Ana came over.", ("She lives in Bristol.", "Ines")),  # another speaker
    ],
)
def test_what_could_be_misread_changes_nothing(turns: tuple[str | tuple[str, str], ...]) -> None:
    said = texts(*turns)
    assert not any(w in s for s in said for w in ("Mia is", "Will is", "Rose", "Max is", "Ana li"))


def test_a_name_after_a_modal_s_place_is_no_subject() -> None:
    said = texts("My son Will turns 9 soon.", "Will you remind me to book his party?")
    assert not any("Will" in s for s in said)
    said = texts("My boss Mark is strict.", "Mark the date: I fly to Oslo on May 3.")
    assert not any("Mark" in s for s in said)


def test_the_other_speaker_s_people_and_names_are_never_rewritten() -> None:
    """Two named speakers talk about each other and about their own people."""
    melanie_s = texts(
        ("My son Leo loves the beach.", "Melanie"),
        ("Leo wants to do archery this summer.", "Caroline"),
    )
    assert not any("Leo" in s for s in melanie_s)
    listener = texts(
        ("Hey Caroline, how are you?", "Melanie"),
        ("My friend Melanie is amazing.", "Caroline"),
        ("Melanie is always so supportive of my painting.", "Caroline"),
    )
    assert not any("friend Melanie" in s for s in listener)


def test_introductions_are_read_off_what_the_speaker_said() -> None:
    people = introduced(["my son, Leo, is nine", "Sofia, my niece, is here", "my boss Mark Jones"])
    assert {n: p.said for n, p in people.by_name.items()} == {
        "Leo": "my son Leo",
        "Sofia": "my niece Sofia",
        "Mark": "my boss Mark Jones",
    }
    assert introduced(["my kids Mia and Leo"]).by_name == {}  # no one kid is named
    assert introduced(["Thanks, my friend."]).by_name == {}
    assert introduced(["Tom, my brother, and Ana"]).by_name == {}  # a list of three


def test_a_clause_is_read_as_said_of_the_person_only_at_its_start() -> None:
    people = introduced(["my daughter Mia"])
    assert people.named("Mia is allergic to peanuts") == "my daughter Mia is allergic to peanuts"
    assert people.named("Mia and I baked bread") == "my daughter Mia and I baked bread"
    assert people.named("Mia and Leo baked bread") == "Mia and Leo baked bread"
    assert people.named("Mia Jones is my boss") == "Mia Jones is my boss"
    assert people.named("I love Mia") == "I love Mia"
    assert People().named("Mia is here") == "Mia is here"


def test_a_name_is_a_content_word_even_when_it_is_a_common_one() -> None:
    """ "Will" counts as a word of what a plain fact is about, as "Mia" does."""
    assert texts("My son Will is also autistic.") == ["Son Will is also autistic"]
    assert texts("My son will be late.") == []


@pytest.mark.parametrize(
    ("turns", "record"),
    [
        # the turn before names one person, who the pronoun can be
        (("My son Leo has a nut allergy.", "He also can't have dairy."),
         "Son Leo also cannot have dairy"),
        (("My son Leo has a nut allergy.", ("Thanks for telling me. Does he react to tree nuts?",
          "assistant"), "He also can't have dairy."), "Son Leo also cannot have dairy"),
        (("My sister Ana came over for lunch.", "She lives in Bristol."),
         "Sister Ana lives in Bristol"),
        (("My sister Ana came over for lunch.", "Her birthday is on May 3."),
         "Sister Ana's birthday is on May 3"),
        (("My son Leo is obsessed with trains.", ("Adorable! How old is he?", "assistant"),
          "He's 5."), "Son Leo is 5 years old"),
    ],
)  # fmt: skip
def test_a_pronoun_opening_the_next_turn_is_read_as_said_of_the_one_person(
    turns: tuple[str | tuple[str, str], ...], record: str
) -> None:
    assert texts(*turns) == [record]


@pytest.mark.parametrize(
    "turns",
    [
        ("My son Leo and my brother Tom came over.", "He also can't have dairy."),  # two men
        ("My son Leo has a nut allergy.", ("Your husband said so too.", "assistant"),
         "He also can't have dairy."),  # someone else in the reply
        ("My son Leo has a nut allergy.", ("Tom said the same.", "assistant"),
         "He also can't have dairy."),
        ("My son Leo has a nut allergy.", ("Noted.", "assistant"), "Ok.",
         ("Anything else?", "assistant"), "He also can't have dairy."),  # not the turn before
        ("My daughter Mia has a nut allergy.", "He also can't have dairy."),  # no man
        ("He also can't have dairy.",),  # no one at all
    ],
)  # fmt: skip
def test_an_ambiguous_pronoun_is_not_guessed_and_stores_nothing_of_the_user(
    turns: tuple[str | tuple[str, str], ...],
) -> None:
    """Not "Son Leo ...", and neither "Cannot have dairy" as if the user had said it."""
    assert texts(*turns) == []


@pytest.mark.parametrize(
    ("turns", "record"),
    [
        (("My friend Sam is vegan. They also don't drink alcohol.",),
         "Friend Sam also does not drink alcohol"),
        (("My friend Sam lives in Leeds.", "They're a nurse at the hospital."),
         "Friend Sam is a nurse at the hospital"),
        (("My partner Alex lives in Leeds. Their sister is a nurse.",),
         "Partner Alex's sister is a nurse"),
    ],
)  # fmt: skip
def test_a_singular_they_is_read_when_it_can_mean_no_one_else(
    turns: tuple[str, ...], record: str
) -> None:
    assert record in texts(*turns)


@pytest.mark.parametrize(
    "turns",
    [
        ("My friend Sam loves dinosaurs. They are so cool.",),  # the dinosaurs
        ("My friend Sam and I went hiking. They loved it.",),  # the two of them, or who?
        ("My son Leo came over. They stayed for dinner.",),  # a son is "he"
        ("My friend Sam came with Laura. They stayed for dinner.",),  # two people
        ("My friend Sam lives in Leeds.", ("Do they like it there?", "assistant"),
         "They work at the hospital."),  # the reply's own "they"
    ],
)  # fmt: skip
def test_a_they_that_may_mean_others_is_not_read(turns: tuple[str | tuple[str, str], ...]) -> None:
    said = texts(*turns)
    assert not any(s.startswith("Friend Sam") and "dinner" in s for s in said)
    assert not any(w in s for s in said for w in ("Sam loved", "Sam is so cool", "Son Leo stayed"))
    assert not any("hospital" in s for s in said)


@pytest.mark.parametrize(
    ("turns", "record"),
    [
        (("My daughter Mia is 6.", "I think Mia is lactose intolerant now."),
         "Thinks their daughter Mia is lactose intolerant now"),
        (("My daughter Mia is 6.", "Turns out Mia is allergic to kiwi."),
         "Daughter Mia is allergic to kiwi"),
        (("My daughter Mia is 6.", "I just found out that Mia needs glasses."),
         "Daughter Mia needs glasses"),
        (("My daughter Mia is 6.", "Apparently Mia hates loud noises."),
         "Daughter Mia hates loud noises"),
        (("Ana, my sister, lives in Leeds.",), "Sister Ana lives in Leeds"),
        # read before this change too, kept so: a filler before the name
        (("My daughter Mia is 6.", "btw Mia is starting school in September."),
         "Daughter Mia is starting school in September"),
        (("My daughter Mia is 6.", "oh and Mia hates loud noises."),
         "Daughter Mia hates loud noises"),
    ],
)  # fmt: skip
def test_a_name_after_a_hedge_or_a_lead_in_is_read_as_said_of_the_person(
    turns: tuple[str, ...], record: str
) -> None:
    assert texts(*turns) == [record]


def test_a_hedged_fact_of_a_person_keeps_its_hedge_and_no_field() -> None:
    events = [
        _event(0, "My daughter Mia is 6."),
        _event(1, "I think Mia is lactose intolerant now."),
    ]
    (hedged,) = extract_offline(events[1], events[:1])
    assert hedged.field is None


@pytest.mark.parametrize(
    "turns",
    [
        ("I think Paris is lovely.",),
        ("My daughter Mia is 6.", "I think Rose is allergic to kiwi."),  # never introduced
        ("My daughter Mia is 6.", "Apparently Will is coming."),
    ],
)
def test_a_name_never_introduced_after_a_hedge_stores_nothing(turns: tuple[str, ...]) -> None:
    assert texts(*turns) == []


def test_a_pronoun_beside_the_user_is_no_one_s_name() -> None:
    """ "He and I ..." with no one to read "he" as: the user's part, not "The user"."""
    assert texts("He and I went hiking in the Alps.") == ["Went hiking in the Alps"]
    assert texts("My son Leo has a nut allergy.", "He and I went hiking in the Alps.") == [
        "The user and their son Leo went hiking in the Alps"
    ]


def test_a_person_s_clause_after_but_is_theirs_and_an_and_keeps_the_sentence_whole() -> None:
    kids = "My son Leo is 7 and my daughter Mia is 4."
    assert texts(kids, "Leo loves the beach, but Mia hates loud noises.") == [
        "Son Leo loves the beach",
        "Daughter Mia hates loud noises",
    ]
    assert texts(kids, "I'm vegetarian but Mia eats meat.") == [
        "Is vegetarian",
        "Daughter Mia eats meat",
    ]
    # "and" joins what one clause says; a list of names is no clause of its own
    assert texts(kids, "We went to the zoo and Mia loved the penguins.") == [
        "The user says they went to the zoo and Mia loved the penguins"
    ]
    assert not any("Mia are" in s for s in texts(kids, "Leo and Mia are twins."))


def test_a_possessive_that_leaves_out_its_noun_is_not_read() -> None:
    """ "Mia's is pasta": whose what? Not "Daughter Mia's is pasta"."""
    said = texts("My daughter Mia is 4.", "Leo's favourite food is pizza; Mia's is pasta.")
    assert not any("Mia's is" in s for s in said)


@pytest.mark.parametrize(
    ("turns", "record"),
    [
        (("I have a daughter named Mia.", "Mia is allergic to peanuts."),
         "Daughter Mia is allergic to peanuts"),
        (("My son's name is Leo.", "Leo can't have dairy."), "Son Leo cannot have dairy"),
        (("I have a sister called Ana.", "She lives in Bristol."), "Sister Ana lives in Bristol"),
        (("I've got a dog named Rex.", "Rex is 3."), "Dog Rex is 3 years old"),
        (("My sister is called Ana.", "Ana is a nurse."), "Sister Ana is a nurse"),
        (("I also have another sister named Bec.", "Bec lives in Leeds."),
         "Sister Bec lives in Leeds"),
    ],
)  # fmt: skip
def test_a_person_introduced_as_having_a_name_is_read_as_said_of_them(
    turns: tuple[str, ...], record: str
) -> None:
    assert texts(*turns) == [record]


@pytest.mark.parametrize(
    ("said", "records"),
    [
        ("My daughter Mia is 6 and she loves horses.",
         ["Daughter Mia is 6 years old", "Daughter Mia loves horses"]),
        ("My son Leo is 9, he is allergic to peanuts.",
         ["Son Leo is 9 years old", "Son Leo is allergic to peanuts"]),
        # what only the sentence before says ("there", "it"), or of no one: one record
        ("My sister Ines moved to Oslo and she loves the light there.",
         ["Sister Ines moved to Oslo and she loves the light there"]),
        ("My daughter Mia is 6 and he is 8.", ["Daughter Mia is 6 years old"]),  # he: who?
        ("My son Leo and my brother Tom came, and he stayed.", ["Brother Tom came, and he stayed"]),
    ],
)  # fmt: skip
def test_a_he_or_she_after_and_is_the_person_the_sentence_named(
    said: str, records: list[str]
) -> None:
    assert texts(said) == records
