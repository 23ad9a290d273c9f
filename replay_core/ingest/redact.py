"""Secret and PII scrubbing, run on every ingestion path before anything is stored.

What is caught (docs/security.md): provider API keys and tokens, bearer and basic
credentials, JWTs, PEM private keys, passwords in URLs, ``key=value`` / ``"key": "value"``
text whose key is a sensitive word, and values under sensitive dict keys; optionally
e-mail addresses, phone numbers and card numbers. Each secret becomes ``[REDACTED]``
with the surrounding text kept ("Authorization: Bearer [REDACTED]"). Only the number of
replaced values is reported, never what they were.

Speed: one combined regex compiled once, strings under 8 characters are not scanned,
and containers are copied only along the path to a change, so a value without secrets
comes back as the very same object.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import os
import re
from collections.abc import Iterable
from typing import Any, overload

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent

__all__ = ["REDACTED", "Redactor", "default_redactor"]

REDACTED = "[REDACTED]"

# Shorter strings are not scanned, a cheap skip: no provider token, URL, header or PEM
# block fits in them, only a rare "pwd=x" (a value under a sensitive dict key is still
# caught by its key). E-mail addresses can be shorter, so the skip shrinks with that option.
_MIN_LEN = 8
_MIN_LEN_EMAILS = 6
_KEY_CACHE_MAX = 4096

# --- sensitive keys -----------------------------------------------------------------

_KEY_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+").findall
# A key holding any of these words is sensitive: "db_password", "clientSecret", "Set-Cookie".
_STRONG_WORDS = frozenset(
    "password passwd pwd passphrase passcode secret secrets authorization cookie cookies "
    "credential credentials apikey privatekey accesskey secretkey accesstoken refreshtoken "
    "authtoken sessiontoken sharedaccesssignature jwt".split()
)
# ... or ends in one of these: "access_token", "basic_auth", "db_pass".
_LAST_WORDS = frozenset("token auth pass sig".split())
# ... or ends in "<one of these> key(s)": "api_key", "X-Api-Key", "AccountKey".
_KEY_PREFIXES = frozenset(
    "api private access secret account master signing encryption license subscription "
    "client shared ssh gpg pgp deploy service admin auth app webhook".split()
)
# Tokenizer settings, not credentials: "eos_token", "pad_token".
_NOT_CREDENTIAL_TOKEN = frozenset("eos bos pad unk sep cls mask stop start end special".split())
# A key ending in one of these describes a secret without holding it:
# "token_count", "password_hint", "private_key_id", "secret_name", "token_expires_at".
_NEUTRAL_TAIL = frozenset(
    "count counts in out id ids type types name names len length size limit max min total "
    "used usage url uri path file env var hint policy expires expiry expiration ttl at "
    "strength enabled required provided present valid configured format".split()
)
# Trailing words that are just "the value of": "api_key_value", "token_str".
_VALUE_TAIL = frozenset("value val string str raw header".split())
# Single words that also occur in prose ("Invalid token: expected ')'"); after a colon
# their unquoted value is only taken when it looks like a credential.
_WEAK_SINGLE = frozenset("token secret secrets auth authorization credential credentials pass".split())
_NULLISH = frozenset("null none nil undefined true false".split())


def _norm(key: str) -> str:
    return key.strip().lower().replace("-", "_").replace(" ", "_").replace(".", "_")


# --- text patterns --------------------------------------------------------------------
#
# Every rule starts with one literal "anchor" character, a rare one where possible
# ("-" of "sk-", "_" of "ghp_", ":" of "key: value"), checks what follows it first and
# looks behind it for the rest of its prefix only then. The rules are combined into one
# alternation whose branches all start with a literal, which lets the regex engine skip
# straight to the few candidate positions: that is what keeps clean text cheap.
# ``(?P<S>...)`` marks the secret; ``back`` extends it to the left over the prefix
# before S. A rule with a check is decided in Python.


class _Rule:
    __slots__ = ("anchor", "gate", "rest", "back", "check")

    def __init__(self, anchor: str, rest: str, *, gate: str = "", back: int = 0, check: str | None = None):
        self.anchor, self.gate, self.rest, self.back, self.check = anchor, gate, rest, back, check


# What a token cannot be glued to. "[" and "]" count too: a neighbour replaced by
# "[REDACTED]" must not turn text next to it into a match on a second pass.
_EDGE = r"[A-Za-z0-9_\-\]]"
_GLUED = r"[A-Za-z0-9\[]"
_NOT_DONE = r"(?!\[REDACTED\])"


def _ci(word: str) -> str:
    """Case-insensitive without the IGNORECASE flag (which would slow the branches down)."""
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in word)


def _after(anchor: str, lead: str, width: int, body: str, gate: str) -> _Rule:
    """A token ``lead + anchor + body`` (``lead`` is ``width`` characters), found from its anchor."""
    a = re.escape(anchor)
    return _Rule(anchor, f"(?<={lead}{a})(?<!{_EDGE}{lead}{a})(?P<S>{body})", gate=gate, back=width + 1)


def _starting(anchor: str, head: str, width: int, body: str) -> _Rule:
    """A token starting with its anchor: ``anchor + head`` (``width`` characters) then ``body``."""
    a = re.escape(anchor)
    return _Rule(anchor, f"(?P<S>{head}(?<!{_EDGE}{a}{head}){body})", back=1)


_DASH_GATE = r"(?=[A-Za-z0-9_-]{16})"
_UNDERSCORE_GATE = r"(?=[A-Za-z0-9_+/]{16})"
_TOKEN_RULES = [
    # OpenAI (legacy, project, service account, admin), Anthropic, OpenRouter, DeepSeek
    _after("-", "sk", 2, r"(?:ant|proj|svcacct|admin|or)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{32,}", _DASH_GATE),
    _after("-", "gl(?:pat|ptt)", 5, r"[A-Za-z0-9_-]{20,}", _DASH_GATE),  # GitLab
    _after("-", "gl(?:dt|rt)", 4, r"[A-Za-z0-9_-]{20,}", _DASH_GATE),
    _after("-", "xox[abposre]", 4, r"[A-Za-z0-9-]{10,}", _DASH_GATE),  # Slack
    _after("-", "xapp", 4, r"[0-9]-[A-Za-z0-9-]{10,}", _DASH_GATE),
    _after("-", "xai", 3, r"[A-Za-z0-9]{40,}", _DASH_GATE),  # xAI
    _after("-", "pplx", 4, r"[A-Za-z0-9]{40,}", _DASH_GATE),  # Perplexity
    _after("_", "[sr]k", 2, r"(?:live|test)_[A-Za-z0-9]{16,}", _UNDERSCORE_GATE),  # Stripe secret / restricted
    _after("_", "whsec", 5, r"[A-Za-z0-9+/]{24,}", _UNDERSCORE_GATE),  # Stripe webhook secret
    _after("_", "gh[pousr]", 3, r"[A-Za-z0-9]{30,}", _UNDERSCORE_GATE),  # GitHub
    _after("_", "github", 6, r"pat_[A-Za-z0-9_]{30,}", _UNDERSCORE_GATE),
    _after("_", "hf", 2, r"[A-Za-z0-9]{30,}", _UNDERSCORE_GATE),  # Hugging Face
    _after("_", "gsk", 3, r"[A-Za-z0-9]{20,}", _UNDERSCORE_GATE),  # Groq
    _after("_", "npm", 3, r"[A-Za-z0-9]{30,}", _UNDERSCORE_GATE),  # npm
    _after("_", "r8", 2, r"[A-Za-z0-9]{30,}", _UNDERSCORE_GATE),  # Replicate
    _after("_", "dop", 3, r"v1_[a-f0-9]{64}", _UNDERSCORE_GATE),  # DigitalOcean
    _after(".", "ya29", 4, r"[A-Za-z0-9_-]{20,}", r"(?=[A-Za-z0-9_-]{20})"),  # Google OAuth access token
    _starting("A", "Iza", 3, r"[A-Za-z0-9_-]{35}"),  # Google API key
    _starting("A", "[KS]IA", 3, r"[A-Z0-9]{16}(?!" + _GLUED + ")"),  # AWS access key id
    _starting("A", "C[0-9a-f]", 2, r"[0-9a-f]{31}(?!" + _GLUED + ")"),  # Twilio account SID
    _starting("S", "K[0-9a-f]", 2, r"[0-9a-f]{31}(?!" + _GLUED + ")"),  # Twilio API key
    _starting("S", r"G\.", 2, r"[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),  # SendGrid
    _starting("G", "OCSPX-", 6, r"[A-Za-z0-9_-]{20,}"),  # Google OAuth client secret
    # JWT: header.payload.signature, both JSON parts base64url of '{"'
    _after("J", "ey", 2, r"[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*", ""),
]

# How sensitive keys end, for the key=value rule: a cheap per-letter gate first, then the
# exact three-letter endings. The whole key is then read back and classified like a dict
# key (so "max_tokens" and "keyword" are let go there).
_KEY_TAILS = ("key", "pwd", "swd", "sig", "jwt", "ord", "ret", "ken", "kie", "uth", "ass", "ion", "als", "ets")
_SCHEME = r"(?:[Bb]earer|[Bb]asic|[Tt]oken|[Bb]ot)[ \t]+"


def _behind_key(sep: str, tail3: str, tail2: str) -> str:
    """A look-behind, five characters wide, for ``tail<sep>`` with the key's usual decorations:
    ``key:``, ``key":``, ``key\\":``, ``key :``, ``key" :``."""
    return f"(?<=(?s:.){tail3}{sep}|{tail3}[\"']{sep}|{tail2}\\\\[\"']{sep}|{tail3}[ \\t]{sep}|{tail2}[\"'][ \\t]{sep})"


