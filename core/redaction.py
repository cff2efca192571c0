"""Redaction of secrets in anything that is traced, stored as a trace event or shown.

Masks API keys (OpenAI/Anthropic style ``sk-...``, AWS ``AKIA...``, Google ``AIza...``, GitHub ``ghp_...``),
bearer tokens, ``password=...``/``api_key: ...`` style assignments, PEM private keys, JWTs, and the
literal secret values it is given. Those come from ``core.config.secret_values`` (the values of secret
environment variables, by name or listed in ``secret_env_vars``, and the providers' API keys): the config
module is the one that reads the environment. Name-driven as well as pattern-driven, so an unknown
vendor's key stored in a secret env var is still caught.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "[REDACTED]"
_MEMO_SIZE = 4096  # distinct texts remembered per redactor

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
_ASSIGNMENT = re.compile(
    r"""(?ix)
    (\b(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?token|auth[_-]?token|token|client[_-]?secret)
     ["']?[ \t]*[:=][ \t]*)
    (?:"([^"\n]+)"|'([^'\n]+)'|([^\s"',;]+))
    """
)
# "password hunter2", "password is hunter2": a password named in prose is masked too (a false positive is
# the safe side).
_PROSE_PASSWORD = re.compile(r"""(?i)(\b(?:password|passwd|passphrase)\s+(?:is\s+)?)(?!is\b)([^\s"',;]{3,})""")
# "the api key is 3f9a...": for these words only a value that looks like a credential (8+ characters with a
# digit), so that "each token is counted" and "the secret is out" stay readable.
_PROSE_CREDENTIAL = re.compile(r"""(?i)(\b(?:secret|token|api[ _-]?key)\s+is\s+)((?=[^\s"',;]*\d)[^\s"',;]{8,})""")
_BEARER = re.compile(r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/=-]{8,})")

# What any built-in pattern needs to match: one of the literal starts of the case-sensitive patterns, or
# (in lower case) a word of the case-insensitive ones. Checked first, it spares most texts the eleven
# substitutions (about 16 µs a text; reading a long run masks tens of thousands of distinct texts). Only
# for ASCII texts: with IGNORECASE, a few other letters match too (the Kelvin sign matches k, ſ matches s).
_LITERAL_STARTS = re.compile(r"-----BEGIN|eyJ|sk-|AKIA|AIza|gh[pousr]_|xox")
_WORDS = ("bearer", "pass", "pwd", "secret", "token", "api")  # password|passwd|passphrase share "pass"


def _may_match(value: str) -> bool:
    if not value.isascii() or _LITERAL_STARTS.search(value) is not None:
        return True
    lowered = value.lower()
    return any(word in lowered for word in _WORDS)


class Redactor:
    """Masks secrets in strings and (recursively) in JSON-like values: the built-in patterns, then
    ``extra_patterns`` (regular expressions), and every one of ``secret_values`` (6 characters or more)
    wherever it appears."""

    def __init__(self, *, extra_patterns: Iterable[str] = (), secret_values: Iterable[str] = ()) -> None:
        self._extra = [re.compile(p) for p in extra_patterns]
        self._patterns = [re.compile(p) for p in _BUILTIN_PATTERNS] + self._extra
        # Longest first so a value containing another is masked whole.
        self._values = sorted({v for v in secret_values if len(v) >= 6}, key=len, reverse=True)
        # Conversation turns are traced again on every call that injects them: remember recent results
        # (redaction is a pure function of the text), so tracing costs the new text, not the whole history.
        self._memo: dict[str, str] = {}

    def text(self, value: str) -> str:
        done = self._memo.get(value)
        if done is not None:
            return done
        if len(self._memo) >= _MEMO_SIZE:
            self._memo.clear()
        done = self._memo[value] = self._mask(value)
        return done

    def _mask(self, value: str) -> str:
        for secret in self._values:
            if secret in value:
                value = value.replace(secret, MASK)
        if not _may_match(value) and not any(pattern.search(value) for pattern in self._extra):
            return value  # no pattern can match: every substitution below would leave it as it is
        for pattern in self._patterns:
            value = pattern.sub(MASK, value)
        value = _BEARER.sub(lambda m: m.group(1) + MASK, value)
        value = _PROSE_PASSWORD.sub(lambda m: m.group(1) + MASK, value)
        value = _PROSE_CREDENTIAL.sub(lambda m: m.group(1) + MASK, value)
        return _ASSIGNMENT.sub(_mask_assignment, value)

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value


def _mask_assignment(match: re.Match[str]) -> str:
    key, double, single = match.group(1), match.group(2), match.group(3)
    if double is not None:
        return f'{key}"{MASK}"'
    if single is not None:
        return f"{key}'{MASK}'"
    return key + MASK
