"""FAKE secrets for the redaction tests: format-valid, obviously fake, never real.

Every value is assembled at import time from sequences ("Aa0Bb1Cc2...", "0123...cdef")
and split prefixes, so no secret scanner sees a credential in this repository, and
nothing here ever authenticated anywhere.

``SECRETS`` holds ``Secret(label, text, secret)``: ``text`` is how the secret shows up in
a trace (alone, in a header, a connection string, key=value, ...), ``secret`` is the part
that must disappear; redacting ``text`` must give ``text`` with ``secret`` replaced by
``[REDACTED]`` and nothing else changed. The helpers place a text in each free-text or
JSON field of an event.
"""

from __future__ import annotations

import base64
import json
import string
from typing import NamedTuple

REDACTED = "[REDACTED]"

# "Aa0Bb1Cc2...": every few characters hold an upper, a lower and a digit
# the digits run on past the alphabet: zip stops at the shortest
_MIXED = "".join(
    upper + lower + digit
    for upper, lower, digit in zip(string.ascii_uppercase, string.ascii_lowercase, string.digits * 3, strict=False)
)
_HEX = "0123456789abcdef"


def fake(n: int, start: int = 0, alphabet: str = _MIXED) -> str:
    """``n`` characters of an obviously sequential, fake body."""
    return "".join(alphabet[(start + i) % len(alphabet)] for i in range(n))


def hexs(n: int, start: int = 0) -> str:
    return fake(n, start, _HEX)


