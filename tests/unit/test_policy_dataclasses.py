"""Data classes that must never be stored: what is found, what is left alone, how it is said."""

from __future__ import annotations

import pytest

from remem.policy.dataclasses import (
    KINDS,
    Finding,
    find_secrets,
    iban_valid,
    luhn_valid,
    redact,
    refusal_reason,
)
from tests.support.secrets import (
    ALL_POSITIVE,
    CARDS,
    GAP_CASES,
    GAPS,
    GOVERNMENT_IDS,
    KEYS,
    OPENAI,
    PASSWORDS,
    PASSWORDS_BY_LANGUAGE,
    PEM,
    PRIVATE_KEYS,
    RECOVERY_CODES,
)


def found(text: str) -> list[tuple[str, str]]:
    return [(f.kind, text[f.start : f.end]) for f in find_secrets(text)]


@pytest.mark.parametrize(("text", "secret"), PASSWORDS)
def test_passwords_stated_as_such(text: str, secret: str) -> None:
    assert found(text) == [("password", secret)]


@pytest.mark.parametrize(("text", "kind", "secret"), KEYS)
def test_api_keys_and_access_tokens(text: str, kind: str, secret: str) -> None:
    assert found(text) == [(kind, secret)]


@pytest.mark.parametrize(("text", "secret"), PRIVATE_KEYS)
def test_private_key_blocks(text: str, secret: str | None) -> None:
    assert found(text) == [("private_key", secret or text)]


@pytest.mark.parametrize(("text", "secret"), RECOVERY_CODES)
def test_recovery_codes_stated_as_such(text: str, secret: str) -> None:
    assert found(text) == [("recovery_code", secret)]


@pytest.mark.parametrize(("text", "secret"), CARDS)
def test_luhn_valid_card_numbers(text: str, secret: str) -> None:
    assert found(text) == [("payment_card", secret)]


@pytest.mark.parametrize(("text", "secret"), GOVERNMENT_IDS)
def test_government_ids(text: str, secret: str) -> None:
    assert found(text) == [("government_id", secret)]


@pytest.mark.parametrize("name", list(GAPS))
def test_issue_13_gaps_are_found_and_their_near_misses_are_not(name: str) -> None:
    cases, misses = GAPS[name]
    assert [
        (kind, secret) for text, kind, secret in cases if (kind, secret) not in found(text)
    ] == []
    assert [text for text in misses if find_secrets(text)] == []


@pytest.mark.parametrize(("text", "secret"), PASSWORDS_BY_LANGUAGE)
def test_passwords_stated_in_other_languages(text: str, secret: str) -> None:
    assert found(text) == [("password", secret)]


def test_talk_about_passwords_in_other_languages_is_clean_and_theirs_is_found() -> None:
    prose = [
        "Mein Passwort ist zu kurz",
        "Ich habe mein Passwort vergessen",
        "J'ai oublié mon mot de passe",
        "le mot de passe est incorrect",
        "la contraseña es incorrecta",
        "a senha é nova",
        "het wachtwoord is vergeten",
    ]
    assert [t for t in prose if find_secrets(t)] == []
    assert found("Passwort: Sommer2026") == [("password", "Sommer2026")]


@pytest.mark.parametrize(
    ("iban", "valid"),
    [
        ("GB82WEST12345698765432", True),
        ("DE89370400440532013000", True),
        ("GB82WEST12345698765433", False),
        ("GB82WEST1234", False),
        ("GB82-WEST-1234-5698-76", False),
    ],
)
def test_iban_check(iban: str, valid: bool) -> None:
    assert iban_valid(iban) is valid


@pytest.mark.parametrize(
    "text",
    [
        "The meeting is on 2026-03-01 at 10:00",
        "Call me at 415-555-0123",
        "my number is +1 (415) 555-0123",
        "office: +44 20 7946 0958",
        "The flat costs $2,500 a month",
        "order 4111 1111 1111 1112",
        "order number 1234 5678 9012 3456",
        "I was born in 1987",
        "ISBN 978-0-306-40615-7",
        "ISBN 9780306406157",
        "my password manager is 1Password",
        "I forgot my password",
        "my password is too short",
        "the password is required to log in",
        "My password is the same as my old one",
        "my password is in 1Password",
        "password reset link is in my inbox",
        "I changed my password yesterday",
        "000-12-3456",
        "666-12-3456",
        "912-34-5678",
        "123-00-4567",
        "123-45-0000",
        "my api key is in the vault",
        "the token is valid for an hour",
        "token: abcdefabcdefabcdef",
        "my recovery codes are in the safe",
        "I printed the backup codes",
        "my passport expires on 2029-05-01",
        "my passport is valid until 2030",
        "passport number expires next year",
        "my driving licence is in my wallet",
        "tracking number 1Z999AA10123456784",
        "timestamp 1767225600000",
        "The product code is 6234567890123",
        "My gym membership is 5000 1234 5678 9012",
        "Zoom meeting ID: 845 2291 3370",
        "Account number 12345678, sort code 12-34-56",
        "My frequent flyer number is 123456789",
        "My employee ID is 48213",
        "My tax ID is pending",
        "The password policy requires 12 characters",
        "My licence plate is AB12 CDE",
        "Booking reference 5QXK2L for the Lisbon trip",
        "I ran 5,000 metres in 19:45",
        "sk-learn is a typo for scikit-learn",
        "the bearer of bad news",
        "The PIN pad was broken",
        "pin 2 of the connector is ground",
        "IBAN GB82 WEST 1234 5698 7654 33",  # fails mod 97
        "flight BA117 on 2026-03-01, seat 14C",
        "a JWT looks like header.payload.signature",
        "the AWS region is us-east-1",
        "pi is 3.141592653589793238",
        "My secret is that I love karaoke",
        "my password is [REDACTED:password]",
        "password: ********",
        "DB_PASSWORD=${DB_PASSWORD}",
        "password: <your password here>",
        "api_key: [REDACTED:api_key]",
    ],
)
def test_ordinary_memory_text_is_clean(text: str) -> None:
    assert find_secrets(text) == []