def _kv_rule(sep: str) -> _Rule:
    """``key<sep>value``, ``"key": "value"``, ``key='value'`` text whose key ends like a sensitive one."""
    s = re.escape(sep)
    classes = ["[" + "".join(sorted({t[i] for t in _KEY_TAILS} | {t[i].upper() for t in _KEY_TAILS})) + "]" for i in range(3)]
    variants = sorted({v for t in _KEY_TAILS for v in (t, t.upper(), t.title())})
    exact3 = "(?:" + "|".join(variants) + ")"
    exact2 = "(?:" + "|".join(sorted({v[1:] for v in variants})) + ")"
    gate = _behind_key(s, "".join(classes), "".join(classes[1:]))
    value = (
        (r"=?+" if sep == ":" else r"[=>]?+")  # possessive: "==[REDACTED]" must not read as "=" + "=..."
        + r"[ \t]*(?:(?P<QD>\\?\")|(?P<QS>\\?'))?(?P<SCH>"
        + _SCHEME
        + r")?"
        + _NOT_DONE
        + r"(?!"
        + _SCHEME
        + r")(?P<S>(?(QD)[^\"\\\r\n]+|(?(QS)[^'\\\r\n]+|[^\s\"'\\,;&<>(){}\[\]]+)))"
    )
    return _Rule(sep, _behind_key(s, exact3, exact2) + value, gate=gate, check="kv")


