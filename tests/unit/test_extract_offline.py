"""The offline extractor, case by case: what one user turn turns into."""

from __future__ import annotations

from datetime import timedelta

import pytest

from remem.extract import EXTRACTOR_VERSION, extract_offline
from remem.extract.offline.extractor import STRATEGY
from remem.model import Authority, Candidate, Event, Kind, Role, Sensitivity
from tests.support.extract import T, ev, extract


def one(text: str) -> Candidate:
    found = extract(text)
    assert len(found) == 1, [c.text for c in found]
    return found[0]


def asked(question: str) -> tuple[Event, ...]:
    """A session in which the assistant has just asked `question`."""
    return (
        ev("hi", Role.USER, "ev-0", minutes=1),
        ev(question, Role.ASSISTANT, "ev-q", minutes=2),
    )


# -- routine chatter and questions store nothing -----------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "hmm, let me think",
        "ok",
        "OK.",
        "thanks!",
        "Thank you so much!",
        "sounds good",
        "lol",
        "yes",
        "no",
        "hi there",
        "Hello!",
        "got it, thanks",
        "I see",
        "I think so",
        "I'm not sure what you mean",
        "I'm good, thanks",
        "I love it",
        "I like your idea",
        "I'd love to hear more",
        "I was wondering if you could help me",
        "I have a question about my booking",
        "I need a hotel in Paris for 3 nights",
        "I'll get back to you tomorrow on that",
        "I'd like a table for two",
        "I'm so excited about the trip",
        "my question is whether the hotel has parking",
        "remember to call mom",
        "",
        "   ",
    ],
)
def test_routine_chatter_stores_nothing(text: str) -> None:
    assert extract(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "what do you think?",
        "do I like pizza?",
        "where do I live?",
        "where do I live",
        "Am I allergic to anything?",
        "Do you remember where I live?",
        "is my flight on March 3?",
    ],
)
def test_questions_store_nothing(text: str) -> None:
    assert extract(text) == []


@pytest.mark.parametrize("role", [Role.ASSISTANT, Role.TOOL, Role.SYSTEM])
def test_only_user_turns_are_read(role: Role) -> None:
    event = ev("I prefer aisle seats. Remember that my passport expires in 2031.", role)
    assert extract_offline(event) == []


# -- provenance ----------------------------------------------------------------------------


def test_candidates_carry_their_source_event_and_extractor() -> None:
    (c,) = extract_offline(ev("I prefer aisle seats", event_id="ev-77", minutes=3))
    assert c.source.type == "event"
    assert c.source.event_ids == ("ev-77",)
    assert c.source.strategy == STRATEGY == "offline"
    assert c.source.extractor == EXTRACTOR_VERSION == "offline-rules/1"
    assert c.observed_at == T + timedelta(minutes=3)
    assert c.authority is Authority.INFERRED


def test_extraction_is_deterministic() -> None:
    text = "I'm 34 and I live in Lisbon. I love hiking! Our budget is $500."
    assert extract(text) == extract(text)


# -- preferences ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field", "value", "statement"),
    [
        ("I prefer aisle seats", "preference:seat", "aisle seats", "Prefers aisle seats"),
        ("I prefer window seats over aisle seats", "preference:seat", "window seats", None),
        ("I'd rather take the train than fly", "preference:transport", "take the train", None),
        ("I prefer email", "preference:contact", "email", "Prefers email"),
        ("I prefer tea to coffee", "preference:drink", "tea", None),
        ("I prefer dark mode", "preference:theme", "dark mode", None),
        ("my seat preference is aisle", "preference:seat", "aisle", None),
        ("I can't stand cilantro", "likes:cilantro", "dislikes", "Cannot stand cilantro"),
        ("I hate olives", "likes:olive", "dislikes", "Hates olives"),
        ("I don't like spicy food", "likes:spicy_food", "dislikes", "Does not like spicy food"),
        ("I'm not into horror movies", "likes:horror_movie", "dislikes", None),
        ("I love hiking", "likes:hiking", "likes", "Loves hiking"),
        ("I'm a big fan of jazz", "likes:jazz", "likes", None),
        ("my favourite colour is blue", "favorite:color", "blue", "Favourite colour is blue"),
        ("Pizza is my favourite food", "favorite:food", "pizza", None),
        # a name keeps its capitals as said; a clause's first word is capitalised anyway
        ("My favorite band is The Beatles", "favorite:band", "Beatles", None),
        ("my favourite month is May", "favorite:month", "May", None),
        ("New York is my favorite city", "favorite:city", "New York", None),
        ("I prefer Python over Java", "preference:programming_language", "Python", None),
        ("my favourite show is BBC News", "favorite:show", "BBC News", None),
    ],
)
def test_preferences(text: str, field: str, value: str, statement: str | None) -> None:
    c = one(text)
    assert (c.kind, c.field, c.value) == (Kind.PREFERENCE, field, value)
    if statement is not None:
        assert c.text == statement


