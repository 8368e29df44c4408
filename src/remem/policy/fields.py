"""The field vocabulary: names for the things a record may be about, so that
statements that mean the same thing land on one field.

A record's `field` keys supersession ("a newer statement about the same field
replaces the older one") and exact lookup (`Memory.fact`). Extractors name
fields in their own words ("home", "occupation", "relation:partner"); the
write path passes every field through `canonical_field` once, so
"I live in Porto" and "my city is Porto" both set `home city`, and
`fact(field="home")` reads the same field as `fact(field="home city")`.

Free fields are allowed: a name outside the vocabulary is kept, case-folded
and with single spaces. A name holding a colon (`allergy:peanut`,
`preference:seat`, `summary:s1:...`, `procedure:deploy`) is a family key an
extractor or remem itself builds, and is kept exactly (only trimmed), unless
the vocabulary lists it as the old name of a common field.

Look-alike spellings are one field or refused: every field is read in NFKC
(full-width letters and ligatures are the plain ones), and one holding a format
character or mixing scripts within a word is refused. Pure: no I/O.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass

from remem.errors import InvalidInput
from remem.policy.folding import format_chars, mixed_script_word
from remem.policy.text import check_text

MAX_FIELD_CHARS = 200


@dataclass(frozen=True, slots=True)
class CommonField:
    """One field of the vocabulary: its name, the words that mean it, and the
    keys extractors wrote for it before the vocabulary (still read as it)."""

    name: str
    synonyms: tuple[str, ...]
    extractor_keys: tuple[str, ...] = ()  # what the offline extractor emits for it
    about: str = ""


VOCABULARY: tuple[CommonField, ...] = (
    CommonField("name", ("full name", "first name", "real name"), ("name",), "what they are"),
    CommonField(
        "preferred name",
        ("nickname", "goes by", "call me", "preferred first name"),
        (),
        "the name they want to be addressed by",
    ),
    CommonField(
        "home city",
        (
            "home",
            "city",
            "lives in",
            "live in",
            "current city",
            "location",
            "residence",
            "place of residence",
            "where i live",
        ),
        ("home",),
        "where they live now",
    ),
    CommonField("timezone", ("time zone", "tz"), ("timezone",), "an IANA name or UTC offset"),
    CommonField(
        "language",
        (
            "preferred language",
            "native language",
            "first language",
            "mother tongue",
            "approved language",
            "reply language",
        ),
        ("language",),
        "the language to use with them",
    ),
    CommonField(
        "employer",
        ("company", "workplace", "works at", "works for", "organisation", "organization"),
        ("employer",),
        "who they work for",
    ),
    CommonField(
        "role",
        ("job", "job title", "title", "occupation", "profession", "position"),
        ("occupation",),
        "what they do",
    ),
    CommonField(
        "diet",
        ("dietary preference", "dietary restriction", "eating habits"),
        ("diet",),
        "vegetarian, vegan, ...",
    ),
    CommonField("allergies", ("allergy", "allergic to"), (), "a list, in one value"),
    CommonField("budget", ("spending limit", "price limit"), ("budget",), "an amount"),
    CommonField(
        "partner",
        ("spouse", "wife", "husband", "girlfriend", "boyfriend", "significant other"),
        (
            "relation:partner",
            "relation:spouse",
            "relation:wife",
            "relation:husband",
            "relation:girlfriend",
            "relation:boyfriend",
        ),
        "their partner's name",
    ),
    CommonField("pets", ("pet",), (), "a list, in one value"),
    CommonField(
        "birthday",
        ("date of birth", "birth date", "birthdate", "dob"),
        ("date:birthday",),
        "a date",
    ),
    CommonField(
        "origin",
        ("hometown", "home town", "place of origin", "grew up in"),
        ("origin",),
        "where they are from (not where they live: home city)",
    ),
    CommonField("pronouns", ("pronoun",), ("pronouns",), "she/her, they/them, ..."),
    CommonField("nationality", ("citizenship",), ("nationality",), "a country"),
)

# the animals the offline extractor keys as `relation:<animal>` ("a dog named Rex")
PET_KINDS = frozenset("dog cat puppy kitten pet horse parrot bird rabbit hamster".split())

_BY_WORD: dict[str, str] = {}
for _f in VOCABULARY:
    for _word in (_f.name, *_f.synonyms, *_f.extractor_keys):
        _BY_WORD[_word] = _f.name
_BY_NAME: dict[str, CommonField] = {f.name: f for f in VOCABULARY}


def canonical_field(raw: str) -> str:
    """The field `raw` names: a vocabulary name for any of its synonyms or extractor
    keys (underscores read as spaces); else a free field, case-folded with single
    spaces (a family key holding a colon kept exactly); in Unicode NFKC either way, so
    full-width letters and ligatures ("\\uff48ome", "\\ufb01eld") are the plain ones.
    `InvalidInput` for an empty, over-long or unstorable name, one holding a format
    character (a zero-width space, a direction mark: category Cf), or one with a word
    mixing scripts ("h\\u043eme" with a Cyrillic "o"; see `remem.policy.folding`): each
    would be a second field that reads like the first. The one check of a field on
    every surface: writes, `fact`, `profile` and `pin` lookups, HTTP, MCP and the CLI."""
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidInput("a field must be a non-empty string")
    if len(raw) > MAX_FIELD_CHARS:
        raise InvalidInput(f"a field is at most {MAX_FIELD_CHARS} characters")
    check_text("field", raw)
    if invisible := format_chars(raw):
        at, char = invisible[0]
        raise InvalidInput(
            f"field holds an invisible format character (U+{ord(char):04X} at position {at}: "
            "zero-width characters, direction marks and soft hyphens make a second field "
            "that reads like the first); remove it"
        )
    raw = unicodedata.normalize("NFKC", raw)  # full-width, ligatures, "café" composed or not
    if len(raw) > MAX_FIELD_CHARS:
        raise InvalidInput(f"a field is at most {MAX_FIELD_CHARS} characters (in NFKC)")
    if mixed := mixed_script_word(raw):
        word, scripts = mixed
        raise InvalidInput(
            f"field mixes {' and '.join(scripts)} letters in the word {json.dumps(word)}, "
            "which reads like a word of one script; write each word in one script"
        )
    folded = " ".join(raw.casefold().split())
    spaced = " ".join(folded.replace("_", " ").split())  # a model's slug: "home_city"
    for word in (folded, spaced):
        if word in _BY_WORD:
            return _BY_WORD[word]
    return raw.strip() if ":" in raw else folded


def valid_field(raw: str | None) -> str | None:
    """`canonical_field`'s check for the surfaces' pydantic models: ValueError, as
    pydantic validators raise, for a field it refuses; the field itself is returned as
    given (None stays None), to be made canonical once on the write path."""
    if raw is not None:
        try:
            canonical_field(raw)
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None
    return raw


def stored_field(field: str) -> str:
    """`canonical_field` of a field read from the store; a field stored before these
    checks that they now refuse is kept as it was stored, so it can still be read."""
    try:
        return canonical_field(field)
    except InvalidInput:
        return field


def optional_field(raw: str | None) -> str | None:
    """`canonical_field` for a field a candidate may lack (None stays None)."""
    return None if raw is None else canonical_field(raw)


def stored_names(field: str) -> tuple[str, ...]:
    """Every name a record about `field` (a canonical name) may be stored under: the
    name itself and the extractor keys written before the vocabulary applied."""
    common = _BY_NAME.get(field)
    if common is None:
        return (field,)
    return (field, *(k for k in common.extractor_keys if k != field))


def field_names(field: str) -> tuple[str, ...]:
    """The names a single fact's field goes by, for a question that asks for the fact by
    one: a vocabulary field's name and synonyms ("home city", "home", "city", "lives
    in", ...), a free field's own name; `pets` for an animal's relation
    (`relation:dog`); none for another family key (`allergy:peanut`,
    `likes:hiking`), whose words its record's text says."""
    family, _, kind = field.partition(":")
    if family == "relation" and kind in PET_KINDS:
        return (*_BY_NAME["pets"].synonyms, "pets")  # "Do I have any pets?" of a dog's
    if ":" in field:
        return ()
    common = _BY_NAME.get(_BY_WORD.get(field, field))
    return (common.name, *common.synonyms) if common else (field.replace("_", " "),)