def _scheme_rule(anchor: str, word: str, body: str, check: str) -> _Rule:
    """``Bearer <token>`` / ``Basic <base64>`` anywhere in text."""
    head = _ci(word[1:])
    return _Rule(anchor, f"{head}(?<!{_EDGE}{_ci(word)})[ \\t]+{_NOT_DONE}(?P<S>{body})", check=check)


_PEM_BODY = (
    r"----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?s:.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,-]*)"
)
# A key=value match whose value opens a PEM block ('api_key="-----BEGIN ...'): the block runs on
# past the line (or the escaped "\n") where the value rule stops, so the whole block goes.
_PEM_AT = re.compile("-" + _PEM_BODY).match

_RULES: list[_Rule] = [
    # PEM private keys: the whole block, or to the end of a truncated one
    _Rule("-", f"(?P<S>{_PEM_BODY})", back=1),
    # scheme://user:password@host -> keep user and host (the check looks for the "://")
    _Rule(":", r"(?P<S>[^\s/?#@\"'<>\[][^\s/?#@\"'<>]*+)(?=@)", check="url"),
    _kv_rule(":"),
    _kv_rule("="),
    _Rule(".", r"slack\.com/(?:services|workflows|triggers)/(?P<S>[A-Za-z0-9/_-]{20,})"),  # Slack webhooks
    *(
        _scheme_rule(c, word, body, word)
        for word, body in (
            ("bearer", r"[A-Za-z0-9\-._~+/]{12,}=*"),
            ("basic", r"[A-Za-z0-9+/]{6,}={0,2}(?![A-Za-z0-9+/=\[])"),
        )
        for c in "Bb"
    ),
    *_TOKEN_RULES,
]
_EMAIL_RULE = _Rule(
    "@",
    r"(?P<S>[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}\.)+[A-Za-z]{2,24})(?![A-Za-z0-9\[-])",
    gate=r"(?<=[A-Za-z0-9._%+-]@)",
    back=1,
    check="email",
)
_DIGIT_RULES = [
    _Rule(
        c,
        r"(?P<S>[0-9 \t).-]{4,28}[0-9])(?![A-Za-z0-9_\[]|[.-]?[0-9])",
        gate=f"(?<![A-Za-z0-9_+.\\]-]{re.escape(c)})",
        back=1,
        check="digits",
    )
    for c in "0123456789+("
]


