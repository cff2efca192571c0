"""Redaction of secrets in anything that is traced, stored as a trace event or shown.

Masks API keys (OpenAI/Anthropic style ``sk-...``, AWS ``AKIA...`` key ids and secret access keys, Google
``AIza...``, GitHub ``ghp_...``), bearer tokens, HTTP Basic credentials, ``password=...``/``api_key: ...``
style assignments, PEM private keys, JWTs, the values under sensitive mapping keys (``{"token": ...}``,
``SENSITIVE_KEYS``) also in JSON written inside a text (``core.text.embedded_json``), the password of a URL
(``scheme://user:password@host``), and the literal secret values it is given. Those come from
``core.settings.config.secret_values`` (the values of secret environment variables, by name or listed in
``secret_env_vars``, and the providers' API keys): the config module is the one that reads the environment.
Name-driven as well as pattern-driven, so an unknown vendor's key stored in a secret env var is still caught.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from core.model.calls import ChatMessage
from core.model.views import NOT_TEXT
from core.model.window_map import WindowMap
from core.text.embedded_json import mask_keyed_values

if TYPE_CHECKING:
    import regex

MASK = "[REDACTED]"
_MEMO_SIZE = 4096  # distinct texts (and message objects) remembered per redactor
# Characters of the long texts remembered, at most (the short ones are at most _MEMO_SIZE * _SHORT): a text
# is held as long as it is remembered, and the runs ``flujo lens list --search`` reads may be 40 MB each. A
# longer text is masked again if it comes back.
_MEMO_CHARS = 1 << 24
_SHORT = 4096
# A user's pattern (``redact_patterns``) may backtrack without end on some text (``(a|aa)+$`` on ``aaa…b``), and
# Python's own engine cannot be stopped, not even by Ctrl-C. Those patterns run on the ``regex`` engine
# (tiktoken's dependency, so always installed), which gives up after this many seconds per search or
# substitution; a plain pattern goes through megabytes in milliseconds. The text is then masked whole.
USER_PATTERN_SECONDS = 1.0
SLOW_MASK = "[REDACTED: a redact pattern ran too long on this text]"


class ChatMessageLike(Protocol):
    """A chat message: ``core.model.calls.ChatMessage``, or anything with its role and content."""

    @property
    def role(self) -> str: ...

    @property
    def content(self) -> str: ...


_BUILTIN_PATTERNS: tuple[str, ...] = (
    # A key cut off before its END line (a reply truncated by max_tokens) is masked to the end of the text.
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
    r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}",  # JWT
    r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bAIza[0-9A-Za-z_-]{30,}",
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
)
# key=value / key: value / "key": "value" forms: keep the key, mask the value; a quoted value is masked whole
# (spaces and all), and any length counts: the key says it is a secret.
_ASSIGNMENT = r"""(?ix)
    (\b(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?token|auth[_-]?token|token|client[_-]?secret
        |(?:aws[_-]?)?secret[_-]?access[_-]?key|secret[_-]?key)
     ["']?[ \t]*[:=][ \t]*)
    (?:"([^"\n]+)"|'([^'\n]+)'|([^\s"',;]+))
    """
# "password hunter2", "password is hunter2": a password named in prose is masked too (a false positive is
# the safe side).
_PROSE_PASSWORD = r"""(?i)(\b(?:password|passwd|passphrase)\s+(?:is\s+)?)(?!is\b)([^\s"',;]{3,})"""
# "the api key is 3f9a...": for these words only a value that looks like a credential (8+ characters with a
# digit), so that "each token is counted" and "the secret is out" stay readable.
_PROSE_CREDENTIAL = r"""(?i)(\b(?:secret|token|api[ _-]?key)\s+is\s+)((?=[^\s"',;]*\d)[^\s"',;]{8,})"""
# The password of a URL's user part (postgresql://admin:PW@db/x, https://user:pass@host/): the scheme, the
# user and the host stay. A user or a password holding an "@" unencoded (an e-mail address as the user)
# runs to the last "@" before the host. The scheme is bounded: unbounded, a long "a-a-a-..." would be
# scanned again from each of its words.
_URL_PASSWORD = r"""(?i)(\b[a-z][a-z0-9+.-]{0,31}://[^\s/?#:"'<>\\]*:)[^\s/?#"'<>\\]+@"""
_BEARER = r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/=-]{8,})"
# HTTP Basic credentials: base64 of "user:password" after the word Basic. Only a word that decodes to a text
# holding a colon is masked, so "basic principles" stays as it is.
_BASIC = r"(?i)(\bbasic\s+)([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"
# AWS secret access keys have no prefix: 40 characters of base64's alphabet. They are masked only in a text
# that speaks of AWS (or holds an AKIA key id), and only when mixed like a key (upper and lower case letters
# and a digit), so that a git commit id (40 hexadecimal digits, one case) stays readable.
_AWS_CONTEXT = r"(?i:\baws)|AKIA[0-9A-Z]{16}"
_AWS_SECRET = r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=])"