@pytest.mark.parametrize(
    "text",
    ["I like pizza", "I love pizza", "I really enjoy pizza", "I adore pizza", "i LOVE pizza!"],
)
def test_loving_and_liking_a_thing_are_the_same_field_and_value(text: str) -> None:
    c = one(text)
    assert (c.field, c.value) == ("likes:pizza", "likes")


def test_a_later_dislike_lands_on_the_same_field_with_another_value() -> None:
    before, after = one("I love pizza"), one("I don't like pizza anymore")
    assert before.field == after.field == "likes:pizza"
    assert (before.value, after.value) == ("likes", "dislikes")
    assert after.is_correction and not before.is_correction


def test_window_after_aisle_is_the_same_preference() -> None:
    assert one("I prefer aisle seats").field == one("I'd prefer a window seat").field


@pytest.mark.parametrize("text", ["I prefer not to say", "I'd rather not talk about it"])
def test_declining_to_answer_is_not_a_preference(text: str) -> None:
    assert extract(text) == []


# -- self-descriptions ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field", "value", "statement"),
    [
        ("I'm vegetarian", "diet", "vegetarian", "Is vegetarian"),
        ("i'm vegan", "diet", "vegan", "Is vegan"),
        ("I'm a vegetarian, so no meat please", "diet", "vegetarian", None),
        ("I am a nurse", "occupation", "nurse", "Is a nurse"),
        ("I work as a nurse", "occupation", "nurse", "Works as a nurse"),
        ("I work at Google", "employer", "Google", "Works at Google"),
        ("I'm unemployed", "occupation", "unemployed", None),
        ("my name is Ana", "name", "Ana", "Name is Ana"),
        ("My name's ana silva", "name", "Ana Silva", None),
        ("call me Sam", "name", "Sam", None),
        ("I'm 34 years old", "age", "34", "Is 34 years old"),
        ("I'm thirty-four", "age", "34", None),
        ("I live in Lisbon", "home", "Lisbon", "Lives in Lisbon"),
        ("i live in lisbon", "home", "Lisbon", None),
        ("I've been living in Lisbon for 5 years", "home", "Lisbon", None),
        ("I live in the Bay Area", "home", "Bay Area", None),
        ("I moved to Porto", "home", "Porto", "Moved to Porto"),
        ("I'm from Brazil", "origin", "Brazil", "Is from Brazil"),
        ("I'm allergic to peanuts", "allergy:peanut", "allergic", "Is allergic to peanuts"),
        ("I have a peanut allergy", "allergy:peanut", "allergic", None),
        ("I have two kids", "children", "2 children", "Has two kids"),
        ("I have no kids", "children", "0 children", None),
        ("I have 3 cats", "count:cat", "3 cats", None),
        ("my wife is called Ana", "relation:wife", "Ana", "Wife is called Ana"),
        ("my husband's name is Tom", "relation:husband", "Tom", None),
        ("I have a dog named Rex", "relation:dog", "Rex", "Has a dog named Rex"),
        ("my boss is Mark Jones", "relation:boss", "Mark Jones", None),
        ("I'm married to Ana", "relation:spouse", "Ana", None),
        ("my sister lives in Berlin", "home:sister", "Berlin", "Sister lives in Berlin"),
        ("my email is Ana@Example.com", "email", "ana@example.com", None),
        ("I don't eat pork", "eats:pork", "does not eat", "Does not eat pork"),
    ],
)
def test_self_descriptions(text: str, field: str, value: str, statement: str | None) -> None:
    c = one(text)
    assert (c.kind, c.field, c.value) == (Kind.SEMANTIC, field, value)
    if statement is not None:
        assert c.text == statement


def test_personal_and_health_data_carry_their_sensitivity() -> None:
    assert one("I'm allergic to peanuts").sensitivity is Sensitivity.SENSITIVE
    assert one("my name is Ana").sensitivity is Sensitivity.PERSONAL
    assert one("I live in Lisbon").sensitivity is Sensitivity.PERSONAL
    assert one("I prefer aisle seats").sensitivity is Sensitivity.NORMAL


def test_a_job_at_a_company_is_two_facts() -> None:
    found = {c.field: c for c in extract("I'm a software engineer at Google")}
    assert found["occupation"].value == "software engineer"
    assert found["employer"].value == "Google"
    assert found["employer"].text == "Works at Google"


def test_each_allergen_is_its_own_field() -> None:
    found = extract("I'm allergic to peanuts and shellfish")
    assert [(c.field, c.value) for c in found] == [
        ("allergy:peanut", "allergic"),
        ("allergy:shellfish", "allergic"),
    ]


@pytest.mark.parametrize("text", ["Hi, I'm Sam", "Hello! I'm Sam.", "hey there, I'm Sam"])
def test_a_name_after_a_greeting(text: str) -> None:
    c = one(text)
    assert (c.field, c.value) == ("name", "Sam")


@pytest.mark.parametrize(
    "text", ["I'm Italian", "my sister is Italian", "call me tomorrow", "I'm an optimist"]
)
def test_things_that_only_look_like_self_descriptions(text: str) -> None:
    assert all(c.field not in ("name", "relation:sister", "occupation") for c in extract(text))