def _b64url(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def _pem(kind: str, body_lines: int = 3, newline: str = "\n") -> str:
    begin, end = "-----" + "BEGIN ", "-----" + "END "
    label = (kind + " " if kind else "") + "PRIVATE" + " KEY"
    lines = [begin + label + "-----", *(fake(64, 7 * i) for i in range(body_lines)), end + label + "-----"]
    return newline.join(lines)


class Secret(NamedTuple):
    label: str
    text: str
    secret: str

    @property
    def redacted(self) -> str:
        return self.text.replace(self.secret, REDACTED)


def _alone(label: str, secret: str) -> Secret:
    return Secret(label, secret, secret)


def _in(label: str, before: str, secret: str, after: str = "") -> Secret:
    return Secret(label, before + secret + after, secret)


JWT = ".".join(
    [
        _b64url({"alg": "HS256", "typ": "JWT"}),
        _b64url({"sub": "fake-user-0001", "name": "Fake Person", "iat": 1700000000}),
        fake(43, 5).replace("0", "-"),  # a signature that signs nothing
    ]
)
BASIC = base64.b64encode(b"demo-user:not-a-real-password-0000").decode()
PASSWORD = "Fake" + "Passw0rd" + "-0000"

SECRETS: list[Secret] = [
    # providers' API keys and tokens
    _alone("openai-legacy", "sk" + "-" + fake(48)),
    _alone("openai-project", "sk" + "-proj-" + fake(40, 1) + "_" + fake(20, 2) + "-" + fake(60, 3)),
    _alone("openai-service-account", "sk" + "-svcacct-" + fake(64, 4)),
    _alone("anthropic", "sk" + "-ant-" + "api03-" + fake(93, 5) + "AA"),
    _alone("anthropic-admin", "sk" + "-ant-" + "admin01-" + fake(93, 6) + "AA"),
    _alone("openrouter", "sk" + "-or-" + "v1-" + hexs(64)),
    _alone("deepseek", "sk" + "-" + hexs(32, 3)),
    _alone("aws-access-key-id", "AK" + "IA" + "FAKE" + "0123456789AB"),
    _alone("aws-sts-key-id", "AS" + "IA" + "FAKE" + "ABCDEF012345"),
    _in("aws-secret-env", "aws_secret_access_key = ", fake(36, 9) + "/+Ab"),
    _in("aws-secret-json", '"SecretAccessKey": "', fake(36, 10) + "+/Cd", '"'),
    _alone("github-classic", "gh" + "p_" + fake(36, 11)),
    _alone("github-oauth", "gh" + "o_" + fake(36, 12)),
    _alone("github-user-to-server", "gh" + "u_" + fake(36, 13)),
    _alone("github-server-to-server", "gh" + "s_" + fake(36, 14)),
    _alone("github-refresh", "gh" + "r_" + fake(36, 15)),
    _alone("github-fine-grained", "github" + "_pat_" + fake(22, 16) + "_" + fake(59, 17)),
    _alone("gitlab", "gl" + "pat-" + fake(20, 18)),
    _alone("slack-bot", "xo" + "xb-" + "123456789012-1234567890123-" + fake(24, 19)),
    _alone("slack-user", "xo" + "xp-" + "123456789012-1234567890123-1234567890123-" + hexs(32, 1)),
    _in("slack-webhook", "https://hooks.slack.com/services/", "T0000FAKE/B0000FAKE/" + fake(24, 20)),
    _alone("stripe-live", "sk" + "_live_" + fake(24, 21)),
    _alone("stripe-restricted", "rk" + "_live_" + fake(24, 22)),
    _alone("stripe-test", "sk" + "_test_" + fake(24, 23)),
    _alone("stripe-webhook", "wh" + "sec_" + fake(32, 24)),
    _alone("google-api-key", "AI" + "za" + "Sy" + fake(33, 25)),
    _alone("google-oauth-token", "ya" + "29." + fake(60, 26)),
    _alone("google-client-secret", "GOC" + "SPX-" + fake(28, 27)),
    _alone("huggingface", "hf" + "_" + fake(34, 28)),
    _alone("groq", "gs" + "k_" + fake(52, 29)),
    _alone("sendgrid", "SG" + "." + fake(22, 30) + "." + fake(43, 31)),
    _alone("npm", "np" + "m_" + fake(36, 32)),
    _alone("twilio-api-key", "S" + "K" + hexs(32, 5)),
    _alone("twilio-account-sid", "A" + "C" + hexs(32, 6)),
    _in("twilio-auth-token", "TWILIO_AUTH_TOKEN=", hexs(32, 7)),
    _alone("xai", "xa" + "i-" + fake(80, 33)),
    _alone("perplexity", "pp" + "lx-" + fake(48, 34)),
    _alone("replicate", "r8" + "_" + fake(37, 35)),
    _alone("digitalocean", "do" + "p_v1_" + hexs(64, 8)),
    # connection strings
    _in(
        "azure-storage",
        "DefaultEndpointsProtocol=https;AccountName=fakeacct;AccountKey=",
        fake(86, 36) + "==",
        ";EndpointSuffix=core.windows.net",
    ),
    _in(
        "azure-service-bus",
        "Endpoint=sb://fake.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=",
        fake(43, 37) + "=",
    ),
    _in("azure-sas-url", "https://fakeacct.blob.core.windows.net/c/b.txt?sv=2022-11-02&ss=b&sp=r&sig=", fake(43, 38) + "%3D"),
    # bearer and basic credentials
    _in("bearer-header", "Authorization: Bearer ", fake(40, 39)),
    _in("bearer-text", "then sent Bearer ", fake(32, 40), " to the API"),
    _in("bearer-jwt-header", "authorization: Bearer ", JWT),
    _in("basic-header", "Authorization: Basic ", BASIC),
    _in("basic-text", "the proxy wants Basic ", BASIC, " on every call"),
    _alone("jwt", JWT),
    # private keys
    _alone("pem-rsa", _pem("RSA")),
    _alone("pem-openssh", _pem("OPENSSH", 5)),
    _alone("pem-ec", _pem("EC", 2)),
    _alone("pem-pkcs8", _pem("", 4)),
    _alone("pem-json-escaped", _pem("RSA", 2, newline="\\n")),
    # passwords in URLs
    _in("url-postgres", "postgresql://app_user:", PASSWORD, "@db.internal:5432/app"),
    _in("url-redis-no-user", "redis://:", PASSWORD, "@cache.internal:6379/0"),
    _in("url-https", "https://deploy:", PASSWORD, "@git.example.com/org/repo.git"),
    # key=value text with a sensitive key
    _in("kv-password", "password=", PASSWORD),
    _in("kv-json-spaces", '{"password": "', "correct horse battery staple 0000", '"}'),
    _in("kv-yaml", "api_key: ", fake(32, 41)),
    _in("kv-python", "client_secret='", fake(24, 42), "'"),
    _in("kv-header", "X-Api-Key: ", fake(32, 43)),
    _in("kv-env-export", "export MISTRAL_API_KEY=", fake(32, 44)),
    _in("kv-escaped-json", '{\\"access_token\\": \\"', fake(30, 45), '\\"}'),
    _in("cookie-header", "Cookie: ", "session=" + fake(20, 46) + "; csrftoken=" + fake(20, 47)),
    _in("set-cookie-header", "Set-Cookie: ", "sid=" + fake(24, 48) + "; Path=/; HttpOnly; Secure"),
    # a PEM key as a key=value's value: the whole body must go, not only the BEGIN line
    _in("pem-after-api-key", 'client = Client(api_key="', _pem("RSA", 6), '")'),
    _in(
        "pem-after-api-key-traceback",
        '  File "app.py", line 12, in <module>\n    Client(api_key="',
        _pem("", 6, newline="\\n"),
        '")',
    ),
    _in(
        "gcp-service-account-key",
        '{"type": "service_account", "private_key": "',
        _pem("", 4, newline="\\n"),
        '", "client_email": "x"}',
    ),
    # "authorization" in JSON, plain and inside a JSON string, without a scheme word
    _in("json-authorization", '{"headers": {"authorization": "', fake(32, 49), '"}}'),
    _in("json-string-authorization", '"{\\"authorization\\": \\"', fake(32, 50), '\\"}"'),
    _in("kv-credentials", '{"credentials": "', fake(28, 51), '"}'),
    _in("kv-secrets-yaml", "secrets: ", fake(28, 52)),
]

LABELS = [s.label for s in SECRETS]
assert len(set(LABELS)) == len(LABELS), "labels must be unique"
assert all(s.text.count(s.secret) == 1 for s in SECRETS), "each secret must occur once in its text"

# ---- placements ----------------------------------------------------------------------


def content(text: str) -> str:
    """A step's free text around the secret (a newline after it: header values run to the end of line)."""
    return f"Observed while running the task: {text}\nNext, continue with the refund (order A-17)."


def tool_args(text: str) -> dict:
    """Nested tool arguments holding the text twice, under keys that are not sensitive."""
    return {"command": "deploy", "options": {"env": ["--verbose", text], "note": content(text)}, "retries": 2}


TOOL_ARGS_COUNT = 2


def metadata(text: str) -> dict:
    return {"source": "pytest", "raw": {"log_line": text}, "tokens_in": 812, "max_tokens": 4096}


def context(text: str) -> list:
    """A context window: a list of chat messages, the secret in the last one."""
    return [
        {"role": "system", "content": "You are a support agent. Be brief."},
        {"role": "user", "content": content(text)},
    ]


PLACEMENTS = {"content": content, "tool_args": tool_args, "metadata": metadata, "context": context}

# Identifier fields take the text as it is (a key sent as `environment`, a tool_call_id carrying one).
STEP_IDS = ("event_id", "parent_id", "agent_id", "model", "tool_name", "tool_call_id", "error_class")
SESSION_IDS = ("agent_id", "model", "workflow", "environment", "agent_version", "source", "name")
COUNTS = {"content": 1, "tool_args": TOOL_ARGS_COUNT, "metadata": 1, "context": 1}

# ---- text that looks a bit like a secret and is not ----------------------------------

NOT_SECRETS: list[str] = [
    "pip install scikit-learn; the sk-learn docs cover pipelines",
    "task-123 is blocked by task-456 and ask-the-user-first",
    "commit e3b0c44298fc1c149afbf4c8996fb92427ae41e4 fixed the flaky test",
    "request 3fa17124-fa25-4bfc-a9dd-85fefa3777d9 and trace 4bf92f3577b34da6a3ce929d0e0e4736",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "usage: max_tokens=4096, prompt_tokens: 812, token_count=5, tokens_in: 10, total_tokens=822",
    "The bearer of bad news. Basic authentication is disabled. Bearer authentication required.",
    "https://example.com:8080/path?q=1&page=2 and http://localhost:3000/",
    "session_id=run-42 event_id=e7 parent_id=span-3",
    'keyword: refund, monkey: banana, primary_key=order_id, class="key-value"',
    "Invalid token: expected ')' at line 3",
    "the secret to good soup is salt; a password reset e-mail was sent",
    "Enter your password:\nThe prompt stayed open.",
    "ghp_short hf_hub_download(repo_id='gpt2') npm_config_cache=/tmp/npm AKIA alone",
    "eyJhbGciOiJIUzI1NiJ9 is only a JWT header",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "pass: 3 tests, fail: 0, author: Jane Doe",
    "2026-05-01T09:00:01.123Z v1.110.2 192.168.0.1:8080 gpt-4o-mini claude-3-5-sonnet-20241022",
    "token_type: Bearer, expires_in: 3600, scope: read write",
    "arn:aws:iam::123456789012:role/demo in region us-east-1",
    "C:\\Users\\me\\secret\\notes.txt and /etc/passwd",
    "xoxo, the team. SKU-12345. ACCESS denied for user bob",
    "Use the api_key parameter or the OPENAI_API_KEY environment variable.",
    "The order total is 1234 5678 9012 3456 cents? No: call 555-123-4567 or write to bob@example.com",
]