class _Patterns(NamedTuple):
    """The patterns above, compiled."""

    builtin: tuple[re.Pattern[str], ...]
    assignment: re.Pattern[str]
    prose_password: re.Pattern[str]
    prose_credential: re.Pattern[str]
    url_password: re.Pattern[str]
    bearer: re.Pattern[str]
    basic: re.Pattern[str]
    aws_context: re.Pattern[str]
    aws_secret: re.Pattern[str]


@functools.cache
def _patterns() -> _Patterns:
    """The patterns, compiled at the first text that gets past ``_may_match``: compiling them is about 17 M
    instructions, 1.7 % of a one-step run's start-up, and the texts of most runs never get that far."""
    rest = (_ASSIGNMENT, _PROSE_PASSWORD, _PROSE_CREDENTIAL, _URL_PASSWORD, _BEARER, _BASIC, _AWS_CONTEXT, _AWS_SECRET)
    return _Patterns(tuple(map(re.compile, _BUILTIN_PATTERNS)), *map(re.compile, rest))


# Mapping keys whose value is a secret whatever it looks like ({"token": "...", "password": "..."}), after
# ``normalized_key`` (lower case, words joined by "_": "Access-Token", "accessToken" → "access_token"). An
# exact list, never a substring test: "max_tokens", "prompt_tokens" and "secret_santa" are not secrets.
SENSITIVE_KEYS = frozenset(
    {
        "token", "access_token", "refresh_token", "id_token", "auth_token", "bearer_token", "session_token",
        "api_token", "aws_session_token", "security_token", "password", "passwd", "pwd", "passphrase",
        "secret", "client_secret", "secret_key", "aws_secret_access_key", "secret_access_key", "api_key",
        "apikey", "x_api_key", "authorization", "proxy_authorization", "private_key", "credentials",
        "cookie", "set_cookie",
    }
)  # fmt: skip

# What any built-in pattern needs to match: one of the literal starts of the case-sensitive patterns, or
# (in lower case) a word of the case-insensitive ones. Checked first, it spares most texts the eleven
# substitutions (about 16 µs a text; reading a long run masks tens of thousands of distinct texts). Only
# for ASCII texts: with IGNORECASE, a few other letters match too (the Kelvin sign matches k, ſ matches s).
_LITERAL_STARTS = re.compile(r"-----BEGIN|eyJ|sk-|AKIA|AIza|gh[pousr]_|xox")
_WORDS = ("bearer", "pass", "pwd", "secret", "token", "api", "basic", "aws")  # password|passwd|passphrase: "pass"
# The keys of SENSITIVE_KEYS that no word above is part of: looked for only in a text with a quote (a key of
# JSON or of a printed Python mapping is quoted), which spares most texts the four more searches.
_KEY_WORDS = ("authoriz", "cookie", "credential", "private")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[^a-z0-9]+")


def normalized_key(key: str) -> str:
    """``key`` as it is compared with ``SENSITIVE_KEYS``: words split at case changes and separators, lower
    case, joined by "_" ("X-Api-Key" → "x_api_key", "clientSecret" → "client_secret")."""
    return _SEPARATORS.sub("_", _CAMEL.sub("_", key).lower()).strip("_")


def sensitive_key(key: object) -> bool:
    """Whether the value under mapping key ``key`` is a secret by the key's meaning (``SENSITIVE_KEYS``)."""
    return isinstance(key, str) and _sensitive_name(key)


@functools.lru_cache(maxsize=4096)  # a run repeats the same few keys in thousands of mappings
def _sensitive_name(key: str) -> bool:
    return normalized_key(key) in SENSITIVE_KEYS


def masked_under_key(value: Any) -> Any:
    """What shows of ``value`` kept under a sensitive key: nothing of it (``MASK``), except for nothing to
    hide (None, a boolean, an empty text)."""
    if value is None or isinstance(value, bool) or value == "":
        return value
    return MASK


def _user_patterns(patterns: Iterable[str]) -> list[regex.Pattern[str]]:
    """``patterns`` compiled by the ``regex`` engine (imported only when there are some), which can stop a
    search that runs too long; its default mode reads a pattern as Python's ``re`` does."""
    texts = list(patterns)
    if not texts:
        return []
    import regex

    return [regex.compile(text) for text in texts]