@pytest.mark.parametrize(
    "text",
    [
        "I'm a great cook, honestly",
        "I am a terrible driver",
        "I'm a really keen baker",
        "I'm not a very good singer",
        "I am a big fan of jazz",
    ],
)
def test_how_well_one_does_a_thing_is_no_occupation(text: str) -> None:
    """Said after "I'm a nurse", "I'm a great cook" superseded the nurse: a judgement of a
    skill is a plain fact, on no field."""
    found = extract(text)
    assert found, text
    assert all(c.field is None or "occupation" not in c.field for c in found), found


def test_a_great_cook_leaves_the_nurse_in_place() -> None:
    nurse, cook = one("I'm a nurse"), one("I'm a great cook")
    assert (nurse.field, nurse.value) == ("occupation", "nurse")
    assert cook.field is None and cook.text == "Is a great cook"
    assert (one("I'm a pastry cook").field, one("I'm a bus driver").value) == (
        "occupation",
        "bus driver",
    )


# -- explicit "remember that" ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field", "value", "statement"),
    [
        (
            "remember that my passport expires in 2031",
            "date:passport_expiry",
            "2031",
            "Passport expires in 2031",
        ),
        ("please remember I prefer window seats", "preference:seat", "window seats", None),
        (
            "don't forget that I'm allergic to shellfish",
            "allergy:shellfish",
            "allergic",
            "Is allergic to shellfish",
        ),
        ("Note: I'm lactose intolerant", "diet:lactose_intolerant", "lactose-intolerant", None),
        ("Can you remember that I prefer aisle seats?", "preference:seat", "aisle seats", None),
        ("remember that Sam is vegetarian", None, None, "Sam is vegetarian"),
        ("Please note that the office code is blue", None, None, "The office code is blue"),
        (
            "Keep in mind: our neighbours are noisy at night",
            None,
            None,
            "Neighbours are noisy at night",
        ),
    ],
)
def test_explicit_statements_are_confirmed(
    text: str, field: str | None, value: str | None, statement: str | None
) -> None:
    c = one(text)
    assert c.authority is Authority.CONFIRMED
    assert (c.field, c.value) == (field, value)
    if field is None:
        assert c.kind is Kind.SEMANTIC
    if statement is not None:
        assert c.text == statement


def test_a_remembered_preference_stays_a_preference() -> None:
    c = one("remember that I prefer aisle seats")
    assert (c.kind, c.authority, c.text) == (
        Kind.PREFERENCE,
        Authority.CONFIRMED,
        "Prefers aisle seats",
    )


# -- quantities and dates ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("our budget for the trip is $500", "budget", "$500"),
        ("our budget increased to $750", "budget", "$750"),
        ("the budget is now $750", "budget", "$750"),
        ("we have a budget of 2,000 euros", "budget", "\u20ac2000"),
        ("I can spend up to $300", "budget", "$300"),
        ("Budget is $1.5k", "budget", "$1500"),
        ("our rent is 1200 euros a month", "rent", "\u20ac1200"),
        ("my flight is on March 3", "date:flight", "March 3"),
        ("my birthday is 12 May", "date:birthday", "12 May"),
        ("the meeting moved to Friday", "date:meeting", "Friday"),
        ("my deadline is next monday", "date:deadline", "next Monday"),
        ("my flight to Paris got moved to March 5", "date:flight", "March 5"),
        ("the report is due Friday", "date:report_due", "Friday"),
        ("I was born in 1990", "date:birthday", "1990"),
    ],
)
def test_quantities_and_dates(text: str, field: str, value: str) -> None:
    c = one(text)
    assert (c.kind, c.field, c.value) == (Kind.SEMANTIC, field, value)


def test_a_budget_update_without_its_qualifier_lands_on_the_same_field() -> None:
    before = one("our budget for the trip is $500")
    after = one("our budget increased to $750")
    assert before.field == after.field == "budget"
    assert before.value != after.value
    assert "trip" in before.text
    assert after.is_correction


def test_unrelated_amounts_are_not_quantities() -> None:
    assert all(c.field is None for c in extract("the hotel is $200 a night"))


# -- updates and corrections ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("original", "update"),
    [
        ("I live in Lisbon", "actually I moved to Porto"),
        ("I live in Lisbon", "We moved to Porto last year"),
        ("I'm vegetarian", "actually, I'm not vegetarian any more"),
        ("I'm vegetarian", "I no longer eat meat"),
        ("I'm vegetarian", "I eat meat again"),
        ("I'm vegetarian", "I went vegan last year"),
        ("my name is Ana", "no, my name is Bob"),
        ("my flight is on March 3", "correction: my flight is on March 5"),
        ("the meeting is on Thursday", "the meeting moved to Friday"),
        ("I am a nurse", "I'm no longer a nurse"),
        ("I am a nurse", "I retired last year"),
        ("I love pizza", "I don't like pizza anymore"),
        ("I prefer aisle seats", "Actually, I prefer window seats now"),
        ("I'm 34", "I just turned 35"),
        ("my sister lives in Berlin", "my sister moved to Munich"),
    ],
)
def test_updates_land_on_the_original_field_as_corrections(original: str, update: str) -> None:
    before, after = one(original), one(update)
    assert before.field is not None
    assert after.field == before.field
    assert after.value != before.value
    assert after.is_correction
    assert not before.is_correction