class _Scanner:
    """Rules combined into one regex, grouped by anchor. When a rule's check turns a match
    down, the rules after it with the same anchor get their chance at the same position."""

    def __init__(self, rules: list[_Rule]):
        self.rules = rules
        by_anchor: dict[str, list[tuple[str, list[str]]]] = {}
        for i, rule in enumerate(rules):
            rest = re.sub(r"\(\?P<(\w+)>", rf"(?P<r{i}_\1>", rule.rest)
            rest = re.sub(r"\(\?\((\w+)\)", rf"(?(r{i}_\1)", rest)
            branches = by_anchor.setdefault(rule.anchor, [])
            if branches and branches[-1][0] == rule.gate:  # consecutive rules share their gate
                branches[-1][1].append(rest)
            else:
                branches.append((rule.gate, [rest]))
        parts = []
        for anchor, branches in by_anchor.items():
            inner = "|".join(gate + (rests[0] if len(rests) == 1 else "(?:" + "|".join(rests) + ")") for gate, rests in branches)
            parts.append(re.escape(anchor) + (inner if len(branches) == 1 else f"(?:{inner})"))
        self.pattern = re.compile("|".join(parts))
        self.search = self.pattern.search
        # every group of a rule points at it: m.lastindex is one of the matching rule's groups
        self.specs: dict[int, tuple[int, dict[str, int]]] = {}
        for i in range(len(rules)):
            prefix = f"r{i}_"
            groups = {g[len(prefix) :]: idx for g, idx in self.pattern.groupindex.items() if g.startswith(prefix)}
            for idx in groups.values():
                self.specs[idx] = (i, groups)
        self._fallbacks: dict[int, _Scanner | None] = {}

    def fallback(self, i: int) -> _Scanner | None:
        try:
            return self._fallbacks[i]
        except KeyError:
            later = [r for r in self.rules[i + 1 :] if r.anchor == self.rules[i].anchor]
            scanner = self._fallbacks[i] = _Scanner(later) if later else None
            return scanner


_NANP = re.compile(r"\(?[0-9]{3}\)?[ .-]?[0-9]{3}[ .-]?[0-9]{4}")
_NON_DIGIT = re.compile(r"[^0-9]")
_NOT_CARD_CHAR = re.compile(r"[^0-9 -]")
_DIGIT_GROUP_END = re.compile(r"[0-9](?![0-9])")
_DIGIT = re.compile(r"[0-9]")
_SCHEME_VALUE = re.compile(r"(?i)(bearer|basic|token|bot|digest)[ \t]+\S")
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_EMAIL_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+-")
_URL_USER_STOP = frozenset(" \t\r\n\f\v:/?#@\"'<>[]")
_LINE_END = re.compile(r"[\r\n\\\"]")
_COOKIE_KEYS = frozenset({"cookie", "set_cookie"})