def _may_match(value: str) -> bool:
    if not value.isascii() or _LITERAL_STARTS.search(value) is not None:
        return True
    lowered = value.lower()
    if any(map(lowered.__contains__, _WORDS)):  # each word looked for in C
        return True
    if "@" in value and "://" in value:  # a URL that may carry a password
        return True
    return ('"' in value or "'" in value) and any(map(lowered.__contains__, _KEY_WORDS))


class Redactor:
    """Masks secrets in strings and (recursively) in JSON-like values: the built-in patterns, then
    ``extra_patterns`` (regular expressions), and every one of ``secret_values`` (6 characters or more)
    wherever it appears."""

    def __init__(
        self,
        *,
        extra_patterns: Iterable[str] = (),
        secret_values: Iterable[str] = (),
        on_slow: Callable[[str], None] | None = None,
    ) -> None:
        self._extra = _user_patterns(extra_patterns)
        # A pattern of ``extra_patterns`` that ran out of time on a text (``SLOW_MASK``), said once each.
        self._on_slow = on_slow
        self.slow_patterns: list[str] = []
        # Longest first so a value containing another is masked whole.
        self._values = sorted({v for v in secret_values if len(v) >= 6}, key=len, reverse=True)
        # Conversation turns are traced again on every call that injects them: remember recent results
        # (redaction is a pure function of the text), so tracing costs the new text, not the whole history.
        self._memo: dict[str, str] = {}
        self._long_chars = 0  # of the texts over ``_SHORT`` characters in ``_memo``
        self._ordinary_keys: set[Any] = set()  # mapping keys seen not to be sensitive (``sensitive_key``)
        # Message objects masked (``messages``): their masked dicts by id, and the objects themselves by id,
        # held so that while a message is remembered no other object can have its id.
        self._messages: dict[int, dict[str, Any]] = {}
        self._held: dict[int, ChatMessageLike] = {}
        self._windows: WindowMap[ChatMessageLike, dict[str, Any]] = WindowMap()

    def text(self, value: str) -> str:
        done = self._memo.get(value)
        if done is not None:
            return done
        memo = self._memo
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
            self._long_chars = 0
        if len(value) > _SHORT:  # only long texts are counted: a short one costs a comparison more
            if len(value) > _MEMO_CHARS:
                return self._mask(value)
            if self._long_chars + len(value) > _MEMO_CHARS:
                memo.clear()
                self._long_chars = 0
            self._long_chars += len(value)
        done = memo[value] = self._mask(value)
        return done

    def _mask(self, value: str) -> str:
        for secret in self._values:
            if secret in value:
                value = value.replace(secret, MASK)
        may_match = _may_match(value)
        if not may_match and not self._extra:
            return value  # no pattern can match: every substitution below would leave it as it is
        patterns = _patterns()
        aws = patterns.aws_context.search(value) is not None  # before the key id is masked
        if may_match:
            for pattern in patterns.builtin:
                value = pattern.sub(MASK, value)
        for extra in self._extra:
            try:
                value = extra.sub(MASK, value, timeout=USER_PATTERN_SECONDS)
            except TimeoutError:
                return self._too_slow(extra.pattern)
        if not may_match and not _may_match(value):
            return value
        if aws:
            value = patterns.aws_secret.sub(_mask_aws_secret, value)
        value = patterns.basic.sub(_mask_basic, value)
        value = patterns.bearer.sub(lambda m: m.group(1) + MASK, value)
        value = patterns.prose_password.sub(lambda m: m.group(1) + MASK, value)
        value = patterns.prose_credential.sub(lambda m: m.group(1) + MASK, value)
        if "://" in value:
            value = patterns.url_password.sub(lambda m: m.group(1) + MASK + "@", value)
        if '"' in value or "'" in value:  # JSON, or a Python mapping printed: its keys are quoted
            value = mask_keyed_values(value, sensitive=_sensitive_name, mask=MASK)
        return patterns.assignment.sub(_mask_assignment, value)

    def _too_slow(self, pattern: str) -> str:
        """``SLOW_MASK``, for a text ``pattern`` ran out of time on; the first time, ``on_slow`` is told."""
        if pattern not in self.slow_patterns:
            self.slow_patterns.append(pattern)
            if self._on_slow is not None:
                self._on_slow(pattern)
        return SLOW_MASK

    def messages(self, sent: Sequence[ChatMessageLike]) -> list[dict[str, Any]]:
        """``sent`` as ``{"role": ..., "content": ...}`` dicts, masked as ``value`` masks them, in a new list. A
        message of a tool loop (a ``ChatMessage`` with ``tool_calls``, or a tool's result) keeps those parts
        too: ``tool_calls`` (the JSON text of a list of ``{"id", "name", "arguments"}``) and ``tool_call_id`` (as
        sent: a tool's name is not, in every wire format).

        A conversation's prompts send the same message objects from one prompt to the next
        (``ConversationTurn.message``), the window of them sliding on: what this redactor gave for the
        messages the previous prompt sent too is copied from it (``WindowMap``), so a prompt costs its new
        messages (its newest turns and its current message), not the length of its history. A message object
        masked before is not masked again (``_message``), and its masked dict is the same one in every event
        that sends it (an event's payload is never changed once made: ``TraceEvent``), which the store then
        compares with the previous prompt's at the cost of a pointer."""
        return self._windows.map(sent, self._message)

    def _message(self, message: ChatMessageLike) -> dict[str, Any]:
        masked = self._messages.get(id(message))
        if masked is None:
            if len(self._messages) >= _MEMO_SIZE:
                self._messages.clear()
                self._held.clear()
            # "role" and "content" are not sensitive keys: their texts are masked
            masked = {"role": self.text(message.role), "content": self.text(message.content)}
            if isinstance(message, ChatMessage) and (message.tool_calls or message.tool_call_id is not None):
                masked.update(self._tool_parts(message))
            self._messages[id(message)] = masked
            self._held[id(message)] = message
        return masked

    def _tool_parts(self, message: ChatMessage) -> dict[str, str]:
        """The tool loop's parts of ``message``, masked: the calls an assistant message asks for (one JSON
        text, so that the message is text only, as the store compares a prompt's messages with the last
        prompt's to store each once: ``core.store.rows.shared_lists``), or which call a tool's result answers."""
        parts: dict[str, str] = {}
        if message.tool_calls:
            asked = [self.value(call.to_dict()) for call in message.tool_calls]
            parts["tool_calls"] = json.dumps(asked, ensure_ascii=False, default=str)
        if message.tool_call_id is not None:
            parts["tool_call_id"] = self.text(message.tool_call_id)
        return parts

    def value(self, value: Any) -> Any:
        # Hot (every trace payload, every message of every prompt): exact types first, then the ABCs.
        kind = type(value)
        if kind is str:
            done = self._memo.get(value)
            return done if done is not None else self.text(value)
        if kind is dict:
            return self._dict(value)
        if kind is list:  # a prompt's messages: each a dict, walked without a call of value() for each
            return [  # nor for each number of a long list of numbers (what value() returns as it is)
                self._dict(item) if type(item) is dict else item if type(item) in NOT_TEXT else self.value(item)
                for item in value
            ]
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {
                key: masked_under_key(item) if sensitive_key(key) else self.value(item) for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value

    def _dict(self, value: dict[Any, Any]) -> dict[Any, Any]:
        # One loop over the items, texts looked up in the memo in place and keys already seen to be ordinary
        # skipped (a prompt of 100 messages is 200 of them): 2.3x faster than a comprehension calling
        # sensitive_key and value() for each item, which is what a long history's every prompt paid.
        masked: dict[Any, Any] = {}
        ordinary, memo = self._ordinary_keys, self._memo
        for key, item in value.items():
            if key not in ordinary:
                if sensitive_key(key):
                    masked[key] = masked_under_key(item)
                    continue
                if len(ordinary) < _MEMO_SIZE:
                    ordinary.add(key)
            kind = type(item)
            if kind is str:
                done = memo.get(item)
                masked[key] = done if done is not None else self.text(item)
            elif item is None or kind in _SCALARS:
                masked[key] = item
            else:
                masked[key] = self.value(item)
        return masked


_SCALARS = frozenset({int, float, bool})  # nothing to mask in them (texts are masked, None is nothing)


def _mask_basic(match: re.Match[str]) -> str:
    try:
        decoded = base64.b64decode(match.group(2), validate=True)
    except ValueError:  # binascii.Error: not base64, so not credentials
        return match.group(0)
    return match.group(1) + MASK if b":" in decoded else match.group(0)


def _mask_aws_secret(match: re.Match[str]) -> str:
    word = match.group(0)
    mixed = any(c.isupper() for c in word) and any(c.islower() for c in word) and any(c.isdigit() for c in word)
    return MASK if mixed else word


def _mask_assignment(match: re.Match[str]) -> str:
    key, double, single = match.group(1), match.group(2), match.group(3)
    if double is not None:
        return f'{key}"{MASK}"'
    if single is not None:
        return f"{key}'{MASK}'"
    if match.group(4) in _NOTHING_TO_HIDE:  # "secret": null in JSON, password=None: as under a mapping key
        return match.group(0)
    return key + MASK


_NOTHING_TO_HIDE = frozenset({"null", "true", "false", "None", "True", "False"})