def test_negation_gives_another_value_on_the_same_field() -> None:
    c = one("I'm not vegetarian anymore")
    assert (c.field, c.value, c.is_correction) == ("diet", "not vegetarian", True)


# -- plain first-person facts --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I have a meeting with Sam on Friday", "Has a meeting with Sam on Friday"),
        ("we are going to Japan in April", "The user says they are going to Japan in April"),
        ("I speak Portuguese and English fluently", "Speaks Portuguese and English fluently"),
        ("I go to the gym every Monday and Wednesday", None),
        ("my car broke down on the highway yesterday", "Car broke down on the highway yesterday"),
    ],
)
def test_generic_first_person_facts(text: str, statement: str | None) -> None:
    c = one(text)
    assert (c.kind, c.field, c.value, c.authority) == (
        Kind.SEMANTIC,
        None,
        None,
        Authority.INFERRED,
    )
    if statement is not None:
        assert c.text == statement


@pytest.mark.parametrize(
    "text",
    ["I drive a Tesla", "Sam is vegetarian", "The weather is lovely today", "Book me a flight"],
)
def test_short_or_third_person_statements_are_not_stored(text: str) -> None:
    assert extract(text) == []


# -- sentences, clauses, text --------------------------------------------------------------


def test_every_sentence_and_clause_is_read() -> None:
    found = extract("I'm 34 and I live in Lisbon. I love hiking! Ok, thanks.")
    assert [(c.field, c.value) for c in found] == [
        ("age", "34"),
        ("home", "Lisbon"),
        ("likes:hiking", "likes"),
    ]


def test_identical_candidates_in_one_event_are_kept_once() -> None:
    found = extract("I love pizza. I love pizza!\nI love   pizza")
    assert len(found) == 1


def test_whitespace_and_trailing_punctuation_are_normalised() -> None:
    c = one("   I   prefer\taisle seats!!!  ")
    assert c.text == "Prefers aisle seats"


def test_mid_sentence_pronouns_become_third_person() -> None:
    c = one("I have dinner with my parents every Sunday")
    assert c.text == "Has dinner with their parents every Sunday"


def test_curly_apostrophes_are_understood() -> None:
    c = one("I\u2019m allergic to cats")
    assert (c.field, c.value) == ("allergy:cat", "allergic")


def test_text_is_at_most_500_characters() -> None:
    text = "I have a collection of " + " and ".join(f"stamp{i}" for i in range(60))
    (c,) = extract(text)
    assert len(c.text) <= 500


# -- bare answers, read with the assistant's question --------------------------------------


@pytest.mark.parametrize(
    ("question", "answer", "field", "value", "correction"),
    [
        ("Are you still vegetarian?", "not anymore", "diet", "not vegetarian", True),
        ("Are you still vegetarian?", "yes", "diet", "vegetarian", False),
        ("Are you vegetarian?", "no", "diet", "not vegetarian", False),
        ("Do you like spicy food?", "yes, I do", "likes:spicy_food", "likes", False),
        ("Do you still eat meat?", "nope", "diet", "no meat", True),
        ("Great. Is your flight on March 3?", "yes", "date:flight", "March 3", False),
        ("Do you live in Lisbon?", "yeah", "home", "Lisbon", False),
        ("Have you got any kids?", "no", "children", "0 children", False),
    ],
)
def test_a_bare_answer_is_read_with_the_question(
    question: str, answer: str, field: str, value: str, correction: bool
) -> None:
    (c,) = extract(answer, asked(question))
    assert (c.field, c.value, c.is_correction) == (field, value, correction)
    assert c.source.event_ids == ("ev-q", "ev-1")  # erasing it empties the question too


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Do you want me to book it?", "yes"),
        ("Would you prefer window or aisle?", "aisle"),
        ("Are you allergic to anything?", "no"),
        ("I booked the hotel.", "yes"),
    ],
)
def test_answers_that_say_nothing_durable(question: str, answer: str) -> None:
    assert extract(answer, asked(question)) == []


def test_an_answer_needs_the_assistant_question_right_before_it() -> None:
    context = (*asked("Are you still vegetarian?"), ev("thanks", Role.USER, "ev-2", minutes=3))
    assert extract("not anymore", context) == []
    assert extract("not anymore") == []