def _key_before(text: str, end: int) -> str:
    """The key written just before a separator at ``end``: ``"api_key": `` -> api_key."""
    i = end
    while i > 0 and text[i - 1] in " \t":
        i -= 1
    if i > 0 and text[i - 1] in "\"'":
        i -= 1
        if i > 0 and text[i - 1] == "\\":
            i -= 1
    j = i
    while j > 0 and text[j - 1] in _KEY_CHARS:
        j -= 1
    return text[j:i]


def _looks_secret(value: str) -> bool:
    """A credential-like string: long enough, with a digit or many capitals (random text)."""
    if len(value) < 8:
        return False
    if _DIGIT.search(value):
        return True
    upper = sum(1 for c in value if c.isupper())
    return 4 <= upper < len(value)


# Card networks by leading digits (IIN) and the lengths they issue.
_CARD_RANGES = (
    ((4,), (13, 16)),  # Visa (its rare 19-digit numbers look like 64-bit ids)
    (range(51, 56), (16,)),  # Mastercard
    (range(2221, 2721), (16,)),
    ((34, 37), (15,)),  # American Express
    ((6011, 65, *range(644, 650)), range(16, 20)),  # Discover
    ((62,), range(16, 20)),  # UnionPay
    ((36, 38, *range(300, 306)), range(14, 17)),  # Diners Club
    (range(3528, 3590), range(16, 20)),  # JCB
)


def _is_card(digits: str) -> bool:
    n = len(digits)
    if not 13 <= n <= 19 or not _luhn(digits):
        return False
    for prefixes, lengths in _CARD_RANGES:
        if n in lengths and any(digits.startswith(str(p)) for p in prefixes):
            return True
    return False


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