ALL_POSITIVE += [case[0] for case in CARDS + GOVERNMENT_IDS + PASSWORDS_BY_LANGUAGE]
ALL_POSITIVE += [case[1] for case in GAP_CASES]


@pytest.mark.parametrize("text", ALL_POSITIVE)
def test_redacted_text_scans_clean(text: str) -> None:
    redacted = redact(text)
    assert find_secrets(redacted) == []
    assert "[REDACTED:" in redacted


def test_several_findings_come_in_text_order() -> None:
    text = "card 4111 1111 1111 1111, password: hunter2, SSN 123-45-6789"
    assert found(text) == [
        ("payment_card", "4111 1111 1111 1111"),
        ("password", "hunter2"),
        ("government_id", "123-45-6789"),
    ]


def test_overlapping_detectors_give_one_finding() -> None:
    text = f"api key: {OPENAI}"
    assert found(text) == [("api_key", OPENAI)]
    assert found(f"password: {OPENAI}") == [("api_key", OPENAI)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my password is hunter2", "my password is [REDACTED:password]"),
        (
            "card 4111 1111 1111 1111 and pw: s3cr3t!",
            "card [REDACTED:payment_card] and pw: [REDACTED:password]",
        ),
        (f"{PEM}\nok", "[REDACTED:private_key]\nok"),
        ("I prefer the aisle seat", "I prefer the aisle seat"),
        ("", ""),
    ],
)
def test_redact_replaces_each_secret_with_its_kind(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_redact_uses_given_findings_and_merges_overlaps() -> None:
    text = "abcdefghij"
    given = [Finding("password", 2, 5), Finding("api_key", 4, 8)]
    assert redact(text, given) == "ab[REDACTED:api_key]ij"
    assert redact(text, []) == text
    assert redact("my password is hunter2", find_secrets("my password is hunter2")) == (
        "my password is [REDACTED:password]"
    )


@pytest.mark.parametrize(
    ("kinds", "message"),
    [
        (
            ["password"],
            "refused: the text contains a password; remem never stores secrets",
        ),
        (
            ["payment_card", "api_key"],
            "refused: the text contains a payment card number and an API key; "
            "remem never stores secrets",
        ),
        (
            ["access_token", "government_id", "access_token", "recovery_code"],
            "refused: the text contains an access token, a government id number and a "
            "recovery code; remem never stores secrets",
        ),
        (["private_key"], "refused: the text contains a private key; remem never stores secrets"),
    ],
)
def test_refusal_reason_names_kinds_once_in_order(kinds: list[str], message: str) -> None:
    assert refusal_reason([Finding(k, i, i + 1) for i, k in enumerate(kinds)]) == message


def test_refusal_reason_never_repeats_the_secret() -> None:
    text = "my password is hunter2 and my card is 4111 1111 1111 1111"
    reason = refusal_reason(find_secrets(text))
    assert "hunter2" not in reason and "4111" not in reason
    assert reason == (
        "refused: the text contains a password and a payment card number; "
        "remem never stores secrets"
    )


def test_refusal_reason_needs_a_finding() -> None:
    with pytest.raises(ValueError, match="at least one finding"):
        refusal_reason([])


@pytest.mark.parametrize(
    ("kind", "start", "end"), [("ssh", 0, 1), ("password", 3, 3), ("password", -1, 2)]
)
def test_finding_rejects_unknown_kinds_and_empty_spans(kind: str, start: int, end: int) -> None:
    with pytest.raises(ValueError):
        Finding(kind, start, end)


def test_every_kind_has_a_name_in_refusals() -> None:
    for kind in KINDS:
        assert "refused: the text contains a" in refusal_reason([Finding(kind, 0, 1)])


@pytest.mark.parametrize(
    ("digits", "valid"),
    [("4111111111111111", True), ("4111111111111112", False), ("79927398713", True), ("0", True)],
)
def test_luhn(digits: str, valid: bool) -> None:
    assert luhn_valid(digits) is valid