def test_a_question_asked_after_the_answer_is_not_its_question() -> None:
    later = (ev("Are you vegetarian?", Role.ASSISTANT, "ev-late", minutes=60),)
    assert extract("yes", later) == []


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("Good news: our budget increased to $3200.", "budget", "$3200"),
        ("Great news, I got a new job as a nurse.", "occupation", "nurse"),
        ("Update: I moved to Porto.", "home", "Porto"),
    ],
)
def test_news_lead_ins_are_skipped(text: str, field: str, value: str) -> None:
    c = one(text)
    assert (c.field, c.value) == (field, value)


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("that's wrong \u2014 I'm not vegetarian any more", "diet", "not vegetarian"),
        ("That is wrong: I live in Porto", "home", "Porto"),
        ("that isn't right, I work as a teacher", "occupation", "teacher"),
    ],
)
def test_corrections_that_say_so(text: str, field: str, value: str) -> None:
    c = one(text)
    assert (c.field, c.value, c.is_correction) == (field, value, True)


# -- records that read well (issue 20): only the verb is conjugated ---------------------


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I strongly dislike seafood", "Strongly dislikes seafood"),
        ("I strictly follow a low-sodium diet", "Strictly follows a low-sodium diet"),
        ("I exclusively listen to vinyl records", "Exclusively listens to vinyl records"),
        ("I deeply love old jazz records", "Deeply loves old jazz records"),
        ("I firmly refuse to fly on budget airlines", "Firmly refuses to fly on budget airlines"),
        ("I need to avoid gluten at every meal", "Needs to avoid gluten at every meal"),
        ("I dislike crowded gyms and prefer running outdoors",
         "Dislikes crowded gyms and prefers running outdoors"),
    ],
)  # fmt: skip
def test_only_the_verb_is_conjugated(text: str, statement: str) -> None:
    assert one(text).text == statement


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I remember that my gym locker is number 112", "Gym locker is number 112"),
        ("I know that my passport expires in 2031", "Passport expires in 2031"),
    ],
)
def test_i_remember_that_keeps_the_asserted_clause(text: str, statement: str) -> None:
    assert one(text).text == statement


# -- fragments and non-facts store nothing ------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "```text\nI live in Lisbon and I work as a nurse.\n```",
        "my_list = [1, 2, 3];\nmy favourite number is 7;\nprint(my_list)",
        "Please summarize this: I grew up in Porto. I love the sea and I fish every morning.",
        "In this paper we present a tool for inter-\nactive editing. We found that our users\n"
        "liked it. We conducted a pilot study with twelve designers.",
        "I love hiking. " * 100,
    ],
)
def test_code_and_pasted_text_store_nothing(text: str) -> None:
    assert extract(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "Remember, you're worth it too.",
        "I'm super proud of all you've achieved",
        "I'm grateful for everything you've taught me",
        "If I had a boat, I would sail every weekend",
        "I would move to Norway if I won the lottery",
        "I'd spend my holidays in Spain if I ____ enough money",
        "We conducted initial pilot testing of",
        "My grandmother always said that the best gardens are planted by",
    ],
)
def test_listener_remarks_hypotheticals_blanks_and_fragments_store_nothing(text: str) -> None:
    assert extract(text) == []


# -- plain preference statements yield a record that keeps the statement whole ----------


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I prefer not to drive at night", "Prefers not to drive at night"),
        ('"I have a strong aversion to horror films."', "Has a strong aversion to horror films"),
        ("\u201cI only wear shoes made without leather.\u201d",
         "Only wears shoes made without leather"),
        ("'I'm allergic to hazelnuts.'", "Is allergic to hazelnuts"),
        ("A quiet room is a must for me", "A quiet room is a must for them"),
        ("I dislike anything involving heights or ladders",
         "Dislikes anything involving heights or ladders"),
        ("I strongly prefer trains over buses", "Strongly prefers trains over buses"),
    ],
)  # fmt: skip
def test_plain_preference_statements_yield_a_record(text: str, statement: str) -> None:
    assert one(text).text == statement


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("For the trip, I prefer hostels near the station",
         "For the trip, prefers hostels near the station"),
        ("On long flights, I always book an aisle seat",
         "On long flights, always books an aisle seat"),
        ("Due to my back problems, I avoid long bus rides",
         "Due to their back problems, avoids long bus rides"),
    ],
)  # fmt: skip
def test_a_record_keeps_the_qualifier_said_before_it(text: str, statement: str) -> None:
    assert one(text).text == statement


def test_two_likes_with_different_qualifiers_are_two_fields() -> None:
    pixel = one("I dislike games with pixel art")
    horror = one("I dislike games with horror themes")
    assert pixel.field != horror.field


# -- a record names its subject when the thread has several people -----------------------


def said_by(text: str, speaker: object) -> list[Candidate]:
    event = Event("ev-1", "acme", "u42", "s1", Role.USER, text, T, {"speaker": speaker})
    return extract_offline(event)


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("Priya: I just adopted a rescue greyhound.", "Priya just adopted a rescue greyhound"),
        ("I just adopted a rescue greyhound.", "Priya just adopted a rescue greyhound"),
        ("My sister lives in Oslo.", "Priya's sister lives in Oslo"),
        ("We bake bread every Sunday with my kids.",
         "Priya says they bake bread every Sunday with their kids"),
        ("My favourite colour is green.", "Priya's favourite colour is green"),
        ("I'm 41.", "Priya is 41 years old"),
        ("I strongly dislike cold showers.", "Priya strongly dislikes cold showers"),
        ("Honestly, helping others is important to me.",
         "Helping others is important to Priya"),
    ],
)  # fmt: skip
def test_a_named_speaker_is_the_subject_of_the_record(text: str, statement: str) -> None:
    (c,) = said_by(text, "Priya")
    assert c.text == statement


