"""Tests for vaultmem.core.secrets: one realistic positive per pattern, a set of prose and code
negatives, idempotence, config extras, and hypothesis properties (no secret byte survives, no
secret byte is reported, a second pass changes nothing).

Secrets are built by concatenation so nothing that looks like a live credential sits in the repo.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from vaultmem.core import secrets as secrets_module
from vaultmem.core.errors import ConfigError
from vaultmem.core.secrets import (
    BUILTIN_PATTERNS,
    Redaction,
    SecretPattern,
    compile_patterns,
    find_secrets,
    marker,
    may_hold_secrets,
    redact,
    secret_names,
)

BUILTIN_NAMES = {p.name for p in BUILTIN_PATTERNS}

# Fake secrets, assembled at run time.
GITHUB = "ghp_" + "A1b2C3d4" * 4 + "E5f6"
JWT = (
    "eyJ"
    + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJ"
    + "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    + "."
    + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + "Q" * 32 + "\n" + "a" * 64 + "\nabcd==\n"
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + PEM_BODY + "-----END RSA " + "PRIVATE KEY-----"

# (pattern name, text around a secret, the secret) — the secret sits at `{}`.
POSITIVES: list[tuple[str, str, str]] = [
    ("private-key", "key below:\n{}\nthat was it", PEM),
    (
        "private-key",
        "encrypted:\n{}\nend",
        "-----BEGIN ENCRYPTED "
        + "PRIVATE KEY-----\n"
        + PEM_BODY
        + "-----END ENCRYPTED "
        + "PRIVATE KEY-----",
    ),
    (
        "private-key",
        'json {"private_key": "{}\\n", "type": "service_account"}',
        "-----BEGIN "
        + "PRIVATE KEY-----\\n"
        + "MIIEv"
        + "Q" * 60
        + "\\n-----END "
        + "PRIVATE KEY-----",
    ),
    (
        "private-key",
        "unfinished paste:\n{}",
        "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + "b3BlbnNzaC1rZXktdjEAAAAA" + "B" * 40,
    ),
    ("url-password", "connect to postgres://admin:{}@db.internal:5432/app now", "s3cr3t-Pa55"),
    ("url-password", "REDIS_URL=redis://:{}@cache:6379/0", "n0tAPlaceholder"),
    ("aws-access-key-id", "id {} in use", "AKIA" + "IOSFODNN7EXAMPLE"),
    ("aws-access-key-id", "session {} in use", "ASIA" + "Y34FZKBOKMUTVV7A"),
    (
        "aws-secret-access-key",
        "aws_secret_access_key = {}\nregion = eu-west-1",
        "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY",
    ),
    (
        "aws-secret-access-key",
        "AWS_SECRET_ACCESS_KEY={}",
        "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY",
    ),
    ("github-token", "use {} for the API", GITHUB),
    ("github-token", "oauth {} here", "gho_" + "x9Y8" * 9),
    ("github-token", "app {} here", "ghs_" + "x9Y8" * 9),
    ("github-token", "fine-grained {} here", "github_pat_" + "11ABCDEFG0" * 3 + "_" + "q" * 40),
    ("gitlab-token", "gitlab {} here", "glpat-" + "Xy12" * 5),
    ("npm-token", "//registry.npmjs.org/:_authToken={}", "npm_" + "a1B2" * 9),
    ("slack-token", "bot {} posts", "xoxb-" + "1234567890-0987654321-" + "aBcD" * 6),
    ("slack-token", "user {} posts", "xoxp-" + "1234567890-" + "aBcD" * 6),
    (
        "slack-webhook",
        "notify https://hooks.slack.com/services/{} on failure",
        "T0" + "1ABCDEF/B0" + "1ABCDEF/" + "xYz1" * 6,
    ),
    ("google-api-key", "maps key {} in config", "AIza" + "SyA1b2C3d4" * 3 + "E5f6g"),
    ("stripe-key", "charge with {} today", "sk_live_" + "51H" + "a1B2" * 6),
    ("stripe-key", "restricted {} today", "rk_live_" + "51H" + "a1B2" * 6),
    ("stripe-key", "test mode {} today", "sk_test_" + "51H" + "a1B2" * 6),
    ("openai-key", "OPENAI key {} set", "sk-" + "a1B2c3D4" * 6),
    ("openai-key", "project key {} set", "sk-proj-" + "a1B2c3D4_e5" * 8),
    ("anthropic-key", "claude key {} set", "sk-ant-api03-" + "a1B2c3D4-e5" * 8 + "AA"),
    ("jwt", "session cookie {} expires", JWT),
    ("bearer-token", 'curl -H "Authorization: Bearer {}" https://api', "abc123def456ghi789jkl"),
    ("bearer-token", "send bearer {} with it", "Zm9vYmFy0123456789xyz"),
    ("basic-auth", "Authorization: Basic {}\nHost: x", "dXNlcjpwYXNzd29yZA" + "=="),
    ("password-assignment", "DB_PASSWORD={}\nDB_HOST=localhost", "hunter2"),
    ("password-assignment", "export PGPASSWORD={}", "plainletters"),
    ("password-assignment", "db:\n  password: {}\n  host: x", "hunter2"),
    ("password-assignment", "db:\n  password: {}\n", "onlyletters"),
    ("password-assignment", 'password = "{}"  # prod', "correct horse battery staple"),
    ("password-assignment", '{"password": "{}", "user": "bob"}', "p@ss w0rd"),
    ("password-assignment", "**Password:** {} (rotate monthly)", "Tr0ub4dor&3"),
    ("password-assignment", 'unclosed: password = "{}\nnext line', "half a quote"),
    ("password-assignment", "mysql --password={} -u root", "t0psecret"),
    ("secret-assignment", "CLIENT_SECRET={}", "Wq9xYz" + "Lm3n"),
    ("secret-assignment", "SECRET_KEY = '{}'", "django-insecure-" + "9x8y7z"),
    ("secret-assignment", "jwt_secret: {}", "k3y-material"),
    ("token-assignment", "SLACK_BOT_TOKEN={}", "plainvalue"),
    ("token-assignment", "https://x.test/cb?access_token={}&state=1", "abc123"),
    ("token-assignment", "refresh_token: {}\n", "r3fr3sh"),
    ("api-key-assignment", "OPENWEATHER_API_KEY={}", "0123abcd"),
    ("api-key-assignment", 'headers = {"x-api-key": "{}"}', "k-9f8e7d"),
    # Issue 16: shapes the first list missed.
    ("huggingface-token", "HF token {} for the hub", "hf_" + "AbCdEfGh12" * 3 + "Ij34"),
    ("sendgrid-key", "mail via {} now", "SG." + "aB3dE6gH9jK2mN5pQ8sT1v" + "." + "Xy7" * 14 + "Z"),
    ("digitalocean-token", "doctl auth init -t {}", "dop_v1_" + "0a1b2c3d" * 8),
    (
        "azure-key",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={};EndpointSuffix=core",
        "Zm9v" * 21 + "Yg==",
    ),
    ("cli-password", "docker login -u me -p {} registry.example.com", "S3cretPassw0rd"),
    ("cli-password", "mysql -u root -p{} shop", "S3cretPassw0rd"),
    ("pgpass-line", "db.example.com:5432:shop:alice:{}\n", "S3cretPassw0rd"),
    ("password-prose", "By the way, the password is {}. Do not share.", "Tr0ub4dor&3"),
    (
        "aws-credentials-csv",
        "Access key ID,Secret access key\n{}\n",
        "AKIA" + "IOSFODNN7EXAMPLE," + "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY",
    ),
]


@pytest.mark.parametrize(("name", "template", "secret"), POSITIVES)
def test_positive_is_redacted_with_its_name_and_context_kept(
    name: str, template: str, secret: str
) -> None:
    result = redact(template.replace("{}", secret))

    assert result == Redaction(template.replace("{}", marker(name)), (name,))
    assert find_secrets(template.replace("{}", secret)) == (name,)


@pytest.mark.parametrize(("name", "template", "secret"), POSITIVES)
def test_redaction_is_idempotent(name: str, template: str, secret: str) -> None:
    once = redact(template.replace("{}", secret))

    assert redact(once.text) == Redaction(once.text, ())


def test_assignment_keeps_the_key() -> None:
    assert redact("DB_PASSWORD=hunter2").text == "DB_PASSWORD=[redacted:password-assignment]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The provider name beats the generic one when both would match.
        ("export GITHUB_TOKEN=" + GITHUB, "export GITHUB_TOKEN=[redacted:github-token]"),
        ("key sk-ant-" + "a1B2c3D4" * 5, "key [redacted:anthropic-key]"),
        ("Authorization: Bearer " + JWT, "Authorization: Bearer [redacted:jwt]"),
        (
            "https://bot:" + GITHUB + "@github.com/o/r",
            "https://bot:[redacted:github-token]@github.com/o/r",
        ),
        (
            "AWS_ACCESS_KEY_ID=AKIA" + "IOSFODNN7EXAMPLE",
            "AWS_ACCESS_KEY_ID=[redacted:aws-access-key-id]",
        ),
    ],
)
def test_most_specific_name_is_reported(text: str, expected: str) -> None:
    result = redact(text)

    assert result.text == expected
    assert len(result.found) == 1


def test_several_secrets_are_all_reported_sorted_and_unique() -> None:
    text = f"a {GITHUB} b {JWT} c {GITHUB} d DB_PASSWORD=x1"

    result = redact(text)

    assert result.found == ("github-token", "jwt", "password-assignment")
    assert result.text.count("[redacted:github-token]") == 2


NEGATIVES = [
    # Python type hints, calls, attribute chains, literals, comparisons.
    "def login(username: str, password: str) -> None:",
    "api_key: str | None = None",
    "token: Optional[str] = None",
    "password: SecretStr",
    "token = get_token()",
    "password = input('Password: ')",
    "print('password: ', password)",
    "SECRET_KEY = os.environ['SECRET_KEY']",
    "api_key = settings.OPENAI_API_KEY",
    "password = os.getenv('DB_PASSWORD')",
    "client(token=token)",
    "f(password=pw)",
    "if token == expected:",
    "if not token:\n    pass",
    "token := getToken()",
    "secret: true",
    "token = None",
    "password_hash = bcrypt.hash(x)",
    "max_tokens = 4096",
    "token_count: 12",
    "PASSWORD_MIN_LENGTH=12",
    # Placeholders and references.
    "DB_PASSWORD=${DB_PASSWORD}",
    "API_KEY=<your-api-key>",
    'password: "{{ vault_db_password }}"',
    'password = ""',
    "password: ********",
    "redis://:${REDIS_PASSWORD}@cache:6379",
    "password_file: /run/secrets/db_password",
    "password: /run/secrets/db_password",
    "private_key: |",
    # Prose.
    "Password: never share it with anyone.",
    "The API token: ask Sam for one.",
    "bearer tokens are used for the API; bearer authentication is simpler.",
    "Store the secret in the keychain, not in the repo.",
    "the task-list and the risk-assessment-document-2024-Q1-final",
    "sk-learn is not a thing; mask-Rcnn-2024-model-weights-v2",
    # Identifiers that look random.
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "commit 3f2a9c0d1e4b5a6978877665544332211aabbccd",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    # URLs without credentials.
    "http://localhost:8080/x and ssh://git@github.com:22/r and git@github.com:o/r.git",
    "https://user@example.com/path?x=1",
    # Command lines and prose that hold no password.
    "mysql -u root -p shop",
    "docker login -u me registry.example.com",
    "The password is changed monthly.",
    "the password is in the vault (see 1Password)",
    "at 10:30:45 the build:ran:fine",
    # Markers are not secrets.
    "token: [redacted:jwt]",
    "DB_PASSWORD=[redacted:password-assignment]",
    "Authorization: Bearer [redacted:bearer-token]",
    "postgres://u:[redacted:url-password]@h/db",
    "[redacted:github-token] [redacted:private-key]",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_negative_is_left_alone(text: str) -> None:
    assert redact(text) == Redaction(text, ())


def test_builtin_names_are_unique_and_marker_safe() -> None:
    names = [p.name for p in BUILTIN_PATTERNS]

    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9-]*", n) for n in names)


def test_every_builtin_pattern_has_a_positive() -> None:
    assert {name for name, _, _ in POSITIVES} == BUILTIN_NAMES


def test_docs_list_every_builtin_pattern_in_order() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "secrets.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `([a-z0-9-]+)` \|", doc.split("## Built-in patterns")[1], re.M)

    assert listed[: len(BUILTIN_PATTERNS)] == [p.name for p in BUILTIN_PATTERNS]


# --- config extras -----------------------------------------------------------------------------


def test_extra_pattern_from_config_is_applied_after_builtins() -> None:
    extra = compile_patterns([("internal-token", "itk_[A-Za-z0-9]{20}")])
    text = "use itk_" + "a1B2" * 5 + " and " + GITHUB

    result = redact(text, extra)

    assert result.text == "use [redacted:internal-token] and [redacted:github-token]"
    assert result.found == ("github-token", "internal-token")
    assert find_secrets(text, extra) == ("github-token", "internal-token")
    assert redact(text).found == ("github-token",)


def test_extra_pattern_with_secret_group_keeps_the_rest() -> None:
    extra = compile_patterns([("employee-pin", r"PIN (?P<secret>\d{6})")])

    assert redact("badge PIN 123456 ok", extra).text == "badge PIN [redacted:employee-pin] ok"


def test_greedy_extra_does_not_eat_markers() -> None:
    # A careless extra pattern must not rewrite markers, or redaction would not be idempotent.
    extra = compile_patterns([("lower-word", "[a-z]+")])

    once = redact("x " + GITHUB, extra)

    assert once.text == "[redacted:lower-word] [redacted:github-token]"
    assert redact(once.text, extra) == Redaction(once.text, ())


def test_bad_extra_regex_raises_config_error_naming_it() -> None:
    with pytest.raises(ConfigError) as caught:
        compile_patterns([("ok-one", "abc"), ("broken-one", "itk_[A-Z")])

    assert "broken-one" in caught.value.message
    assert caught.value.code == "config_invalid"


@pytest.mark.parametrize("name", ["Bad Name", "", "x]y", "UPPER"])
def test_extra_with_unusable_name_is_rejected(name: str) -> None:
    with pytest.raises(ConfigError, match=r"secrets\.patterns"):
        compile_patterns([(name, "abc")])


def test_extra_matching_empty_string_is_rejected() -> None:
    with pytest.raises(ConfigError, match="empty-match"):
        compile_patterns([("empty-match", "a*")])


def test_secret_pattern_is_a_frozen_value() -> None:
    pattern = SecretPattern("x", re.compile("x"))

    with pytest.raises(AttributeError):
        pattern.name = "y"  # type: ignore[misc]


# --- properties --------------------------------------------------------------------------------

_FILLER = st.text(alphabet=st.characters(codec="utf-8"), max_size=80)
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _body(size: int, alphabet: str = _ALNUM) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=size, max_size=size + 20)


# Each strategy yields (text holding the secret, the secret bytes that must disappear).
_VALUE = st.from_regex(r"[0-9][A-Za-z0-9!@%^*+/_-]{7,40}", fullmatch=True)
_SECRETS = st.one_of(
    _body(36).map(lambda b: ("ghp_" + b, "ghp_" + b)),
    _body(20, _ALNUM + "_-").map(lambda b: ("glpat-" + b, "glpat-" + b)),
    _body(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567").map(lambda b: ("AKIA" + b[:16], "AKIA" + b[:16])),
    _body(20).map(lambda b: ("sk_live_" + b, "sk_live_" + b)),
    _body(30).map(lambda b: ("sk-ant-api03-" + b, "sk-ant-api03-" + b)),
    _body(30).map(lambda b: ("sk-proj-A1" + b, "sk-proj-A1" + b)),
    _body(35, _ALNUM + "_-").map(lambda b: ("AIza" + b[:35], "AIza" + b[:35])),
    st.tuples(_body(10), _body(10), _body(16)).map(
        lambda t: (f"eyJ{t[0]}.eyJ{t[1]}.{t[2]}", f"eyJ{t[0]}.eyJ{t[1]}.{t[2]}")
    ),
    _VALUE.map(lambda v: ("DB_PASSWORD=" + v, v)),
    _VALUE.map(lambda v: ("api_token: " + v, v)),
    _VALUE.map(lambda v: ('"client_secret": "' + v + '"', v)),
    _VALUE.map(
        lambda v: (
            "https://bob:" + v.replace("/", "_").replace("@", "_") + "@h.test/x",
            v.replace("/", "_").replace("@", "_"),
        )
    ),
    st.from_regex(r"[0-9][A-Za-z0-9._~+-]{15,60}", fullmatch=True).map(
        lambda v: ("Authorization: Bearer " + v, v)
    ),
    _body(64, _ALNUM + "+/").map(
        lambda b: (
            "-----BEGIN EC " + "PRIVATE KEY-----\n" + b + "\n-----END EC " + "PRIVATE KEY-----",
            b,
        )
    ),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(before=_FILLER, secret=_SECRETS, after=_FILLER)
def test_no_secret_byte_survives_or_is_reported(
    before: str, secret: tuple[str, str], after: str
) -> None:
    text, sensitive = secret
    assume(sensitive not in before and sensitive not in after)

    result = redact(f"{before} {text} {after}")

    assert sensitive not in result.text
    assert result.found
    assert set(result.found) <= BUILTIN_NAMES
    assert all(sensitive not in name for name in result.found)
    assert redact(result.text) == Redaction(result.text, ())


@settings(max_examples=300)
@given(st.text())
def test_arbitrary_text_never_raises_and_is_idempotent(text: str) -> None:
    once = redact(text)

    assert redact(once.text) == Redaction(once.text, ())


_FRAGMENTS = st.sampled_from(
    [
        "password",
        "token",
        "=",
        ": ",
        '"',
        "'",
        " ",
        "\n",
        "sk-",
        "sk-ant-",
        "ta",
        "Ab1Cd2Ef3Gh4Ij5Kl6Mn",
        "https://hooks.slack.com/services/",
        "ghp_",
        "eyJ",
        ".",
        "://",
        "u:",
        "@",
        "Bearer ",
        "A1b2",
        "xyz",
        "[redacted:jwt]",
        "-----BEGIN PRIVATE KEY-----",
        "-----END PRIVATE KEY-----",
        "AKIA",
        "$",
        "(",
        ")",
        "**",
        "_",
        "-",
    ]
)


@settings(max_examples=500)
@given(st.lists(_FRAGMENTS, max_size=40).map("".join))
def test_secret_shaped_text_is_idempotent(text: str) -> None:
    once = redact(text)

    assert redact(once.text) == Redaction(once.text, ())


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "unit",
    [
        "a",
        "-----BEGIN PRIVATE KEY-----",
        "://a:",
        "eyJa.",
        "sk-A1",
        "bearer a1",
        'password: "',
        "password:a.b.",
        "token:\t",
        "AKIA",
        "ghp_",
        "A/b+",
        "[redacted:x]",
        "x" * 300 + " ",
    ],
)
def test_one_megabyte_adversarial_input_finishes(unit: str) -> None:
    # Patterns are bounded and possessive, so this is linear; the timeout only guards a hang.
    text = (unit * (1_000_000 // len(unit) + 1))[:1_000_000]

    result = redact(text)

    assert redact(result.text).found == ()


# --- the trigger pre-check ---------------------------------------------------------------------


def _redact_every_pattern(text: str) -> Redaction:
    """`redact` as it was before triggers: every pattern runs on every text (on the reader's
    view first, as `redact` does)."""
    from vaultmem.core.secrets import reader_view

    view = reader_view(text)
    if view is not text:
        seen = _every_pattern(view)
        if seen.found:
            return seen
    return _every_pattern(text)


def _every_pattern(text: str) -> Redaction:
    from vaultmem.core.secrets import _apply

    found: set[str] = set()
    for pattern in BUILTIN_PATTERNS:
        text, hit = _apply(pattern, text)
        if hit:
            found.add(pattern.name)
    return Redaction(text, tuple(sorted(found)))


def _assert_triggers_hold(text: str) -> None:
    from vaultmem.core.secrets import _folded, _may_match

    for pattern in BUILTIN_PATTERNS:
        if pattern.regex.search(text):
            assert _may_match(pattern.name, text, _folded(text)), (pattern.name, text)


def test_triggers_name_the_builtin_patterns() -> None:
    """Triggers are keyed by pattern name: a misspelt key would leave its pattern running on
    every text (safe, but the pre-check lost) and the key dead."""
    from vaultmem.core.secrets import _TRIGGERS, _UNTRIGGERED

    names = {pattern.name for pattern in BUILTIN_PATTERNS}
    assert set(_TRIGGERS) == names - {"pgpass-line"}  # pgpass-line has its own regex
    assert not _UNTRIGGERED


def test_a_time_of_day_is_no_pgpass_trigger() -> None:
    """`13:57:00` holds `:57:`, what a `host:port:` looked like to the old trigger: half the
    notes of a vault with timestamps in their frontmatter went through a redaction of every
    text they hold (a third of a build's redaction CPU). The trigger now needs the
    `:port:database:user:` a pgpass line has."""
    from vaultmem.core.secrets import may_change

    assert not may_change(["updated: 2023-12-01T13:57:00", "at 09:30:15 the job ran"])
    assert not may_change(["a:5432:b"])
    assert may_change(["db.example.com:5432:shop:alice:S3cretPassw0rd"])
    assert may_change(["localhost:*:*:app:S3cretPassw0rd"])


@pytest.mark.parametrize(("name", "template", "secret"), POSITIVES)
def test_every_match_holds_its_patterns_trigger(name: str, template: str, secret: str) -> None:
    text = template.replace("{}", secret)
    _assert_triggers_hold(text)
    # The odd characters Python's (?i) folds to ASCII letters (İ ı ſ K) are found too.
    odd = text.replace("s", "\u017f").replace("k", "\u212a").replace("i", "\u0131")
    _assert_triggers_hold(odd)
    assert redact(odd) == _redact_every_pattern(odd)


_SECRETISH = st.lists(
    _FRAGMENTS
    | st.sampled_from(
        [
            "PaSS",
            "\u017f",
            "\u212a",
            "TOKEN",
            "5432:",
            "Secret",
            "api_key",
            "word",
            "Authorization",
            "AccountKey=",
            " is ",
            "aws_secret_key",
            "credentials",
            "\t",
        ]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=300)
@given(_SECRETISH)
def test_triggered_redaction_equals_running_every_pattern(text: str) -> None:
    _assert_triggers_hold(text)
    assert redact(text) == _redact_every_pattern(text)


@settings(max_examples=300)
@given(st.lists(_SECRETISH | st.text(max_size=20), min_size=1, max_size=3))
def test_texts_without_a_trigger_are_left_as_they_are(texts: list[str]) -> None:
    """`may_hold_secrets` (one look over a search hit's title, heading and snippet) is False
    only when `redact` changes none of them."""
    if not may_hold_secrets(texts):
        assert all(redact(text) == Redaction(text, ()) for text in texts)
    if any(redact(text).found for text in texts):
        assert may_hold_secrets(texts)
    assert may_hold_secrets(["a title", "Setup", "password: hunter2x"])
    assert not may_hold_secrets(["a title", "Setup", "nothing to hide here"])


_INVISIBLES = ["\u00ad", "\u200b", "\u200d"]  # soft hyphen, zero-width space, zero-width joiner


@pytest.mark.parametrize("invisible", _INVISIBLES)
@pytest.mark.parametrize(("name", "template", "secret"), POSITIVES)
def test_a_secret_hidden_by_an_invisible_character_is_still_redacted(
    invisible: str, name: str, template: str, secret: str
) -> None:
    """A soft hyphen or zero-width character shows nothing and the search tokenizer drops it
    inside a word, so `pa\\u00adssword: x` is found as `password: x`: redaction sees it so too."""
    cut = len(secret) // 2
    hidden = template.replace("{}", secret[:cut] + invisible + secret[cut:])
    first = next(c for c in template if c.isalpha())  # and once inside the leading word
    hidden_key = template.replace(first, first + invisible, 1).replace("{}", secret)
    for text in (hidden, hidden_key):
        result = redact(text)
        assert result.found, text
        assert secret not in result.text and secret[cut:] not in result.text
        assert redact(result.text) == Redaction(result.text, ())
        assert may_hold_secrets([text])


def test_invisible_characters_stay_in_a_text_without_a_secret() -> None:
    text = "Mul\u00adti\u00adline hy\u00adphen\u00adation, zero\u200bwidth space, a joiner\u200d."
    assert redact(text) == Redaction(text, ())
    # a text that holds a secret comes back as a reader sees it, redacted
    mixed = "password: hunter2xyz, and an invisible\u00adhyphen elsewhere"
    assert redact(mixed).text == (
        "password: [redacted:password-assignment], and an invisiblehyphen elsewhere"
    )


# --- issue 27: the reader's view, and structures ---------------------------------------------

GHP_27 = "ghp_" + "R7s8T9u0V1w2X3y4Z5a6B7c8D9e0F1g2H3i4"


def test_hidden_ranges_cover_every_format_character_of_this_python() -> None:
    import unicodedata

    from vaultmem.core.secrets import HIDDEN_RANGES

    hidden = {c for lo, hi in HIDDEN_RANGES for c in range(lo, hi + 1)}
    cf = {c for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"}
    assert cf <= hidden
    assert set(range(0xFE00, 0xFE10)) | set(range(0xE0100, 0xE01F0)) <= hidden


def test_the_hidden_classes_find_exactly_the_hidden_characters() -> None:
    """The look for hidden characters and their removal agree with `HIDDEN_RANGES` on every
    code point (the astral class is written as ranges, the BMP one as characters)."""
    from vaultmem.core.secrets import _HAS_HIDDEN, HIDDEN_RANGES

    hidden = {c for lo, hi in HIDDEN_RANGES for c in range(lo, hi + 1)}
    found = {c for c in range(0x110000) if _HAS_HIDDEN.search(chr(c))}
    assert found == hidden - set(range(0xD800, 0xE000))
    text = "".join(chr(c) for c in range(0x1D170, 0x1D180)) + "a\u00adb\U000e0101c"
    assert _HAS_HIDDEN.drop(text) == "".join(ch for ch in text if ord(ch) not in hidden)


def test_a_link_or_a_kebab_name_is_no_trigger() -> None:
    """`://` is in every link and `sk-` in every `task-`: as bare triggers they sent each note
    holding one through a redaction of every text it has (on obsidian-hub, all but 22 of its
    6,571 notes, and most of the build's redaction). A URL's password and a key still are."""
    from vaultmem.core.secrets import may_change

    assert not may_change(["see https://github.com/a/b and http://localhost:8080/x?y=1"])
    assert not may_change(["the obsidian-task-list and desk-setup notes"])
    assert may_change(["postgres://admin:s3cr3t-Pa55@db:5432/app"])
    assert may_change(["https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX"])
    assert may_change(["key sk-proj-Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8"])
    assert may_change(["key sk-ant-api03-Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8"])


# The ones the third hostile run walked through: bidi marks, invisible operators, the combining
# grapheme joiner, a variation selector, the Mongolian vowel separator, isolates and embeddings.
_WALKED = ["\u200e", "\u200f", "\u2061", "\u2062", "\u2063", "\u2064", "\u034f", "\ufe0f",
           "\u180e", "\u061c", "\u2066", "\u202a"]  # fmt: skip


@pytest.mark.parametrize("hidden", _WALKED)
def test_every_hidden_character_is_seen_through(hidden: str) -> None:
    token = GHP_27[:2] + hidden + GHP_27[2:]
    assert redact(f"use {token} now").found == ("github-token",)
    assert redact(f"pass{hidden}word: hunter2x9").found == ("password-assignment",)
    assert may_hold_secrets(["a title", f"use {token} now"])


@pytest.mark.parametrize(
    ("text", "name"),
    [
        (GHP_27.replace("_", "\\_"), "github-token"),
        (GHP_27.replace("_", "&#95;"), "github-token"),
        (GHP_27.replace("_", "&lowbar;"), "github-token"),
        ("xoxb\\-1234567890\\-abcdefghij", "slack-token"),
        ("password\\: hunter2x9", "password-assignment"),
        ("ｇｈｐ＿" + GHP_27[4:], "github-token"),  # full-width: NFKC
    ],
)
def test_escapes_and_compatibility_forms_are_undone(text: str, name: str) -> None:
    cleaned = redact(f"the value {text} here")
    assert cleaned.found == (name,)
    assert GHP_27[4:] not in cleaned.text and "abcdefghij" not in cleaned.text
    assert redact(cleaned.text) == Redaction(cleaned.text, ())  # still idempotent


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("pass**word**: hunter2x9", "password-assignment"),
        ("pass*word*: hunter2x9", "password-assignment"),
        ("to*ke*n: abc123xyz9", "token-assignment"),
        ("DB_PASS**WORD**=hunter2x9", "password-assignment"),
        ("gh**p**_" + GHP_27[4:], "github-token"),
        ("xo*x*b-1234567890-abcdefghij", "slack-token"),
        ("ｐａｓｓ＊＊ｗｏｒｄ: hunter2x9", "password-assignment"),  # full-width stars: NFKC first
    ],
)
def test_emphasis_inside_a_word_is_read_as_the_word(text: str, name: str) -> None:
    """`pass**word**` renders as "password" (the second part bold): redaction sees it so."""
    cleaned = redact(f"the value {text} here")
    assert cleaned.found == (name,)
    assert "hunter2x9" not in cleaned.text and "abc123xyz9" not in cleaned.text
    assert GHP_27[4:] not in cleaned.text and "abcdefghij" not in cleaned.text
    assert redact(cleaned.text) == Redaction(cleaned.text, ())  # still idempotent
    assert may_hold_secrets(["a title", text])


def test_stars_that_are_not_inside_a_word_stay_as_written() -> None:
    from vaultmem.core.secrets import reader_view

    for text in ("* a list item", "**bold** and *em*", "2 * 3", "pass\\*word: hunter"):
        assert reader_view(text) is text or "*" in reader_view(text), text
        assert redact(text) == Redaction(text, ())
    plain = "an ASCII text with no star, escape or entity"
    assert reader_view(plain) is plain  # the fast path gives the object back
    starred = "a **bold** word"
    assert reader_view(starred) is starred  # no star between two letters: nothing undone


def test_a_text_without_a_secret_keeps_its_escapes_and_entities() -> None:
    text = "a \\* star, &amp; an entity, \u200e a mark"
    assert redact(text) == Redaction(text, ())


def test_redact_value_walks_every_field_key_and_number() -> None:
    from dataclasses import dataclass

    from vaultmem.core.secrets import redact_value

    @dataclass(frozen=True, slots=True)
    class Result:
        title: str
        frontmatter: dict[str, object]
        items: tuple[str, ...]

    value = Result(
        f"Deploy with {GHP_27}",
        {"password": 12345678, GHP_27: True, "nested": [{"token": "abc123x"}], "size": 5},
        ("fine", f"[[{GHP_27}]]"),
    )
    clean = redact_value(value)
    shown = repr(clean)
    assert GHP_27 not in shown and "12345678" not in shown and "abc123x" not in shown
    assert clean.frontmatter["size"] == 5 and clean.items[0] == "fine"
    untouched = Result("plain", {"size": 5}, ("a",))
    assert redact_value(untouched) is untouched  # the fast path gives the object back


# -- many names at once (a vault's walk) ----------------------------------------------------------

_NAME_PARTS = (
    *("notes", "Token", "sk-", "ghp_", GITHUB, JWT, "pass", "login", "AKIA", "-----BEGIN"),
    *("\u00e9", "\u200b", "&amp;", "\\", "\n", ":5432:", "/", " ", "://", "*", "xo*xb-1234567890-"),
    "AKIA" + "ABCDEFGH" * 2,
    "https://user:" + "hunter2" + "@host/x",
)


def test_a_name_with_emphasis_inside_a_word_is_picked_among_many() -> None:
    paths = [
        *(f"Folder {i}/Plain note {i}.md" for i in range(300)),
        "K/xo*xb-1234567890-abcdefghij.md",
    ]
    assert secret_names(paths) == {
        "K/xo*xb-1234567890-abcdefghij.md": "K/[redacted:slack-token].md"
    }


@given(
    st.lists(
        st.lists(st.sampled_from(_NAME_PARTS), min_size=1, max_size=6).map("".join),
        min_size=0,
        max_size=40,
    ),
    st.integers(min_value=0, max_value=40),
)
@settings(max_examples=60, deadline=None)
def test_many_names_are_judged_as_each_alone(names: list[str], padding: int) -> None:
    """Above a few hundred paths `secret_names` picks the ones to look at in one pass over
    them all; it must find exactly what asking of each path finds."""
    paths = [*(f"Folder {i}/Plain note {i}.md" for i in range(256 + padding)), *names]
    expected = {p: redact(p).text for p in paths if redact(p).found}
    assert secret_names(paths) == expected


@given(
    st.lists(
        st.sampled_from([*secrets_module._ANY_LITERAL, "_", "x", " ", "gh", "sk", "\n"]),
        max_size=12,
    ).map("".join)
)
def test_the_triggers_present_are_every_literal_the_text_holds(text: str) -> None:
    """The look for `_` that stands for the literals holding one never hides one."""
    _, literals = secrets_module._present(text, text.lower())
    assert literals == {lit for lit in secrets_module._ANY_LITERAL if lit in text}


@pytest.mark.parametrize("literal", [lit for lit in secrets_module._ANY_LITERAL if "_" in lit])
def test_a_literal_holding_an_underscore_is_found_in_text_without_another(literal: str) -> None:
    _, literals = secrets_module._present(f"see {literal}abc", f"see {literal}abc".lower())
    assert literal in literals