class Redactor:
    """Scrubs secrets out of JSON-like values and events. Thread-safe; build once, reuse."""

    def __init__(self, *, emails: bool = False, phones: bool = False, cards: bool = False, extra_keys: Iterable[str] = ()):
        self.emails, self.phones, self.cards = emails, phones, cards
        self.extra_keys = frozenset(_norm(k) for k in extra_keys if k and k.strip())
        rules = list(_RULES)
        if emails:
            rules.append(_EMAIL_RULE)
        if phones or cards:
            rules.extend(_DIGIT_RULES)
        self._scanner = _Scanner(rules)
        self._search = self._scanner.search
        self._min_len = _MIN_LEN_EMAILS if emails else _MIN_LEN
        self._keys: dict[Any, bool] = {}

    # -- public API -----------------------------------------------------------------

    def scrub(self, value: Any) -> tuple[Any, int]:
        """A scrubbed copy of a JSON-like value and how many secrets were replaced.

        Containers are copied only where something changed; with nothing to redact the
        very same object comes back.
        """
        acc = [0]
        return self._walk(value, acc), acc[0]

    @overload
    def event(self, event: SessionEvent) -> SessionEvent: ...
    @overload
    def event(self, event: StepEvent) -> StepEvent: ...
    @overload
    def event(self, event: SessionEndEvent) -> SessionEndEvent: ...
    def event(self, event: SessionEvent | StepEvent | SessionEndEvent) -> SessionEvent | StepEvent | SessionEndEvent:
        """The event with every stored field scrubbed: free text and JSON (StepEvent: content,
        tool_args, metadata, context; SessionEvent: name, outcome, metadata, replay_config,
        tags; SessionEndEvent: outcome, metadata) and identifiers (_ID_FIELDS). A StepEvent's ``redacted`` grows by the
        number of values replaced. The very same object comes back when nothing changed."""
        fields = _EVENT_FIELDS.get(type(event))
        if fields is None:
            fields = next((f for cls, f in _EVENT_FIELDS.items() if isinstance(event, cls)), ())
        update, count = self._scrubbed(event.__dict__, fields, _ID_FIELDS.get(type(event), ()))  # pydantic's values
        if update is None:
            return event
        if isinstance(event, StepEvent):
            update["redacted"] = event.redacted + count
        return event.model_copy(update=update)

    def step_values(self, values: dict[str, Any]) -> dict[str, Any]:
        """`event` of a step given as its values (every StepEvent field, as `StepEvent.__dict__` holds
        them): the values scrubbed, `redacted` grown; the very same dict when nothing changed."""
        update, count = self._scrubbed(values, _EVENT_FIELDS[StepEvent], _ID_FIELDS[StepEvent])
        if update is None:
            return values
        return {**values, **update, "redacted": values["redacted"] + count}

    def _scrubbed(self, values: dict[str, Any], fields: tuple[str, ...], ids: tuple[str, ...]) -> tuple[dict | None, int]:
        """The scrubbed values of `fields` and `ids` that changed (None: none did) and how many secrets went."""
        acc = [0]
        update = None
        for name in fields:
            value = values.get(name)
            if value is None:
                continue
            new = self._walk(value, acc)
            if new is not value:
                if update is None:
                    update = {}
                update[name] = new
        search, min_len = self._search, self._min_len
        for name in ids:
            value = values.get(name)
            if type(value) is not str or len(value) < min_len:
                continue
            m = search(value)
            if m is None:
                continue
            new = self._replace(value, m, acc)
            if new is not value:
                if update is None:
                    update = {}
                update[name] = _keep_apart(new, value) if name in _LINK_FIELDS else new[:_ID_MAX]
        return update, acc[0]

    def is_sensitive_key(self, key: Any) -> bool:
        """Whether a dict key names a secret ("api_key", "Authorization"), not a count ("max_tokens")."""
        try:
            return self._keys[key]
        except KeyError:
            pass
        except TypeError:  # unhashable: cannot be a dict key anyway
            return False
        result = self._classify(str(key))
        if len(self._keys) < _KEY_CACHE_MAX:
            self._keys[key] = result
        return result

    # -- walking --------------------------------------------------------------------

    def _walk(self, value: Any, acc: list[int]) -> Any:
        kind = type(value)
        if kind is str:
            return value if len(value) < self._min_len else self._text(value, acc)
        if kind is dict:
            return self._dict(value, acc)
        if kind is list:
            return self._list(value, acc)
        if isinstance(value, str):
            return value if len(value) < self._min_len else self._text(value, acc)
        if isinstance(value, dict):
            return self._dict(value, acc)
        if isinstance(value, (list, tuple)):
            new = self._list(value, acc)
            return value if new is value else type(value)(new) if isinstance(value, tuple) else new
        return value

    def _dict(self, value: dict, acc: list[int]) -> dict:
        out = None
        keys = self._keys
        search = self._search
        min_len = self._min_len
        for key, item in value.items():
            kind = type(item)
            if kind is int or kind is float or kind is bool or item is None:
                continue  # never secret, even under "token" (and "max_tokens": 100 is a count)
            sensitive = keys.get(key)
            if sensitive is None:
                sensitive = self.is_sensitive_key(key)
            if sensitive:
                new = self._mask(item, acc)
            elif kind is str:
                if len(item) < min_len:
                    continue
                m = search(item)
                if m is None:
                    continue
                new = self._replace(item, m, acc)
            elif kind is dict:
                new = self._dict(item, acc)
            elif kind is list:
                new = self._list(item, acc)
            else:
                new = self._walk(item, acc)
            if new is not item:
                if out is None:
                    out = dict(value)
                out[key] = new
        return value if out is None else out

    def _list(self, value: list | tuple, acc: list[int]) -> list | tuple:
        out: list | None = None
        search = self._search
        min_len = self._min_len
        for i, item in enumerate(value):
            new: object
            kind = type(item)
            if kind is str:
                if len(item) < min_len:
                    continue
                m = search(item)
                if m is None:
                    continue
                new = self._replace(item, m, acc)
            elif kind is dict:
                new = self._dict(item, acc)
            elif kind is list:
                new = self._list(item, acc)
            elif kind is int or kind is float or kind is bool or item is None:
                continue
            else:
                new = self._walk(item, acc)
            if new is not item:
                if out is None:
                    out = list(value)
                out[i] = new
        return value if out is None else out

    def _mask(self, value: Any, acc: list[int]) -> Any:
        """Everything string-like under a sensitive key; numbers and structure stay."""
        if isinstance(value, str):
            if not value or value == REDACTED:
                return value
            m = _SCHEME_VALUE.match(value)
            if m is not None:  # "Bearer abc" -> "Bearer [REDACTED]"
                if value[m.end(1) :].strip() == REDACTED:
                    return value
                acc[0] += 1
                return value[: m.end(1)] + " " + REDACTED
            acc[0] += 1
            return REDACTED
        if isinstance(value, dict):
            out = None
            for key, item in value.items():
                new = self._mask(item, acc)
                if new is not item:
                    if out is None:
                        out = dict(value)
                    out[key] = new
            return value if out is None else out
        if isinstance(value, (list, tuple)):
            masked: list | None = None
            for i, item in enumerate(value):
                new = self._mask(item, acc)
                if new is not item:
                    if masked is None:
                        masked = list(value)
                    masked[i] = new
            if masked is None:
                return value
            return type(value)(masked) if isinstance(value, tuple) else masked
        return value

    def _text(self, text: str, acc: list[int]) -> str:
        m = self._search(text)
        return text if m is None else self._replace(text, m, acc)

    def _replace(self, text: str, first: re.Match[str], acc: list[int]) -> str:
        """``text`` with every secret from the first candidate on replaced."""
        m: re.Match[str] | None = first
        search = self._search
        parts = []
        pos = 0
        count = 0
        while m is not None:
            span = self._decide(self._scanner, text, m, pos)
            if span is None:  # not a secret after all: look again from the next character
                m = search(text, m.start() + 1)
                continue
            start, end = span
            if start < pos:  # reaches back into a replaced secret: a second pass would not see it
                m = search(text, m.start() + 1)
                continue
            parts.append(text[pos:start])
            parts.append(REDACTED)
            pos = end
            count += 1
            m = search(text, max(end, m.start() + 1))
        if not count:
            return text
        parts.append(text[pos:])
        acc[0] += count
        return "".join(parts)

    # -- decisions ------------------------------------------------------------------

    def _decide(self, scanner: _Scanner, text: str, m: re.Match[str], floor: int) -> tuple[int, int] | None:
        """The span to replace for a match; if its rule turns the match down, the other
        rules get their chance at the same spot. ``floor``: where the text not yet
        replaced starts."""
        while True:
            assert m.lastindex is not None  # every alternative of the pattern is a rule's group
            i, groups = scanner.specs[m.lastindex]
            rule = scanner.rules[i]
            s = groups["S"]
            found = (m.start(s) - rule.back, m.end(s))
            span = found if rule.check is None else self._accept(rule.check, text, m, groups, found, floor)
            if span is not None:
                return span
            fallback = scanner.fallback(i)
            if fallback is None:
                return None
            scanner = fallback
            again = scanner.pattern.match(text, m.start())
            if again is None:
                return None
            m = again

    def _accept(
        self, check: str, text: str, m: re.Match[str], groups: dict[str, int], span: tuple[int, int], floor: int
    ) -> tuple[int, int] | None:
        """The span to replace when the match is a secret, None when it is not."""
        start, end = span
        secret = text[start:end]
        if check == "kv":
            key = _key_before(text, m.start())
            if not self.is_sensitive_key(key) or secret.lower() in _NULLISH:
                return None
            quoted = m.group(groups["QD"]) is not None or m.group(groups["QS"]) is not None
            if not quoted and text[m.start()] == ":" and _norm(key) in _COOKIE_KEYS:
                line_end = _LINE_END.search(text, end)  # a Cookie header: the whole rest of the line
                return start, line_end.start() if line_end else len(text)
            if secret.startswith("-----BEGIN"):
                pem = _PEM_AT(text, start)
                if pem is not None:
                    return start, max(end, pem.end())
            if quoted or m.group(groups["SCH"]) or "=" in m.group(0)[:2] or _norm(key) not in _WEAK_SINGLE:
                return span
            return span if _looks_secret(secret) else None
        if check == "url":
            i = m.start()
            while i > 0 and text[i - 1] not in _URL_USER_STOP:
                i -= 1
            return span if text.endswith("://", 0, i) else None
        if check == "bearer":
            return span if _looks_secret(secret) else None
        if check == "basic":
            try:
                raw = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True)
            except (binascii.Error, ValueError):
                return None
            return span if b":" in raw and len(raw) >= 3 and all(32 <= b < 127 for b in raw) else None
        if check == "email":
            at = start
            while start > floor and text[start - 1] in _EMAIL_CHARS:  # the local part, before the "@"
                start -= 1
            return (start, end) if start < at else None
        if check == "digits":
            # the longest card or phone number the run of digits starts with: a run can be
            # two numbers side by side ("4111 1111 1111 1111 5555 ...")
            for stop in reversed([g.end() for g in _DIGIT_GROUP_END.finditer(secret)]):
                if self._is_number(secret[:stop]):
                    return start, start + stop
            return None
        raise AssertionError(check)

    def _is_number(self, number: str) -> bool:
        digits = _NON_DIGIT.sub("", number)
        if self.cards and _is_card(digits) and not _NOT_CARD_CHAR.search(number):
            return True
        if self.phones:
            if number.startswith("+"):
                return 8 <= len(digits) <= 15
            # a bare run of digits is an id or a timestamp ("created": 1719875141), not a phone
            grouped = len(digits) < len(number)
            return grouped and (_NANP.fullmatch(number) is not None or (number[0] == "0" and 10 <= len(digits) <= 11))
        return False

    def _classify(self, key: str) -> bool:
        norm = _norm(key)
        if not norm:
            return False
        if self.extra_keys and norm in self.extra_keys:
            return True
        words = [w.lower() for w in _KEY_WORD(key)]
        if self.extra_keys and any(w in self.extra_keys for w in words):
            return True
        while len(words) > 1 and words[-1] in _VALUE_TAIL:
            words.pop()
        if not words or words[-1] in _NEUTRAL_TAIL:
            return False
        if any(w in _STRONG_WORDS for w in words):
            return True
        last = words[-1]
        if last in _LAST_WORDS:
            return not (last == "token" and len(words) > 1 and words[-2] in _NOT_CREDENTIAL_TOKEN)
        return last in ("key", "keys") and len(words) > 1 and words[-2] in _KEY_PREFIXES