def test_each_item_of_a_split_fact_names_the_speaker() -> None:
    found = said_by("I'm allergic to peanuts and shellfish.", "Priya")
    assert [c.text for c in found] == [
        "Priya is allergic to peanuts",
        "Priya is allergic to shellfish",
    ]


def test_a_remark_that_is_nobody_s_fact_stores_nothing_in_a_named_thread() -> None:
    assert said_by("Remember, patience pays off in the end.", "Priya") == []


@pytest.mark.parametrize("speaker", ["user", "", None, 42, "a\nb: c", "Dr. Who; drop"])
def test_without_a_usable_name_the_record_keeps_the_note_form(speaker: object) -> None:
    (c,) = said_by("I strongly dislike cold showers.", speaker)
    assert c.text == "Strongly dislikes cold showers"


# -- what the extractor no longer takes for the speaker's own statement (issue 20) -------


def session(*turns: tuple[Role, str]) -> tuple[Event, ...]:
    """Earlier turns of the session, one minute apart, before the turn under test."""
    return tuple(ev(text, role, f"ev-c{n}", minutes=n) for n, (role, text) in enumerate(turns))


@pytest.mark.parametrize(
    "text",
    [
        "Let's play a game: you are a dragon and I am a knight who hates gold.",
        "Let's role-play. I'm a grumpy innkeeper and I live in a tiny village by the sea.",
        "*bows deeply* I am the queen of the northern isles and I love the sea.",
        "Pretend you are my travel agent. I am flying to Rome next week on business.",
    ],
)
def test_a_turn_that_sets_up_or_acts_in_a_game_stores_nothing(text: str) -> None:
    assert extract(text) == []


def test_turns_of_a_game_the_session_set_up_store_nothing_until_it_is_left() -> None:
    game = session(
        (Role.USER, "Let's play a text adventure where I am a smuggler."),
        (Role.ASSISTANT, "You stand on a dark dock. What do you do?"),
    )
    assert extract_offline(ev("I have three cats and I live on the boat."), game) == []
    left = (*game, ev("OK, out of character now: that was fun.", minutes=5))
    (c,) = extract_offline(ev("I have three cats.", minutes=10), left)
    assert (c.field, c.value) == ("count:cat", "3 cats")


@pytest.mark.parametrize(
    "text",
    [
        '"I can\'t stand mushrooms," my flatmate told me.',
        'My uncle always says "I hate flying" before every trip.',
        '"I moved to Berlin last year," my cousin wrote in her card.',
        'My aunt told me "I hate that book."',
    ],
)
def test_quoted_speech_is_not_the_speaker_s_statement(text: str) -> None:
    assert extract(text) == []


def test_speech_goes_and_a_quoted_title_stays() -> None:
    text = 'I am reading a novel called "The Quiet Orchard". My aunt told me "I hate that book."'
    assert [c.text for c in extract(text)] == ['Is reading a novel called "The Quiet Orchard"']


@pytest.mark.parametrize(
    "text",
    [
        "I told him about the new climbing route at the wall",
        "I have been reading her short stories for a long time",
        "I visited them twice last spring in their new house",
        "I made it with oat milk, cinnamon and a little honey",
        "I am completely obsessed with those, so I made a few more",
    ],
)
def test_a_person_or_thing_named_only_by_a_pronoun_stores_nothing(text: str) -> None:
    assert extract(text) == []


def test_a_pronoun_after_what_it_stands_for_is_kept() -> None:
    text = "I told him about the new climbing route. I met Dario and he told me more"
    assert [c.text for c in extract(text)] == ["Met Dario and he told them more"]


def test_a_cut_off_last_sentence_of_a_written_turn_stores_nothing() -> None:
    text = (
        "I moved to Porto in the spring of last year. My brother visited in June and we "
        "hiked along the coast for a whole week. I still keep the photos of that trip on my "
        "desk at work. I have been testing the new compost on my tomato plants and the lea"
    )
    assert [c.text for c in extract(text)] == [
        "Moved to Porto in the spring of last year",
        "Brother visited in June",
        "The user says they hiked along the coast for a whole week",
        "Still keeps the photos of that trip on their desk at work",
    ]
    # a short chat turn without a full stop is read whole
    assert [c.text for c in extract("Hi! I really love hiking")] == ["Really loves hiking"]


