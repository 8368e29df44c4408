"""Records from casual, British, non-native and chat-style talk come out whole and right.

Filler a chat line ends on ("tho", "lol", an emoji, "so yeah") is cut and a verbless
piece after "so" dropped; a mishap laughed off stays in the event log; "working with"
names no employer; chat words for people ("gf", "hubby", "sis") are said in whole words
and a person said without "my" is the speaker's; a cleft ("I'm the one who ...") says
its clause; a budget said as a limit ("keep it under £150") is the budget (a choice made
"instead of" another: tests/unit/test_choices_left_behind.py). Pure: the extractor.

Every sentence here is written for these tests (none comes from a benchmark file)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from remem.extract import extract_offline
from remem.model import Event, Role

T = datetime(2026, 5, 4, 19, 0, tzinfo=UTC)


def found(said: str, speaker: str | None = None) -> list[tuple[str, str | None, str | None]]:
    meta = {"speaker": speaker} if speaker else {}
    event = Event("ev-1", "t", "a", "s", Role.USER, said, T, meta)
    return [(c.text, c.field, c.value) for c in extract_offline(event)]


def texts(said: str, speaker: str | None = None) -> list[str]:
    return [text for text, _, _ in found(said, speaker)]


# -- 1. filler and fragments at the end ---------------------------------------------------


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("I'm a vet at the Hillside surgery tho", "Is a vet at the Hillside surgery"),
        ("i'm pescatarian anyway", "Is pescatarian"),
        ("I live in Norwich lol", "Lives in Norwich"),
        ("My brother lives in Cardiff \U0001f602", "Brother lives in Cardiff"),
        ("I have a rabbit called Pudding haha x", "Has a rabbit called Pudding"),
        ("I'm a plumber, so yeah", "Is a plumber"),
        ("I moved to Hull last spring but anyway", "Moved to Hull last spring"),
        ("i love bouldering tbh", "Loves bouldering"),
        ("ngl I can't stand olives", "Cannot stand olives"),
        ("I'm coeliac fwiw :)", "Is coeliac"),
        ("I'm vegan and stuff", "Is vegan"),
        ("tho I'm coeliac so no bread pls", "Is coeliac so no bread"),
        ("Though I'm vegan, I eat honey", "Is vegan"),
    ],
)
def test_chat_filler_at_the_end_is_cut(said: str, text: str) -> None:
    assert texts(said)[:1] == [text]


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("I get hay fever every spring so antihistamines", "Gets hay fever every spring"),
        ("I cycle to work most days so cheap commute", "Cycles to work most days"),
        ("I teach piano on weekends so extra cash", "Teaches piano on weekends"),
    ],
)
def test_a_verbless_piece_after_so_is_dropped(said: str, text: str) -> None:
    assert texts(said) == [text]


def test_a_piece_after_so_stays_when_the_rest_would_say_nothing() -> None:
    # "I'm flat hunting" alone is too little to keep: the clause is read whole
    assert texts("I'm flat hunting, so done with the house") == [
        "Is flat hunting, so done with the house"
    ]


@pytest.mark.parametrize(
    ("said", "text"),
    [
        (
            "I get hay fever every spring, so I carry antihistamines",
            "Gets hay fever every spring, so they carry antihistamines",
        ),
        ("I'm allergic to cats so no pets", "Is allergic to cats so no pets"),
        ("I work from home so no commute", "Works from home so no commute"),
        ("I love bouldering so much", "Loves bouldering so much"),
        ("I'm coeliac, so bread matters a lot", "Is coeliac, so bread matters a lot"),
        ("I run every morning so the dog gets walked", "Runs every morning so the dog gets walked"),
    ],
)
def test_what_follows_so_that_says_something_stays(said: str, text: str) -> None:
    assert texts(said)[:1] == [text]


@pytest.mark.parametrize(
    "said", ["I'm 25 jk", "I'm a millionaire lol jk", "i'm vegan, just kidding"]
)
def test_what_is_taken_back_as_a_joke_makes_no_record(said: str) -> None:
    assert found(said) == []


@pytest.mark.parametrize(
    "said",
    [
        "Cat just knocked my tea over again lol",
        "My dog just ate my toast \U0001f602",
        "I literally just walked into a lamp post lmao",
        "my kid just painted the sofa with yoghurt haha",
        "I burnt the porridge again this morning ugh",
        "Ugh, my bus is late again",
    ],
)
def test_a_mishap_laughed_off_makes_no_record(said: str) -> None:
    assert found(said) == []


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("my cat Miso knocks mugs off the table all the time lol", "Cat Miso knocks mugs"),
        ("I just adopted a greyhound called Pip lol", "Just adopted a greyhound called Pip"),
        ("I just got a job at the library haha", "Just got a job at the library"),
    ],
)
def test_a_lasting_fact_said_laughing_is_kept(said: str, text: str) -> None:
    assert any(t.startswith(text) for t in texts(said))


@pytest.mark.parametrize(
    ("said", "text"),
    [
        (
            "I do deliveries nights and weekends to pay rent, sitting in the van right now lol",
            "Does deliveries nights and weekends to pay rent",
        ),
        ("I work at the Co-op most days, on my break right now haha", "Works at the Co-op"),
    ],
)
def test_a_habit_said_from_the_moment_is_kept(said: str, text: str) -> None:
    assert any(t.startswith(text) for t in texts(said))


# -- 2. working with someone is no employer -------------------------------------------------


@pytest.mark.parametrize(
    ("said", "text"),
    [
        (
            "I'm working with a charity on their website",
            "Is working with a charity on their website",
        ),
        (
            "I'm working with my brother on a project",
            "Is working with their brother on a project",
        ),
        ("I work with Maya on the Friday rota", "Works with Maya on the Friday rota"),
        ("I've been working with refugees for years", "Has been working with refugees for years"),
    ],
)
def test_working_with_someone_names_no_employer(said: str, text: str) -> None:
    assert found(said) == [(text, None, None)]


@pytest.mark.parametrize(
    ("said", "employer"),
    [
        ("I work at Finchley Motors", "Finchley Motors"),
        ("I work for the council", "council"),
        ("I'm a nurse at St Anne's", "St Anne's"),
        ("I'm a paramedic with the NHS", "NHS"),
    ],
)
def test_working_at_or_for_still_names_the_employer(said: str, employer: str) -> None:
    assert ("employer", employer) in [(f, v) for _, f, v in found(said)]


def test_an_occupation_with_experience_names_no_employer() -> None:
    assert [f for _, f, _ in found("I'm a developer with ten years of experience")] == [
        "occupation"
    ]


# -- 3. chat words for people and chat spellings -------------------------------------------


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("Gf rose is vegan", "Girlfriend Rose is vegan"),
        ("my gf rose loves sushi", "Girlfriend Rose loves sushi"),
        ("bf tom works nights at the depot", "Boyfriend Tom works nights at the depot"),
        ("my bff lives in Leeds", "Best friend lives in Leeds"),
        ("hubby works at the bank", "Husband works at the bank"),
        ("my lil sis lives in Glasgow", "Little sister lives in Glasgow"),
        ("mum lives in Whitby", "Mum lives in Whitby"),
        ("my big bro is a firefighter in Leeds", "Big brother is a firefighter in Leeds"),
        ("my cuz lives in Dundee", "Cousin lives in Dundee"),
        ("my fave colour is teal", "Favourite colour is teal"),
        ("my bday is on June 9", "Birthday is on June 9"),
    ],
)
def test_chat_words_for_people_are_said_whole(said: str, text: str) -> None:
    assert texts(said)[:1] == [text]


@pytest.mark.parametrize(
    ("said", "field", "value"),
    [
        ("my bff lives in Leeds", "home:best_friend", "Leeds"),
        ("mum lives in Whitby", "home:mum", "Whitby"),
        ("im vegan", "diet", "vegan"),
        ("ive got 2 cats", "count:cat", "2 cats"),
        ("i dont eat lamb", "eats:lamb", "does not eat"),
        ("theyre lovely but i cant eat gluten", "eats:gluten", "does not eat"),
        ("my fave colour is teal", "favorite:color", "teal"),
    ],
)
def test_chat_spellings_are_read(said: str, field: str, value: str) -> None:
    assert (field, value) in [(f, v) for _, f, v in found(said)]


@pytest.mark.parametrize(
    "said",
    [
        "BRO the dog just stole my sandwich off the counter",
        "BRO biscuit just knocked my plant off the shelf",
        "Kids are so resilient honestly",
        "dad jokes are the worst lol",
        "Mother Nature is a mystery",
        "Boss Baby was hilarious",
        "Sister Act is on telly tonight",
    ],
)
def test_words_that_only_look_like_a_person_of_theirs_stay(said: str) -> None:
    assert found(said) == []


def test_bro_said_to_someone_is_nobody() -> None:
    assert texts("thanks bro, I live in Hull") == ["Lives in Hull"]


def test_a_million_is_no_mother_in_law() -> None:
    assert texts("my budget is 2 mil") == ["Budget is 2 mil"]


# -- 4. cleft sentences ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "text", "field"),
    [
        ("I'm the one who can't handle spicy food", "Cannot handle spicy food", "likes:spicy_food"),
        (
            "I'm the one at home who can't handle spicy food",
            "Cannot handle spicy food",
            "likes:spicy_food",
        ),
        ("honestly I'm the only one in the family who eats meat", "Eats meat", "diet"),
        ("It's me who's allergic to kiwi", "Is allergic to kiwi", "allergy:kiwi"),
        ("I'm the one who always cooks", "Always cooks", None),
    ],
)
def test_a_cleft_about_the_speaker_says_its_clause(said: str, text: str, field: str) -> None:
    assert [(t, f) for t, f, _ in found(said)] == [(text, field)]


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("my husband is the one who's vegetarian", "Husband is vegetarian"),
        ("it's my husband who's vegetarian", "Husband is vegetarian"),
        ("my sister's the one who lives in Bath", "Sister lives in Bath"),
        ("Gf is the one who hates mushrooms", "Girlfriend hates mushrooms"),
    ],
)
def test_a_cleft_about_someone_else_is_about_them(said: str, text: str) -> None:
    assert texts(said) == [text]


def test_a_cleft_names_the_speaker_when_one_is_given() -> None:
    assert texts("my husband is the one who's vegetarian", "Priya") == [
        "Priya's husband is vegetarian"
    ]


# -- 5. a budget said as a limit -----------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "text", "value"),
    [
        ("keep it under £150", "Budget is under £150", "£150"),
        ("nothing over $80 please", "Budget is up to $80", "$80"),
        ("max 50 euros", "Budget is up to €50", "€50"),
        ("no more than 200 quid", "Budget is up to £200", "£200"),
        ("£120 tops", "Budget is up to £120", "£120"),
        ("30 quid max for the secret santa", "Budget is up to £30 for the secret santa", "£30"),
        ("ideally under £40 per person", "Budget is under £40 per person", "£40"),
        ("I don't want to spend more than £200", "Budget is up to £200", "£200"),
        ("we can't go over $1,500 for the whole trip", "Budget is up to $1500 for the whole trip",
         "$1500"),
        ("Please keep it around 60 euros, thanks", "Budget is about €60", "€60"),
        ("My budget is maximum 200 euro", "Budget is up to €200", "€200"),
        ("budget max 80 pounds", "Budget is up to £80", "£80"),
        ("Something under £30 would be ideal", "Budget is under £30", "£30"),
        ("I can pay maximum 100 euro", "Can pay maximum 100 euro", "€100"),
    ],
)  # fmt: skip
def test_a_limit_on_spending_is_the_budget(said: str, text: str, value: str) -> None:
    assert found(said) == [(text, "budget", value)]


@pytest.mark.parametrize(
    "said",
    ["keep it under 150 words", "under 150", "the hotel was under £150", "about £50"],
)
def test_an_amount_that_is_no_limit_on_spending_is_no_budget(said: str) -> None:
    assert "budget" not in [f for _, f, _ in found(said)]


def test_a_budget_said_as_a_limit_names_the_speaker() -> None:
    assert texts("keep it under £150", "Olu") == ["Olu's budget is under £150"]


@pytest.mark.parametrize(
    ("said", "text"),
    [
        ("Gf rose is vegan", "Priya's girlfriend Rose is vegan"),
        ("mum lives in Whitby", "Priya's mum lives in Whitby"),
        ("I get hay fever every spring so antihistamines", "Priya gets hay fever every spring"),
        ("I'm the one who can't handle spicy food", "Priya cannot handle spicy food"),
        ("switched to a 10k instead of the half", "Priya switched to a 10k instead of the half"),
    ],
)
def test_chat_style_records_name_their_speaker(said: str, text: str) -> None:
    assert texts(said, "Priya") == [text]