_EVENT_FIELDS: dict[type, tuple[str, ...]] = {
    StepEvent: ("content", "tool_args", "metadata", "context"),
    SessionEvent: ("name", "outcome", "metadata", "replay_config", "tags"),
    SessionEndEvent: ("outcome", "metadata"),
}
# Identifiers are stored and shown too: an API key sent as `environment`, an agent named after
# a token, a tool_call_id carrying one. (The session id is the run's address and is left alone.)
_ID_FIELDS: dict[type, tuple[str, ...]] = {
    StepEvent: ("event_id", "parent_id", "agent_id", "model", "tool_name", "tool_call_id", "error_class"),
    SessionEvent: ("agent_id", "model", "workflow", "environment", "agent_version", "source", "error_class")
    + ("user_id", "thread_id"),
    SessionEndEvent: ("error_class",),
}
# Ids that link or tell steps (or users, or threads) apart: a redacted one keeps a short hash of what
# it was, so two different ids stay different, a parent_id still names its parent's event_id and two
# users whose ids are e-mail addresses are still two rows of cost by user.
_LINK_FIELDS = frozenset({"event_id", "parent_id", "tool_call_id", "user_id", "thread_id"})
_ID_MAX = 200  # the identifier columns' width


def _keep_apart(redacted: str, original: str) -> str:
    tag = "#" + hashlib.sha256(original.encode()).hexdigest()[:12]
    return redacted[: _ID_MAX - len(tag)] + tag


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def default_redactor() -> Redactor:
    """The redactor the environment asks for: AGENT_REPLAY_REDACT_EMAILS / _PHONES / _CARDS
    ("1" or "true") and AGENT_REPLAY_REDACT_KEYS (comma-separated extra sensitive keys)."""
    keys = tuple(k.strip() for k in os.environ.get("AGENT_REPLAY_REDACT_KEYS", "").split(",") if k.strip())
    return _redactor(
        _flag("AGENT_REPLAY_REDACT_EMAILS"), _flag("AGENT_REPLAY_REDACT_PHONES"), _flag("AGENT_REPLAY_REDACT_CARDS"), keys
    )


@functools.lru_cache(maxsize=16)
def _redactor(emails: bool, phones: bool, cards: bool, keys: tuple[str, ...]) -> Redactor:
    return Redactor(emails=emails, phones=phones, cards=cards, extra_keys=keys)
