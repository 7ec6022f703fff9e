"""The redactor: which variables are secrets, what each kind of secret becomes, and that the
fast pre-check never lets a secret through."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from pipeline.events import (
    ErrorKind,
    Instant,
    InvocationFailed,
    Json,
    Ordinal,
    Role,
    TopicPublished,
)
from pipeline.handlers.redaction import (
    TOKEN_SHAPES,
    Redactor,
    mask_url_passwords,
    secret_values,
)

AT = Instant(datetime(2026, 1, 1, tzinfo=UTC))
SAMPLES = {
    "private-key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----",
    "anthropic-key": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
    "openai-key": "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "github-token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "gitlab-token": "glpat-abcdefghijklmnopqrst",
    "slack-token": "xoxb-1234567890-abcdef",
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "google-api-key": "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
    "stripe-key": "sk_live_abcdefghijklmnop1234",
    "huggingface-token": "hf_abcdefghijklmnopqrstuvwxyz012345",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlc2ln",
    "bearer-token": "Bearer abcdefghijklmnopqrstuvwxyz.0123",
}


def test_secret_variables_are_found_by_name_and_urls_by_their_password() -> None:
    """``*_KEY``, ``*_TOKEN``, ``*PASSWORD*`` and configured names are secrets (any case);
    short values and other names are not; a URL's password is, whatever the variable."""
    found = secret_values(
        {
            "OPENAI_API_KEY": "abcdefgh12345",
            "gh_token": "tokentokentoken",
            "DB_PASSWORD_FILE": "/run/secrets/db",
            "ACME_CREDS": "acme-creds-123",
            "SHORT_KEY": "1234",
            "HOME": "/home/someone-long",
            "DATABASE_URL": "postgresql://app:s3cretpw@db/app",
        },
        patterns=("acme_*",),
    )
    assert found == {
        "abcdefgh12345": "OPENAI_API_KEY",
        "tokentokentoken": "gh_token",
        "/run/secrets/db": "DB_PASSWORD_FILE",
        "acme-creds-123": "ACME_CREDS",
        "s3cretpw": "DATABASE_URL",
    }


def test_every_token_shape_is_masked_with_its_name() -> None:
    """Each shape of the table, inside other text, becomes ``[redacted:<shape>]``."""
    redactor = Redactor({})
    assert set(SAMPLES) == {name for name, _, _ in TOKEN_SHAPES}
    for name, sample in SAMPLES.items():
        masked = redactor.text(f"said: {sample} (end)")
        assert masked == f"said: [redacted:{name}] (end)", name


def test_a_variables_secret_is_masked_by_its_name_longest_first() -> None:
    """A secret containing another is masked whole, named by its own variable."""
    redactor = Redactor({"abcdefgh": "SHORT_KEY", "abcdefgh-longer": "LONG_TOKEN"})
    assert redactor.text("x abcdefgh-longer y abcdefgh") == (
        "x [redacted:LONG_TOKEN] y [redacted:SHORT_KEY]"
    )


def test_url_passwords_are_masked_and_the_user_kept() -> None:
    """Messages naming a store URL never show its password."""
    text = "postgresql://ralph:hunter2@[::1/db: bad URL"
    assert mask_url_passwords(text) == "postgresql://ralph:[redacted:password]@[::1/db: bad URL"


def test_a_fact_is_masked_in_every_string_and_left_alone_without_secrets() -> None:
    """Field values and the keys and values of JSON payloads, at any depth, are masked; a fact
    holding no secret is returned as it is (the same object)."""
    redactor = Redactor({"topsecretvalue": "API_KEY"})
    clean = TopicPublished(
        topic="progress",
        payload=Json.of({"a": [1, "b"]}),
        line_number=Ordinal(1),
        emitted_at=None,
        at=AT,
    )
    assert redactor.event(clean) is clean
    payload = Json.of({"topsecretvalue": [{"deep": "x topsecretvalue y"}]})
    masked = redactor.event(
        TopicPublished(
            topic="progress", payload=payload, line_number=Ordinal(1), emitted_at=None, at=AT
        )
    )
    assert isinstance(masked, TopicPublished)
    assert masked.payload.value == {"[redacted:API_KEY]": [{"deep": "x [redacted:API_KEY] y"}]}
    failed = InvocationFailed(
        role=Role.DEVELOPER,
        agent="main",
        error=ErrorKind.NON_ZERO_EXIT,
        message="401 key topsecretvalue",
        retriable=True,
        at=AT,
    )
    assert redactor.event(failed) == InvocationFailed(
        role=Role.DEVELOPER,
        agent="main",
        error=ErrorKind.NON_ZERO_EXIT,
        message="401 key [redacted:API_KEY]",
        retriable=True,
        at=AT,
    )


@given(
    prefix=st.text(max_size=20),
    shape=st.sampled_from(sorted(SAMPLES.values())),
    suffix=st.text(max_size=20),
)
def test_the_fast_check_never_passes_a_text_the_full_pattern_matches(
    prefix: str, shape: str, suffix: str
) -> None:
    """Whatever surrounds a token, the pre-check flags it, and the masked text holds none."""
    redactor = Redactor({})
    text = prefix + shape + suffix
    assert redactor._holds_secret({"k": [text]})
    assert shape not in redactor.text(text)


@given(st.text())
def test_the_fast_check_flags_every_text_a_shape_matches(text: str) -> None:
    """No text has a match of a token shape without one of its hints (the pre-check is
    complete), and no text it passes is changed by masking."""
    redactor = Redactor({"literal-secret": "X_KEY"})
    if not redactor._holds_secret(text):
        assert redactor.text(text) == text