@dataclass(frozen=True, slots=True)
class Family:
    """The fields a question about one side of a person asks for at once ("allergies":
    every `allergy:<x>`): its own name's fields (`exact`), and the family keys under
    its `prefixes` whose kind (the part after the colon) it `holds`."""

    name: str
    words: tuple[str, ...]  # what a question calls it: singular, plural, synonyms
    exact: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    kinds: frozenset[str] | None = None  # the kinds under the prefixes it holds; None: all
    not_kinds: frozenset[str] = frozenset()  # or every kind but these

    def holds(self, field: str) -> bool:
        """Whether a (canonical) field belongs to the family."""
        if field in self.exact:
            return True
        head, colon, kind = field.partition(":")
        if not colon or f"{head}:" not in self.prefixes:
            return False
        last = kind.rsplit("_", 1)[-1]  # "relation:best_friend" is a friend's
        if self.kinds is not None:
            return kind in self.kinds or last in self.kinds
        return kind not in self.not_kinds and last not in self.not_kinds


# animals counted ("count:fish") or named ("relation:dog") as someone's own
_ANIMALS = PET_KINDS | frozenset("fish horse bird rabbit tortoise turtle lizard snake".split())
# people who are no family: what "relation:<x>" also names
_NOT_KIN = _ANIMALS | frozenset(
    "friend roommate flatmate housemate boss manager colleague coworker co-worker assistant "
    "doctor dentist therapist landlord landlady neighbour neighbor".split()
)
FAMILIES: tuple[Family, ...] = (
    Family(
        "allergies",
        ("allergies", "allergy", "allergic", "allergic to", "allergen", "allergens",
         "food allergies", "intolerance", "intolerances", "food intolerances",
         "allergies and intolerances", "sensitivities"),
        exact=("allergies", "diet:lactose_intolerant", "diet:celiac"),
        prefixes=("allergy:", "intolerance:"),
    ),
    Family(
        "diet",
        ("diet", "diets", "dietary", "dietary preference", "dietary restriction",
         "dietary restrictions", "dietary requirements", "dietary needs", "food restrictions",
         "eating habits", "what i eat"),
        exact=("diet",),
        prefixes=("diet:", "eats:"),
    ),
    Family("pets", ("pets", "pet", "animals"), ("pets",), ("relation:", "count:"), _ANIMALS),
    Family(
        "family",
        ("family", "families", "relatives", "family members", "kin"),
        ("partner", "children"),
        ("relation:", "count:", "home:"),
        not_kinds=_NOT_KIN,
    ),
    Family(
        "role",
        ("role", "job", "jobs", "work", "career", "occupation", "profession"),
        ("role", "employer"),
    ),
    Family("devices", ("devices", "device", "gadgets"), ("car",), ("device:",)),
)  # fmt: skip
_FAMILY_BY_WORD = {w: f for f in FAMILIES for w in (f.name, *f.words)}


def family_of(field: str) -> Family | None:
    """The family a (canonical) field names when asked for ("allergies", "allergy",
    "dietary", "pets", "relatives", "job"), else None. Read only: a record is always
    written under its own field."""
    return _FAMILY_BY_WORD.get(field)


def vocabulary_names() -> str:
    """The vocabulary's field names, comma-separated, as the LLM prompts list them."""
    return ", ".join(f.name for f in VOCABULARY)
