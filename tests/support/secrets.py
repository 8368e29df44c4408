"""Secret samples: what the policy's detectors must find (passwords, keys, cards,
government ids, in many languages), and the strings a store must refuse or screen.
`tests/flows/test_detector_screens.py` runs every upper-case value here through the detectors."""

from __future__ import annotations

OPENAI = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2


GITHUB = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"


JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)


PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx7\n-----END RSA PRIVATE KEY-----"


SEED = "abandon ability able about above absent absorb abstract absurd abuse access accident"


PASSWORDS = [
    ("my password is hunter2", "hunter2"),
    ("My Password: hunter2.", "hunter2"),
    ("pw: s3cr3t!", "s3cr3t!"),
    ("PWD=Winter2026", "Winter2026"),
    ("The password for gmail is Tr0ub4dor&3.", "Tr0ub4dor&3"),
    ("the password to the wifi is 'correct horse'", "correct horse"),
    ("my old password was letmein99, don't reuse it", "letmein99"),
    ("Passcode: 918273", "918273"),
    ("my passcode is 2468", "2468"),
    ("PIN is 4821", "4821"),
    ("PIN 4821", "4821"),
    ("Meeting ID 845 2291 3370 passcode 551234", "551234"),
    ("my bank pin: 0000", "0000"),
    ("the PIN code for the garage is 55121", "55121"),
    ('{"user": "ann", "password": "hunter22"}', "hunter22"),
    ("DB_PASSWORD=pa55word-x", "pa55word-x"),
    ("I set my gmail password to Summer2026!", "Summer2026!"),
    ("my passphrase is correct horse battery staple.", "correct horse battery staple"),
    ("the db is postgres://admin:s3cretpw@db.example.com/app", "s3cretpw"),
    ("Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l", "YWxhZGRpbjpvcGVuc2VzYW1l"),
]


