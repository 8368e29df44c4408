"""Standing constraints said in passing, by kind: what bounds any plan the person asks for.

"I'm 22 weeks gone", "my ears ring constantly since a gig - tinnitus", "doc
says I've got to sleep with a CPAP mask", "I'm red-green colour blind", "I've
decided I'm done with alcohol": each bounds a later request that shares no word
and little meaning with it ("suggest somewhere hot for a holiday in March",
"which venue for a gig?", "plan a camping trip", "pick a paint scheme",
"book a restaurant for my birthday"). The extractor does not always make a
record of such a turn, so the turn itself is found: a user turn close in meaning
to one of the sentences below (`KINDS`), each a first-person statement of a kind
of constraint, in the words people use for it.

The kinds are those of the issue that asked for them, in English terms, not the
topics of any benchmark: health and pregnancy, the senses, devices and
medication, mobility, diet, alcohol, religious and cultural rules, money,
schedule, and the people and animals one cares for. A turn states a constraint
when its cosine with some sentence reaches `CONSTRAINT_COSINE`; a request
(`remem.policy.applies.is_request`) in some life domain brings the `MOST` closest
(`remem.recall.constraints`).
"""

from __future__ import annotations

# all-MiniLM-L6-v2's scale; see `remem.recall.constraints` for how they were chosen
CONSTRAINT_COSINE = 0.35
MOST = 3

KINDS: dict[str, tuple[str, ...]] = {
    "health": (
        "I am pregnant and the baby is due soon.",
        "I have a chronic medical condition.",
        "I have diabetes and must watch my blood sugar.",
        "I have a heart condition and high blood pressure.",
        "I get migraines.",
    ),
    "senses": (
        "I have tinnitus and loud noise hurts my ears.",
        "I am hard of hearing.",
        "I am colour blind.",
        "My eyesight is poor, especially at night.",
    ),
    "devices and medication": (
        "I have to sleep with a CPAP machine.",
        "I take medication every day.",
        "I am allergic to a medicine.",
    ),
    "mobility": (
        "I use a wheelchair.",
        "I can't walk far or climb stairs.",
        "I have a bad back and bad knees.",
    ),
    "fears": (
        "I am afraid of flying.",
        "I am afraid of heights.",
        "I get seasick or carsick.",
    ),
    "diet": (
        "I don't eat meat.",
        "I have a food allergy.",
        "I can't eat gluten or dairy.",
    ),
    "alcohol": ("I don't drink alcohol.",),
    "religion and culture": (
        "I only eat halal or kosher food.",
        "I observe the Sabbath and religious holidays.",
        "I fast during Ramadan.",
    ),
    "money": (
        "I'm on a tight budget.",
        "I lost my job and money is tight.",
    ),
    "schedule": (
        "I work night shifts.",
        "I work every weekend.",
        "I have a standing appointment every week.",
    ),
    "care": (
        "I have a dog that comes everywhere with me.",
        "I have young children.",
        "I look after an elderly parent.",
    ),
}

SENTENCES: tuple[tuple[str, str], ...] = tuple(
    (kind, sentence) for kind, said in KINDS.items() for sentence in said
)
