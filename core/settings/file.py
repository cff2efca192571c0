"""Reading a settings file (``flujo.toml``): its TOML as data, and where in it a setting is written.

Every problem with the file is a ConfigError whose message starts with ``file:line:col:`` where there is a
place (``file:`` alone where there is none): text that is not UTF-8 (at the first bad byte), TOML the
parser refuses (at the line and column it gives), nesting too deep for its recursion (at the bracket that
passes ``MAX_NESTING``), a file that cannot be read. Nothing else escapes: a bad settings file is one line and
exit code 6, never a traceback.

``key_position`` finds the line of a setting for the errors of its value; the TOML parser keeps no
positions, so it reads the file's table headers and ``key =`` lines itself (keys written inside an
inline table are found at their table's line).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.model.errors import ConfigError, SourcePosition

MAX_NESTING = 100
"""Where a file too deep for the parser is said to pass: the first bracket nested deeper than this."""

# Compiled at their first use (``re``'s own cache keeps them): only a settings file's errors need them, and
# compiling them at import cost every run 2.8 M instructions.
_AT = r"^(?P<message>.*?) \(at (?:line (?P<line>\d+), column (?P<column>\d+)|end of document)\)$"
_HEADER = r"^\s*\[\[?\s*(?P<name>[^\]]+?)\s*\]\]?\s*(?:#.*)?$"
_ASSIGNMENT = r"^\s*(?P<key>[A-Za-z0-9_\-\"'. ]+?)\s*="
_DOTTED_PART = r"\"((?:[^\"\\]|\\.)*)\"|'([^']*)'|([A-Za-z0-9_\-]+)"


def read_settings_file(path: Path) -> dict[str, Any]:
    """The TOML data of ``path``; ConfigError naming the file (and the place) when it cannot be read."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the settings file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = SourcePosition.of_byte(str(path), raw, exc.start)
        raise ConfigError(
            f"{at}: the settings file is not UTF-8 text (byte {exc.start})",
            hint="save it as UTF-8",
        ) from None
    import tomllib  # here: only a run with a settings file reads TOML

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(_located(path, str(exc), text), hint="fix the TOML syntax") from None
    except RecursionError:  # the parser recurses once per level: thousands of levels exhaust the stack
        deep = _too_deep(text)
        where = f"{path}:{deep[0]}:{deep[1]}" if deep is not None else str(path)
        raise ConfigError(
            f"{where}: the settings file nests arrays or tables too deep to read",
            hint=f"flatten it: no setting nests more than a few levels (this is over {MAX_NESTING})",
        ) from None


def key_position(path: Path, keys: Sequence[str | int]) -> tuple[int, int] | None:
    """Line and column (1-based) of the ``key =`` line that sets ``keys`` (a setting's path, as a validation
    error gives it: ``("openai", "timeout_s")``, ``("secret_env_vars", 0)``), or of the nearest line that
    sets a part of it; None when the file does not write it (or cannot be read)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    wanted = [str(key) for key in keys]
    table: list[str] = []
    best: tuple[int, tuple[int, int]] | None = None  # (how many keys matched, place)
    for number, line in enumerate(lines, start=1):
        header = re.match(_HEADER, line)
        if header is not None:
            table = _dotted(header.group("name"))
            continue
        assignment = re.match(_ASSIGNMENT, line)
        if assignment is None:
            continue
        written = [*table, *_dotted(assignment.group("key"))]
        matched = _common_prefix(written, wanted)
        if matched == len(written) and (best is None or matched > best[0]):
            best = (matched, (number, len(line) - len(line.lstrip()) + 1))
    return None if best is None else best[1]


def _dotted(name: str) -> list[str]:
    """The parts of a dotted TOML key: ``models."openai:x".context_window`` → three parts."""
    return [double or single or bare for double, single, bare in re.findall(_DOTTED_PART, name)]


def _common_prefix(written: list[str], wanted: list[str]) -> int:
    count = 0
    for mine, theirs in zip(written, wanted, strict=False):
        if mine != theirs:
            break
        count += 1
    return count


def _located(path: Path, message: str, text: str) -> str:
    """tomllib's message ``"Invalid value (at line 3, column 9)"`` as ``"path:3:9: Invalid value"``."""
    found = re.match(_AT, message)
    if found is None:
        return f"{path}: {message}"
    if found.group("line") is None:  # at end of document
        lines = text.splitlines() or [""]
        return f"{path}:{len(lines)}:{len(lines[-1]) + 1}: {found.group('message')}"
    return f"{path}:{found.group('line')}:{found.group('column')}: {found.group('message')}"


def _too_deep(text: str) -> tuple[int, int] | None:
    """Where arrays and inline tables first nest deeper than ``MAX_NESTING`` (outside strings and
    comments), or None."""
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return None  # the usual file: nothing to scan
    depth, line, start, at = 0, 1, 0, 0
    quote = ""
    while at < len(text):
        char = text[at]
        if char == "\n":
            line, start = line + 1, at + 1
        elif quote:
            if char == "\\" and quote == '"':
                at += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "#":
            end = text.find("\n", at)
            at = len(text) if end == -1 else end
            continue
        elif char in "[{" and not _is_header(text, start, at, depth):
            depth += 1
            if depth > MAX_NESTING:
                return line, at - start + 1
        elif char in "]}" and depth > 0:
            depth -= 1
        at += 1
    return None


def _is_header(text: str, start: int, at: int, depth: int) -> bool:
    """Whether the bracket at ``at`` opens a ``[table]`` header (first on its line, outside any value)."""
    return depth == 0 and not text[start:at].strip()