def test_an_object_after_and_is_not_a_clause_of_its_own() -> None:
    assert one("I used my savings and my spare weekends to build the cabin.").text == (
        "Used their savings and their spare weekends to build the cabin"
    )


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I think I'm allergic to kiwi.", "Thinks they are allergic to kiwi"),
        ("I believe I'm lactose intolerant", "Believes they are lactose intolerant"),
        ("I guess my favourite season is autumn", "Guesses their favourite season is autumn"),
        # "think / believe that" is a hedge too, not an assertion like "I know that"
        ("I think that my brother lives in Oslo", "Thinks that their brother lives in Oslo"),
        # a hedge said after the clause
        ("My favourite season is autumn, I guess.", "Guesses their favourite season is autumn"),
        ("I'm allergic to cats, I think.", "Thinks they are allergic to cats"),
        # a hedged statement with no field is kept too, hedge and all, never unhedged
        ("My brother Tom is a nurse, I believe.", "Believes their brother Tom is a nurse"),
        ("I think that my dog is getting old", "Thinks that their dog is getting old"),
        # hedges of other shapes: a negated hedge, "not sure but", a hedging adverb
        ("I don't think I like jazz anymore.", "Does not think they like jazz anymore"),
        ("I'm not sure but I think I prefer window seats.",
         "Is not sure but they think they prefer window seats"),
        ("Probably my favourite food is sushi.", "Probably their favourite food is sushi"),
        ("Maybe I prefer tea.", "Maybe they prefer tea"),
    ],
)  # fmt: skip
def test_a_hedged_fact_keeps_its_hedge_and_sets_no_field(text: str, statement: str) -> None:
    c = one(text)
    assert (c.text, c.field, c.value, c.authority) == (statement, None, None, Authority.INFERRED)


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I think I'm allergic to kiwi.", "Priya thinks they are allergic to kiwi"),
        ("My brother Tom is a nurse, I believe.", "Priya believes their brother Tom is a nurse"),
        ("Maybe I prefer tea.", "Maybe Priya prefers tea"),
        ("Probably my favourite food is sushi.", "Probably Priya's favourite food is sushi"),
    ],
)
def test_a_hedged_fact_names_a_named_speaker(text: str, statement: str) -> None:
    (c,) = said_by(text, "Priya")
    assert c.text == statement


@pytest.mark.parametrize(
    "text",
    [
        "I'm feeling hopeful about the new season",
        "I'm so pumped for the concert tomorrow night",
        "I'm doing great, the week was long but fine",
        "We can make a real change in this town together",
        "We should all push for better bike lanes downtown",
    ],
)
def test_moods_of_the_moment_and_what_we_could_do_store_nothing(text: str) -> None:
    assert extract(text) == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I'm gonna move to Lisbon in May.", "Priya is going to move to Lisbon in May"),
        ("I gotta avoid peanuts.", "Priya has to avoid peanuts"),
        # an aim said with "want to" is a fact about them; a request is not (below)
        ("I wanna start a dance studio.", "Priya wants to start a dance studio"),
        ("I want to visit the Cliffs of Moher.", "Priya wants to visit the Cliffs of Moher"),
        ("I want to learn the guitar this year.", "Priya wants to learn the guitar this year"),
    ],
)
def test_chat_spellings_are_written_as_whole_words(text: str, statement: str) -> None:
    (c,) = said_by(text, "Priya")
    assert c.text == statement


@pytest.mark.parametrize(
    "text",
    [
        "I want to know how to reverse a list in Python.",
        "I wanna learn more about decorators.",
        "I want to make sure the tests pass.",
        "I want to ask you something.",
        "I want to help me write this email.",
    ],
)
def test_a_request_said_with_want_to_stores_nothing(text: str) -> None:
    assert extract(text) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("I moved to Lisbon in May.", "Lisbon"),
        ("I've lived in Oslo for ten years.", "Oslo"),
        ("I moved to Porto in the summer.", "Porto"),
        ("I moved to Mayfield last year.", "Mayfield"),  # a month inside a name stays
    ],
)
def test_a_time_said_after_a_place_is_not_part_of_its_value(text: str, value: str) -> None:
    (c,) = extract(text)
    assert (c.field, c.value) == ("home", value)
    assert c.text.startswith(("Moved to", "Has lived in"))  # the time stays in the statement


@pytest.mark.parametrize(
    "text",
    ["I love onsen towns, by the way.", "I love onsen towns btw", "I love onsen towns, fyi."],
)
def test_an_aside_at_the_end_is_not_part_of_the_statement(text: str) -> None:
    assert one(text).text == "Loves onsen towns"


# -- a conditional hides only its own clause: what is said after it still counts --------

BUDGET = "My budget for the trip is $2,000."


