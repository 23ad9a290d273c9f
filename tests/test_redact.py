"""Redaction before storage (docs/security.md): every corpus secret goes in every placement,
the surrounding text stays, counts are right, look-alikes stay untouched."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.ingest.redact import REDACTED, Redactor, default_redactor

try:
    from secrets_corpus import COUNTS, JWT, NOT_SECRETS, PLACEMENTS, SECRETS, SESSION_IDS, STEP_IDS, fake, hexs
except ImportError:  # collected with the rootdir on sys.path instead of tests/
    from tests.secrets_corpus import COUNTS, JWT, NOT_SECRETS, PLACEMENTS, SECRETS, SESSION_IDS, STEP_IDS, fake, hexs

R = Redactor()
ALL = Redactor(emails=True, phones=True, cards=True)


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def leaks(value, secret: str) -> bool:
    return any(secret in text for text in strings(value))


# ---- the corpus ----------------------------------------------------------------------


def test_corpus_is_big_and_varied():
    assert len(SECRETS) >= 40
    assert len({s.label.split("-")[0] for s in SECRETS}) >= 25


@pytest.mark.parametrize("secret", SECRETS, ids=lambda s: s.label)
def test_secret_alone_is_replaced_keeping_its_surroundings(secret):
    out, count = R.scrub(secret.text)
    assert out == secret.redacted
    assert count == 1
    assert secret.secret not in out


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
@pytest.mark.parametrize("secret", SECRETS, ids=lambda s: s.label)
def test_secret_is_removed_from_every_placement(secret, placement):
    place = PLACEMENTS[placement]
    original = place(secret.text)
    before = copy.deepcopy(original)
    out, count = R.scrub(original)
    assert out == place(secret.redacted)
    assert count == COUNTS[placement]
    assert not leaks(out, secret.secret)
    assert original == before, "scrub must not change its input"


@pytest.mark.parametrize("secret", SECRETS, ids=lambda s: s.label)
def test_corpus_secrets_are_still_removed_with_every_option_on(secret):
    out, count = ALL.scrub(PLACEMENTS["content"](secret.text))
    assert not leaks(out, secret.secret)
    assert count >= 1


def test_several_secrets_in_one_text_are_all_counted():
    text = "\n".join(s.text for s in SECRETS)
    out, count = R.scrub(text)
    assert count == len(SECRETS)
    assert out == "\n".join(s.redacted for s in SECRETS)


def test_kept_context_reads_naturally():
    assert R.scrub("Authorization: Bearer " + fake(40))[0] == "Authorization: Bearer [REDACTED]"
    assert R.scrub("postgres://app:" + fake(12) + "@db:5432/x")[0] == "postgres://app:[REDACTED]@db:5432/x"
    assert R.scrub('{"password": "' + fake(12) + '", "user": "bob"}')[0] == '{"password": "[REDACTED]", "user": "bob"}'
    assert R.scrub("key " + "sk-" + fake(48) + " end")[0] == "key [REDACTED] end"


# ---- sensitive keys in JSON ----------------------------------------------------------


SENSITIVE_KEYS = [
    "password",
    "passwd",
    "Password",
    "db_password",
    "secret",
    "client_secret",
    "clientSecret",
    "token",
    "access_token",
    "refresh_token",
    "session_token",
    "sessionToken",
    "x-auth-token",
    "api_key",
    "apikey",
    "api-key",
    "apiKey",
    "X-Api-Key",
    "OPENAI_API_KEY",
    "authorization",
    "Authorization",
    "Proxy-Authorization",
    "cookie",
    "Cookie",
    "set-cookie",
    "Set-Cookie",
    "private_key",
    "privateKey",
    "access_key",
    "aws_secret_access_key",
    "AccountKey",
    "credentials",
    "passphrase",
    "basic_auth",
]
NOT_SENSITIVE_KEYS = [
    "tokens_in",
    "tokens_out",
    "max_tokens",
    "maxTokens",
    "token_count",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "tokenizer",
    "token_type",
    "eos_token",
    "pad_token",
    "session_id",
    "sessionId",
    "keyword",
    "key",
    "monkey",
    "primary_key",
    "sort_key",
    "private_key_id",
    "aws_access_key_id",
    "password_hint",
    "secret_name",
    "token_expires_at",
    "api_key_env",
    "author",
    "passage",
    "bypass_cache",
]


@pytest.mark.parametrize("key", SENSITIVE_KEYS)
def test_string_under_a_sensitive_key_is_replaced(key):
    value = {"outer": {key: "plain-" + fake(10), "note": "kept"}}
    out, count = R.scrub(value)
    assert out == {"outer": {key: REDACTED, "note": "kept"}}
    assert count == 1


@pytest.mark.parametrize("key", NOT_SENSITIVE_KEYS)
def test_string_under_an_ordinary_key_is_kept(key):
    value = {key: "plain value 42"}
    out, count = R.scrub(value)
    assert out is value and count == 0


def test_counts_are_not_secrets():
    usage = {
        "tokens_in": 812,
        "tokens_out": 40,
        "max_tokens": 4096,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "token_count": 3,
        "total_tokens": 15,
        "token": 123,
        "password": None,
        "secret": True,
        "api_key": 1.5,
        "usage": {"prompt_tokens": 1, "completion_tokens": 2},
        "max_tokens_str": "4096",
    }
    out, count = R.scrub(usage)
    assert out is usage and count == 0


def test_containers_under_sensitive_keys_lose_their_strings_only():
    value = {"credentials": {"user": "bob", "pass": fake(12), "expires_in": 3600, "scopes": ["read", "write"]}}
    out, count = R.scrub(value)
    assert out == {"credentials": {"user": REDACTED, "pass": REDACTED, "expires_in": 3600, "scopes": [REDACTED, REDACTED]}}
    assert count == 4


def test_authorization_value_keeps_its_scheme():
    out, count = R.scrub({"headers": {"Authorization": "Bearer " + fake(30), "Accept": "application/json"}})
    assert out == {"headers": {"Authorization": "Bearer [REDACTED]", "Accept": "application/json"}}
    assert count == 1


def test_empty_and_already_redacted_values_are_not_counted():
    value = {"password": "", "token": REDACTED, "Authorization": "Bearer " + REDACTED}
    out, count = R.scrub(value)
    assert out is value and count == 0


def test_extra_keys():
    value = {"ssn": "078-05-1120", "customer": {"Internal-Ref": "abc-123"}, "note": "x"}
    assert R.scrub(value)[1] == 0
    out, count = Redactor(extra_keys=["ssn", "internal_ref"]).scrub(value)
    assert out == {"ssn": REDACTED, "customer": {"Internal-Ref": REDACTED}, "note": "x"}
    assert count == 2


# ---- what is not a secret ------------------------------------------------------------


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_look_alikes_are_not_redacted(text):
    out, count = R.scrub(text)
    assert out is text
    assert count == 0


def test_look_alikes_in_structures_come_back_as_the_same_objects():
    value = {"content": NOT_SECRETS, "metadata": {"ids": ["3fa17124-fa25-4bfc-a9dd-85fefa3777d9"], "n": 3}}
    out, count = R.scrub(value)
    assert out is value and count == 0


def test_short_and_non_text_values_pass_through():
    for value in (None, 0, 1.5, True, "", "short", [], {}, [1, 2, None], {"a": 1}):
        out, count = R.scrub(value)
        assert out is value and count == 0


def test_only_the_changed_path_is_copied():
    clean = {"deep": {"list": [1, 2, 3]}}
    value = {"clean": clean, "dirty": {"text": "password=" + fake(10)}}
    out, count = R.scrub(value)
    assert count == 1
    assert out is not value and out["dirty"] is not value["dirty"]
    assert out["clean"] is clean
    assert value["dirty"]["text"].startswith("password=A")


# ---- optional detectors --------------------------------------------------------------


PII = {
    "email": ("write to jane.doe+test@example.co.uk today", "write to [REDACTED] today"),
    "phone-us": ("call (555) 123-4567 now", "call [REDACTED] now"),
    "phone-intl": ("call +44 20 7946 0958 now", "call [REDACTED] now"),
    "card-visa": ("card 4111 1111 1111 1111 exp 12/30", "card [REDACTED] exp 12/30"),
    "card-plain": ("card 5555555555554444 ok", "card [REDACTED] ok"),
    "card-amex": ("amex 3782-822463-10005 ok", "amex [REDACTED] ok"),
}


@pytest.mark.parametrize("case", sorted(PII))
def test_pii_is_kept_by_default(case):
    text, _ = PII[case]
    assert R.scrub(text) == (text, 0)


@pytest.mark.parametrize("case", sorted(PII))
def test_pii_is_replaced_when_asked(case):
    text, expected = PII[case]
    assert ALL.scrub(text) == (expected, 1)


def test_each_pii_option_is_independent():
    text = "mail a@b.io, call (555) 123-4567, card 4111 1111 1111 1111"
    assert Redactor(emails=True).scrub(text) == ("mail [REDACTED], call (555) 123-4567, card 4111 1111 1111 1111", 1)
    assert Redactor(phones=True).scrub(text) == ("mail a@b.io, call [REDACTED], card 4111 1111 1111 1111", 1)
    assert Redactor(cards=True).scrub(text) == ("mail a@b.io, call (555) 123-4567, card [REDACTED]", 1)


@pytest.mark.parametrize(
    "text",
    [
        "card 4111 1111 1111 1112 fails Luhn",
        "epoch ms 1714554000000 and 1700000000000",
        "on 2026-05-01 09:00:01 and 2026-05-01T09:00:01Z",
        "host 192.168.100.200 port 8080",
        "version 1.110.2, build 20260501, order 12345678",
        "uuid 3fa17124-fa25-4bfc-a9dd-85fefa3777d9",
        "0000 0000 0000 0000 is all zeros",
        '"created": 1719875141, "start_time": 1719875141.0532668, "span_id": 4008793976451812144',
    ],
)
def test_numbers_that_are_not_pii(text):
    assert ALL.scrub(text) == (text, 0)


def test_email_after_url_password_is_not_counted_twice():
    text = "postgres://app:" + fake(12) + "@db.example.com/app"
    assert ALL.scrub(text) == ("postgres://app:[REDACTED]@db.example.com/app", 1)


# ---- events --------------------------------------------------------------------------


def test_step_event_fields_are_scrubbed_and_counted():
    token = "gh" + "p_" + fake(36)
    step = StepEvent(
        session_id="run-1",
        event_id="e1",
        type="tool_call",
        content="calling with " + token,
        tool_name="github_api",
        tool_args={"repo": "org/x", "headers": {"Authorization": "token " + token}},
        metadata={"raw": "api_key=" + fake(20), "tokens_in": 5},
        context=[{"role": "user", "content": "my key is " + token}],
        tokens_in=12,
        redacted=2,
    )
    out = R.event(step)
    assert out is not step
    assert out.content == "calling with [REDACTED]"
    assert out.tool_args == {"repo": "org/x", "headers": {"Authorization": "token [REDACTED]"}}
    assert out.metadata == {"raw": "api_key=[REDACTED]", "tokens_in": 5}
    assert out.context == [{"role": "user", "content": "my key is [REDACTED]"}]
    assert out.redacted == 2 + 4
    assert (out.tool_name, out.event_id, out.tokens_in) == ("github_api", "e1", 12)
    assert token not in out.model_dump_json()
    assert step.content == "calling with " + token, "the input event is left alone"


@pytest.mark.parametrize("secret", SECRETS, ids=lambda s: s.label)
def test_every_corpus_secret_leaves_a_step_event(secret):
    fields = {name: place(secret.text) for name, place in PLACEMENTS.items()}
    out = R.event(StepEvent(session_id="run-1", type="tool_call", tool_name="deploy", **fields))
    assert out.redacted == sum(COUNTS.values())
    for name, place in PLACEMENTS.items():
        assert getattr(out, name) == place(secret.redacted)
    assert not leaks(out.model_dump(), secret.secret)


def test_step_event_identifiers_are_scrubbed_too():
    step = StepEvent(session_id="s", type="tool_call", tool_name="password=" + fake(12), tool_args={"q": "x"})
    out = R.event(step)
    assert out.tool_name == "password=[REDACTED]" and out.redacted == 1


# identifiers are at most 200 characters in the contract: the shapes that fit one
ID_SECRETS = [s for s in SECRETS if len(s.text) <= 200]


def test_most_shapes_fit_an_identifier():
    assert len(ID_SECRETS) >= 60


@pytest.mark.parametrize("secret", ID_SECRETS, ids=lambda s: s.label)
def test_every_identifier_field_loses_every_corpus_secret(secret):
    step = StepEvent(session_id="s", type="tool_call", **{f: secret.text for f in STEP_IDS})
    out = R.event(step)
    assert out.redacted == len(STEP_IDS)
    for f in ("agent_id", "model", "tool_name", "error_class"):
        assert getattr(out, f) == secret.redacted[:200]
    for f in ("event_id", "parent_id", "tool_call_id"):  # they link steps: a hash of the original keeps them apart
        value = getattr(out, f)
        assert secret.secret not in value and value.startswith(secret.redacted[:180]) and len(value) <= 200
        assert "#" in value
    assert out.event_id == out.parent_id  # the same id redacts the same way: parent links hold
    short = ("environment", "agent_version", "source")  # the contract holds these to 100 characters
    fields = {f: secret.text for f in SESSION_IDS if f not in short or len(secret.text) <= 100}
    session = SessionEvent(session_id="s", **fields)
    assert not leaks(R.event(session).model_dump(), secret.secret)


def test_two_ids_with_different_secrets_stay_apart():
    a = R.event(StepEvent(session_id="s", type="think", event_id="sk-" + fake(48, 1)))
    b = R.event(StepEvent(session_id="s", type="think", event_id="sk-" + fake(48, 2)))
    assert a.event_id != b.event_id and a.event_id.startswith("[REDACTED]#")


def test_clean_step_event_comes_back_as_the_same_object():
    step = StepEvent(
        session_id="s",
        type="think",
        content="The user wants a refund; look the order up first.",
        tool_args={"order_id": "A-17"},
        metadata={"max_tokens": 100, "model_params": {"temperature": 0.2}},
        context=[{"role": "system", "content": "You are a support agent."}],
    )
    assert R.event(step) is step


def test_session_event_fields_are_scrubbed():
    key = "sk" + "-proj-" + fake(60)
    session = SessionEvent(
        session_id="run-2",
        name="debug " + key,
        agent_id="agent-" + fake(4),
        outcome="failed: password=" + fake(10),
        metadata={"env": {"OPENAI_API_KEY": key}},
        replay_config={"model": "gpt-4o", "api_key": key},
        tags=["prod", key],
    )
    out = R.event(session)
    assert out.name == "debug [REDACTED]"
    assert out.outcome == "failed: password=[REDACTED]"
    assert out.metadata == {"env": {"OPENAI_API_KEY": REDACTED}}
    assert out.replay_config == {"model": "gpt-4o", "api_key": REDACTED}
    assert out.tags == ["prod", REDACTED]
    assert out.agent_id == session.agent_id
    assert key not in out.model_dump_json()


def test_session_end_event_fields_are_scrubbed():
    end = SessionEndEvent(
        session_id="run-3", status="failed", outcome="crashed with Bearer " + fake(30), metadata={"token": "abc"}
    )
    out = R.event(end)
    assert out.outcome == "crashed with Bearer [REDACTED]"
    assert out.metadata == {"token": REDACTED}
    clean = SessionEndEvent(session_id="run-3", outcome="refund issued")
    assert R.event(clean) is clean


# ---- configuration -------------------------------------------------------------------


def test_default_redactor_reads_the_environment(monkeypatch):
    for name in ("EMAILS", "PHONES", "CARDS", "KEYS"):
        monkeypatch.delenv(f"AGENT_REPLAY_REDACT_{name}", raising=False)
    plain = default_redactor()
    assert (plain.emails, plain.phones, plain.cards, plain.extra_keys) == (False, False, False, frozenset())
    monkeypatch.setenv("AGENT_REPLAY_REDACT_EMAILS", "1")
    monkeypatch.setenv("AGENT_REPLAY_REDACT_PHONES", "true")
    monkeypatch.setenv("AGENT_REPLAY_REDACT_CARDS", "0")
    monkeypatch.setenv("AGENT_REPLAY_REDACT_KEYS", " ssn, Employee-Number ,,")
    configured = default_redactor()
    assert (configured.emails, configured.phones, configured.cards) == (True, True, False)
    out, count = configured.scrub({"ssn": "078-05-1120", "employee_number": "E-1", "mail": "a@b.io"})
    assert out == {"ssn": REDACTED, "employee_number": REDACTED, "mail": REDACTED}
    assert count == 3
    assert default_redactor() is configured, "built once per configuration"


# ---- properties ----------------------------------------------------------------------

FRAGMENTS = [s.text for s in SECRETS[::3]] + [
    "password",
    "token",
    "api_key",
    "Bearer ",
    "Basic ",
    "Cookie: ",
    ": ",
    "=",
    '"',
    "'",
    "\\",
    "\n",
    " ",
    "@",
    "://",
    "sk-",
    "_",
    "-",
    ".",
    "[REDACTED]",
    "eyJ",
    "-----BEGIN ",
    "PRIVATE KEY-----",
    "-----END ",
    "4111 1111 1111 1111",
    "+1 555 123 4567",
    "a@b.io",
    fake(24),
    hexs(32),
    JWT,
]
TEXT = st.one_of(st.text(max_size=60), st.lists(st.sampled_from(FRAGMENTS), max_size=8).map("".join))
KEYS = st.one_of(st.sampled_from(SENSITIVE_KEYS + NOT_SENSITIVE_KEYS), st.text(max_size=12))
JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=4)),
    max_leaves=12,
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=JSON, options=st.tuples(st.booleans(), st.booleans(), st.booleans()))
def test_scrub_is_idempotent_and_never_raises(value, options):
    redactor = Redactor(emails=options[0], phones=options[1], cards=options[2])
    before = copy.deepcopy(value)
    once, count = redactor.scrub(value)
    twice, again = redactor.scrub(once)
    assert twice == once
    assert again == 0
    assert value == before
    if count == 0:
        assert once is value


@settings(deadline=None)
@given(
    prefix=st.sampled_from(["", "x ", "log: ", "\n", "(", '"', "', "]),
    secret=st.sampled_from(SECRETS),
    suffix=st.sampled_from(["", " y", "\n", ")", '",', "; next"]),
)
def test_corpus_secrets_do_not_survive_any_surroundings(prefix, secret, suffix):
    out, count = R.scrub(prefix + secret.text + suffix)
    assert secret.secret not in out
    assert count >= 1