KEYS = [
    (f"my key is {OPENAI}", "api_key", OPENAI),
    (f"OPENAI_API_KEY={OPENAI}", "api_key", OPENAI),
    (
        "old key sk-abc123def456ghi789jkl012mno345",
        "api_key",
        "sk-abc123def456ghi789jkl012mno345",
    ),
    ("use sk-ant-api03-Xy9Zk2Lm4Np6Qr8St0Uv", "api_key", "sk-ant-api03-Xy9Zk2Lm4Np6Qr8St0Uv"),
    ("AWS id AKIAIOSFODNN7EXAMPLE", "api_key", "AKIAIOSFODNN7EXAMPLE"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "api_key",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "my AWS secret key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY.",
        "api_key",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "api_key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("rk_live_51Hx9aBcDeFgHiJkLmNo", "api_key", "rk_live_51Hx9aBcDeFgHiJkLmNo"),
    (
        "maps key AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
        "api_key",
        "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    ),
    ("my api key is 3f9a8b7c6d5e4f3a2b1c0d9e", "api_key", "3f9a8b7c6d5e4f3a2b1c0d9e"),
    ("API key for the weather service: Qx7Lp2Vn9Rt4Ks8M", "api_key", "Qx7Lp2Vn9Rt4Ks8M"),
    ('{"client_secret": "9Hk2Lm4Np6Qr8St0Uv2W"}', "api_key", "9Hk2Lm4Np6Qr8St0Uv2W"),
    (f"my token is {GITHUB}", "access_token", GITHUB),
    (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "access_token",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    ),
    ("glpat-Xy9Zk2Lm4Np6Qr8St0Uv", "access_token", "glpat-Xy9Zk2Lm4Np6Qr8St0Uv"),
    ("slack bot xoxb-1234567890-abcdefGHIJ", "access_token", "xoxb-1234567890-abcdefGHIJ"),
    (f"session {JWT} expires soon", "access_token", JWT),
    (
        "Authorization: Bearer abc123def456ghi789jkl",
        "access_token",
        "abc123def456ghi789jkl",
    ),
    ("token: 9f8e7d6c5b4a39281706f5e4", "access_token", "9f8e7d6c5b4a39281706f5e4"),
    ("refresh_token=Zq81mLx07Vb3Nc5Ty2Ws", "access_token", "Zq81mLx07Vb3Nc5Ty2Ws"),
    (
        "my bitcoin private key is 5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dVaPZrSW9BnS9bTVF",
        "private_key",
        "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dVaPZrSW9BnS9bTVF",
    ),
]


PRIVATE_KEYS = [
    (f"key:\n{PEM}\nthanks", PEM),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1r", None),
    ("-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----", None),
    (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----",
        None,
    ),
]


RECOVERY_CODES = [
    ("recovery codes: 1234-5678 2345-6789 3456-7890", "1234-5678 2345-6789 3456-7890"),
    ("my backup codes are a1b2c3d4, e5f6g7h8 and k9m8n7p6.", "a1b2c3d4, e5f6g7h8 and k9m8n7p6"),
    ("2FA recovery code is 8f3k-2m9x", "8f3k-2m9x"),
    ("Apple recovery key: ABCDEFGH-JKLMNPQR-STUVWXYZ", "ABCDEFGH-JKLMNPQR-STUVWXYZ"),
    (f"my seed phrase is {SEED}", SEED),
]


CARDS = [
    ("card 4111 1111 1111 1111 exp 12/27", "4111 1111 1111 1111"),
    ("4111-1111-1111-1111", "4111-1111-1111-1111"),
    ("pay with 4111111111111111.", "4111111111111111"),
    ("amex 378282246310005", "378282246310005"),
    ("amex 3782 822463 10005", "3782 822463 10005"),
    ("diners 3056 930902 5904", "3056 930902 5904"),
    ("mastercard 5555 5555 5555 4444", "5555 5555 5555 4444"),
    ("mc 2223003122003222", "2223003122003222"),
    ("discover 6011 1111 1111 1117", "6011 1111 1111 1117"),
    ("card 4111 1111 1111 1111 123 (cvv)", "4111 1111 1111 1111"),
    ("order #4111111111111111", "4111111111111111"),
    ("old visa 4222222222222", "4222222222222"),
    ("jcb 3530 1113 3330 0000", "3530 1113 3330 0000"),
]


GOVERNMENT_IDS = [
    ("123-45-6789", "123-45-6789"),
    ("SSN: 078-05-1120", "078-05-1120"),
    ("my SSN is 123456789", "123456789"),
    ("social security number 219 09 9999", "219 09 9999"),
    ("my passport number is X12345678.", "X12345678"),
    ("Passport no. 533380006", "533380006"),
    ("passport: C01X00T47", "C01X00T47"),
    ("driver's license number is D1234-5678-9012", "D1234-5678-9012"),
    ("driving licence: MORGA657054SM9IJ", "MORGA657054SM9IJ"),
    ("national insurance number: QQ 12 34 56 C", "QQ 12 34 56 C"),
    ("my national ID is 12345678Z", "12345678Z"),
    ("Aadhaar number 2345 6789 0123", "2345 6789 0123"),
    ("my SIN is 046 454 286", "046 454 286"),
]


# remem's own key: "rk_" + secrets.token_urlsafe(32)
REMEM_KEY = "rk_" + "Ihvj43t94KXZWJezfH25lw3w5Btuw4kUWanhd7k-04I"


NPM = "npm_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"


HF = "hf_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJkL"


HEX64 = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"


AWS_ID, AWS_SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


SENDGRID = "SG." + "aB3dE6gH9jK2mN5pQ8sT1v" + "." + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6aB3dE6g"
DIGITALOCEAN = "dop_v1_" + "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
PYPI = "pypi-AgEIcHlwaS5vcmc" + "CJDk3ZTA3ZjFkLTk3OGEtNGRmOC05ZWIyLWI5OTZkNmYzZjQ3MwACKlsz"
AZURE_KEY = (
    "Xy9Zk2Lm4Np6Qr8St0Uv2Wx4Yz6aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6kL8nP0rT2vX4zA6cE8gI0k=="
)
AZURE_CONNECTION = (
    f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={AZURE_KEY};"
    "EndpointSuffix=core.windows.net"
)

# The gaps of issue 13, per class: what is now found (text, kind, secret), and near
# misses of the same class that must stay clean.
GAPS: dict[str, tuple[list[tuple[str, str, str]], list[str]]] = {
    "remem api key": (
        [
            (f"the service key is {REMEM_KEY}", "api_key", REMEM_KEY),
            (f"curl -H 'Authorization: {REMEM_KEY}'", "api_key", REMEM_KEY),
        ],
        [
            "rk_live is the prefix of a restricted key",
            "rk_" + "a" * 43,  # one case: an identifier, not a token
            "the key rk_nope is not one",
        ],
    ),
    "card with dots, double spaces, one digit at a time": (
        [
            ("card 4111.1111.1111.1111", "payment_card", "4111.1111.1111.1111"),
            ("card 4111  1111  1111  1111", "payment_card", "4111  1111  1111  1111"),
            ("4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1", "payment_card", "4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"),
            ("amex 3782.822463.10005 ok", "payment_card", "3782.822463.10005"),
        ],
        [
            "call 415.555.0123",
            "Call me at +1 415 555 0123",
            "order 2026.03.01.12345",
            "version 4.1.1.1 of the app",
            "scores 4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 2",  # fails Luhn
            "order 4111.1111.1111.1112",
            "invoice INV-2026-000123, paid 2026-03-01",
            "the 4111  1111 1111 1111 mixes separators",
        ],
    ),
    "iban": (
        [
            ("IBAN GB82 WEST 1234 5698 7654 32", "bank_account", "GB82 WEST 1234 5698 7654 32"),
            ("pay to DE89370400440532013000 today", "bank_account", "DE89370400440532013000"),
            (
                "iban: FR14 2004 1010 0505 0001 3M02 606",
                "bank_account",
                "FR14 2004 1010 0505 0001 3M02 606",
            ),
            ("DE89 3704 0044 0532 0130 00 BANK", "bank_account", "DE89 3704 0044 0532 0130 00"),
        ],
        ["IBAN GB82 WEST 1234 5698 7654 33", "GB82 is the first group", "AB12 CDE4 FGH5"],
    ),
    "npm and hugging face tokens": (
        [
            (f"npm token {NPM}", "access_token", NPM),
            (f"the hub said {HF} works", "access_token", HF),
        ],
        ["hf_hub_download fetches a file", "npm_config_registry is set", "npm_" + "a" * 36],
    ),
    "64-hex private key": (
        [
            (f"wallet 0x{HEX64}", "private_key", f"0x{HEX64}"),
            (
                f"import 0x{HEX64.upper()[:-2]}ab into metamask",
                "private_key",
                f"0x{HEX64.upper()[:-2]}ab",
            ),
        ],
        [
            f"sha256 {HEX64}",
            f"commit {HEX64}",
            f"the file's digest is {HEX64}",
            f"tx 0x{HEX64}",
            f"transaction hash: 0x{HEX64}",
            f"block 0x{HEX64}",
            "the colours are #ff00aa and 0xFF00AA",
        ],
    ),
    "aws secret next to its id": (
        [
            (f"{AWS_ID} {AWS_SECRET}", "api_key", AWS_SECRET),
            (f"{AWS_ID}:{AWS_SECRET}", "api_key", AWS_SECRET),
            (f"{AWS_SECRET} goes with {AWS_ID}", "api_key", AWS_SECRET),
        ],
        [f"the word {'abcdefghij' * 4} is long", "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/"],
    ),
    "passwords with other words": (
        [
            ("pass: hunter2", "password", "hunter2"),
            ("login: bob / hunter2", "password", "hunter2"),
            ("credentials bob/s3cret!", "password", "s3cret!"),
            ("Login with password hunter2x7", "password", "hunter2x7"),
            ("use the wifi password Sommer2026! at home", "password", "Sommer2026!"),
        ],
        [
            "my PIN is in the drawer",
            "I forgot my password again",
            "boarding pass: printed",
            "season pass: 2026",
            "use password managers",
            "login with password reset",
            "Log in with password protection on",
            "login: alice",
            "the login page is /login",
        ],
    ),
    # found by a fuzz run of `remem mcp` (2026-12-07): stored and echoed back before
    "vendor tokens": (
        [
            (f"sendgrid {SENDGRID}", "api_key", SENDGRID),
            (
                "shop token shpat_" + "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
                "access_token",
                "shpat_" + "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
            ),
            (f"DO token {DIGITALOCEAN}", "access_token", DIGITALOCEAN),
            (f"upload with {PYPI}", "api_key", PYPI),
            (f"{AZURE_CONNECTION}", "api_key", AZURE_KEY),
            (
                "docker login -p dckr_pat_" + "Xy9Zk2Lm4Np6Qr8St0Uv2Wx4Yz6",
                "access_token",
                "dckr_pat_" + "Xy9Zk2Lm4Np6Qr8St0Uv2Wx4Yz6",
            ),
            (
                "twilio SK" + "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
                "api_key",
                "SK" + "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
            ),
            (
                "trigger glptt-" + "Xy9Zk2Lm4Np6Qr8St0Uv",
                "access_token",
                "glptt-" + "Xy9Zk2Lm4Np6Qr8St0Uv",
            ),
            (
                "bot 110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
                "access_token",
                "110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
            ),
            (
                "mailgun key-" + "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
                "api_key",
                "key-" + "3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
            ),
        ],
        [
            "SKU 1234567890 is out of stock",
            "a key-value store",
            "SG.1 is the first report",
            "set AccountKey= in the connection string",
            "order 12345678:AA is late",
            "the shpat_ prefix names a Shopify token",
            "dckr_pat_ tokens expire",
            "pypi-release is a script",
        ],
    ),
    "a password after its owner, with no is": (
        [
            ("my wifi password vmlCH8INPGOI5o", "password", "vmlCH8INPGOI5o"),
            ("my password hunter2hunter2 for the vpn", "password", "hunter2hunter2"),
            ("the router password Tr0ub4dor&3 works", "password", "Tr0ub4dor&3"),
        ],
        [
            "my password manager is great",
            "the password field is empty",
            "my password expires in 2026",
            "our wifi password changed last week",
            "my password is on the fridge",
        ],
    ),
}


GAP_CASES = [(name, *case) for name, (cases, _) in GAPS.items() for case in cases]


PASSWORDS_BY_LANGUAGE = [
    ("Passwort: Sommer2026", "Sommer2026"),  # de
    ("Mein Passwort ist geheim99", "geheim99"),
    ("Kennwort für das WLAN: blau-haus-7", "blau-haus-7"),
    ("mot de passe : soleil", "soleil"),  # fr
    ("le mot de passe est soleil42", "soleil42"),
    ("contraseña: gato1234", "gato1234"),  # es
    ("la contraseña es perro99", "perro99"),
    ("senha: abacaxi9", "abacaxi9"),  # pt
    ("a senha do banco é caju2026", "caju2026"),
    ("wachtwoord: fiets123", "fiets123"),  # nl
    ("het wachtwoord is tulp-88", "tulp-88"),
    ("lösenord: sommar77", "sommar77"),  # sv
    ("hasło: kot12345", "kot12345"),  # pl
]


ALL_POSITIVE = [case[0] for case in PASSWORDS + KEYS + PRIVATE_KEYS + RECOVERY_CODES]


BAD = ["\ud800", "\x00"]


CARD = "4111 1111 1111 1111"


TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


BAD_PATHS = [
    "/v1/memories/a%00b",
    "/v1/memories/a%00b/history",
    "/v1/memories/a%ed%a0%80b",
    "/v1/events?actor_id=al%00ice",
    "/v1/events?actor_id=alice&session_id=s%00",
    "/v1/memories?actor_id=%ed%a0%80",
]