@pytest.mark.parametrize(
    "text",
    [
        f"If it rains we stay in. {BUDGET}",
        f"If it rains we stay in, but {BUDGET[:1].lower()}{BUDGET[1:]}",
        f"If it rains we stay in; {BUDGET[:1].lower()}{BUDGET[1:]}",
        f"If it rains we stay in - {BUDGET[:1].lower()}{BUDGET[1:]}",
        f"If it rains we stay in, although {BUDGET[:1].lower()}{BUDGET[1:]}",
    ],
)
@pytest.mark.parametrize("speaker", [None, "Priya"])
def test_a_money_statement_after_a_conditional_is_kept_whole(
    text: str, speaker: str | None
) -> None:
    alone = said_by(BUDGET, speaker)
    assert [(c.field, c.value) for c in alone] == [("budget", "$2000")]
    found = said_by(text, speaker)
    assert [(c.text, c.field, c.value) for c in found] == [(alone[0].text, "budget", "$2000")]
    if speaker:
        assert found[0].text == "Priya's budget for the trip is $2,000"


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("If it rains we stay in, but money is tight this month.", "Money is tight this month"),
        ("If it rains we stay in but we're on a tight budget.",
         "The user says they are on a tight budget"),
        ("If I had a boat I would sail, but I'm allergic to salt water.",
         "Is allergic to salt water"),
    ],
)  # fmt: skip
def test_what_is_said_after_a_contrast_with_a_conditional_is_read(
    text: str, statement: str
) -> None:
    assert [c.text for c in extract(text)] == [statement]


@pytest.mark.parametrize(
    "text",
    [
        "If I get the job, my budget for the trip is $2,000.",
        "If it rains we stay in and my budget for the trip is $2,000.",
        "If I won the lottery I would quit, but I would miss my colleagues.",
        "If it rains we stay in, but if it's sunny my budget is $500.",
        "If it rains, money is tight.",
    ],
)
def test_what_depends_on_a_conditional_stays_hypothetical(text: str) -> None:
    assert extract(text) == []


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("Mum lives in York and works at the library.", "home:mum", "York"),
        ("My mum lives in York and she loves it.", "home:mum", "York"),
        ("I moved to Leeds and I love it here.", "home", "Leeds"),
        ("I work at Marks and Spencer and I love it.", "employer", "Marks and Spencer"),
        ("I live in Trinidad and Tobago.", "home", "Trinidad and Tobago"),
        ("My favourite food is fish and chips.", "favorite:food", "fish and chips"),
    ],
)
def test_a_value_ends_where_a_clause_of_its_own_starts(text: str, field: str, value: str) -> None:
    """ "... York and works at the library" held the home "York and works at the
    library"; "and" inside a name or a dish stays ("Trinidad and Tobago")."""
    found = {c.field: c.value for c in extract(text)}
    assert found[field] == value, found


@pytest.mark.parametrize(
    ("text", "field", "statement"),
    [
        ("just moved to Manchester lol", "home", "Just moved to Manchester"),
        ("moved to Leeds last week", "home", "Moved to Leeds last week"),
        ("love a good curry tbh", "likes:good_curry", "Loves a good curry"),
        ("hate mornings", "likes:morning", "Hates mornings"),
    ],
)
def test_chat_leaves_the_speaker_unsaid(text: str, field: str, statement: str) -> None:
    """A move or a liking said without "I", as chat says it, stored nothing."""
    c = one(text)
    assert (c.field, c.text) == (field, statement)


@pytest.mark.parametrize("text", ["love it!", "Love that idea", "love is blind", "Moved!"])
def test_a_bare_verb_that_says_nothing_lasting_stays_unsaid(text: str) -> None:
    assert extract(text) == []


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("I don't drive", "cannot:drive", "does not drive"),
        ("I do not drive anymore", "cannot:drive", "does not drive"),
        ("I don't drive, so trains please", "cannot:drive", "does not drive"),
        ("I have dementia", "condition:dementia", "has"),
        ("I have high blood pressure", "condition:high_blood_pressure", "has"),
        ("I was diagnosed with lupus", "condition:lupus", "has"),
    ],
)
def test_not_driving_and_more_long_term_conditions(text: str, field: str, value: str) -> None:
    """Constraints a plan must respect, on the needs' fields, sensitive."""
    c = one(text)
    assert (c.field, c.value, c.sensitivity) == (field, value, Sensitivity.SENSITIVE)


def test_a_relative_s_condition_is_kept_as_said() -> None:
    assert [(c.field, c.text) for c in extract("my mum has dementia")] == [
        (None, "Mum has dementia")
    ]


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I moved in last weekend", "Moved in last weekend"),
        ("I moved in with my boyfriend", "Moved in with their boyfriend"),
        ("I moved to this town last year", "Moved to this town last year"),
    ],
)
def test_when_or_with_whom_one_moved_is_no_home(text: str, statement: str) -> None:
    """ "moved in with my boyfriend" set the home "With My Boyfriend", superseding the
    city said before; it is a statement on no field now."""
    assert [(c.field, c.text) for c in extract(text)] == [(None, statement)]


@pytest.mark.parametrize(
    "text", ["Love and acceptance really can be found everywhere.", "Love to hear more about it."]
)
def test_love_as_a_noun_or_a_reaction_is_no_liking(text: str) -> None:
    """Said by a named speaker, as in a conversation between two people: "Love and
    acceptance ..." became "Mel loves and acceptance really can be found everywhere"."""
    said = Event("ev-1", "acme", "u42", "s1", Role.USER, text, T, {"speaker": "Mel"})
    assert all(not (c.field or "").startswith("likes:") for c in extract_offline(said)), [
        c.text for c in extract_offline(said)
    ]
