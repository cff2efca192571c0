"""Token counting, offline: the one place that maps a model to its tokenizer.

- ``count_tokens(text, model=None)``: tokens of ``text`` for ``model`` (``openai:gpt-4o`` or ``gpt-4o``);
  ``model=None`` counts with the default encoding, o200k_base (history turns are counted once, this way).
- ``count_messages(messages, model=None)``: tokens of a chat prompt, including per-message overhead.
- ``encoding_name(model)``: which encoding counts for ``model`` — the only place that decides it.

Which models are exact. OpenAI publishes its tokenizers: gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o1, o3, o4 and
gpt-oss count with o200k_base; gpt-4 and gpt-3.5 with cl100k_base, exactly as the API counts them. Every
other model (``anthropic:``, ``ollama:``, ``local``, unknown ``openai:``-compatible servers, the offline
``scripted`` and ``echo``) counts with **o200k_base as an approximation**. We measured it against the tokenizers we
could get offline (Llama 3 and 4, Mistral tekken and SentencePiece v3, Claude's legacy tokenizer; prose,
code, YAML, JSON, Chinese, Japanese, Korean; docs/configuration.md has the table): o200k_base was within
±4 % of Llama 3/4 and Mistral tekken on English and code, and closer than characters/4 on everything but
code (where both are within a few percent); characters/4 undercounts JSON by half and CJK text 2-4x.
o200k_base undercounts SentencePiece-style vocabularies (Mistral v3 by ~15-20 %) and Claude's legacy
tokenizer (~6 % on English, ~25-30 % on CJK), so budgets for those models should keep a margin. The
approximation also costs nothing extra: history is counted with o200k_base anyway, so it is loaded once.

Offline data. The rank files ship in ``core/text/tokenizer_data/`` (``o200k_base.tiktoken.gz``,
``cl100k_base.tiktoken.gz``; origin and licence in NOTICE). They are read with importlib.resources,
checked against the sha256 tiktoken itself expects, and turned into a ``tiktoken.Encoding`` directly:
``tiktoken.get_encoding`` is never called, because it downloads on first use. No environment variable is
read or set. Each encoding is built lazily, once per process, under a lock; tiktoken itself is imported
only then, so ``flujo --help`` and runs that never count do not pay for it (~0.3 s, docs/performance.md).

ASCII text in o200k_base (history turns, English prompts) is counted by ``core.text.ascii_tokens`` instead: the
same count, from a table of o200k's ASCII tokens that loads in ~6 ms and ~3.4 MB, so a run that counts only
ASCII never loads tiktoken. Text with any other character, and every cl100k_base count, goes to tiktoken.

Long text. tiktoken's ``encode_ordinary`` returns a Python list of every token and, for one long piece, keeps
~40 bytes per byte in Rust while it merges: a 40 MB ``--input`` took 2 GB to count whole. So a text over
``_PART`` characters is counted in parts of at most ``_PART``, cut where a piece of both encodings' patterns
surely ends (``_PART_END``); the sum is then tiktoken's count of the whole (each piece is encoded on its own
anyway). A window of ``_PART // 2`` characters with no such place (one "word" of 32,768 letters, a blob of
base64, a line of CJK text with no ASCII in it) is not text anyone reads: it is counted in parts of
``_FORCED`` characters, cut anywhere, which may differ from tiktoken's whole count by about a token a cut.

Invariant: a missing or damaged rank file is a ConfigError (reinstall flujo), never a silent fallback to
the estimate.
"""

from __future__ import annotations

import binascii
import functools
import hashlib
import re
import threading
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from core.model.calls import ChatMessage
from core.model.errors import ConfigError
from core.model.providers import PROVIDER_NAMES
from core.text import ascii_tokens

if TYPE_CHECKING:
    import tiktoken

EncodingName = Literal["o200k_base", "cl100k_base"]

DEFAULT_ENCODING: Final[EncodingName] = "o200k_base"
# OpenAI's published accounting (the cookbook's num_tokens_from_messages): each message costs
# <|start|>, <|message|> and <|end|> around its role and content, whose own tokens are counted too.
MESSAGE_OVERHEAD = 3
REPLY_PRIMING = 3  # every reply is primed with <|start|>assistant<|message|>

# Model families whose tokenizer OpenAI publishes. Tried in order, so "gpt-4o", "gpt-4.1" and "gpt-4.5"
# must come before "gpt-4". A family matches its own name or the name followed by - . : _ or @
# ("gpt-4o-mini", "gpt-5.1", "gpt-oss:20b"), so "o1" never matches "o1x".
_FAMILIES: Final[tuple[tuple[str, EncodingName], ...]] = (
    ("gpt-4o", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("gpt-oss", "o200k_base"),  # o200k_harmony = o200k_base's ranks + chat special tokens: same counts
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("gpt-35", "cl100k_base"),  # Azure's deployment names (gpt-35-turbo)
)
_FAMILY_BOUNDARY: Final = "-.:_@"
# Provider prefixes of flujo model strings (the rows of core.model.providers); agents may also pass the bare
# model name. Only these are stripped: "gpt-oss:20b" is an Ollama tag, not a provider.
_PROVIDER_PREFIXES: Final = tuple(f"{name}:" for name in PROVIDER_NAMES)


@functools.lru_cache(maxsize=256)
def encoding_name(model: str | None) -> EncodingName:
    """The encoding that counts tokens for ``model``: the exact one for OpenAI's published families,
    else o200k_base as an approximation (see the module docstring for why and how close it is).

    ``model`` is a flujo model string (``openai:gpt-4o-mini``, ``ollama:llama3``), a bare model name
    (``gpt-4o``), a fine-tuned name (``ft:gpt-4o-mini:org::id``), a routed name (``openai/gpt-4o``), or None.
    """
    if not model:
        return DEFAULT_ENCODING
    name = model.strip().lower()
    for prefix in _PROVIDER_PREFIXES:
        name = name.removeprefix(prefix)
    name = name.removeprefix("ft:").rpartition("/")[2]
    for family, encoding in _FAMILIES:
        if name == family or (name.startswith(family) and name[len(family)] in _FAMILY_BOUNDARY):
            return encoding
    return DEFAULT_ENCODING


def count_tokens(text: str, model: str | None = None) -> int:
    """Tokens of ``text`` as ``model`` counts it (``encoding_name`` picks the encoding; None = o200k_base).

    Special-token markers in the text (``<|endoftext|>``) count as ordinary text, as a provider counts a
    user's message. ASCII text in o200k_base is counted by ``core.text.ascii_tokens`` (its first call loads its
    table, ~6 ms; ~7 µs per 180 characters); else the first call per encoding loads tiktoken's (~0.3 s);
    after that 200 characters cost ~12 µs (o200k_base) to ~18 µs (cl100k_base).
    """
    if not text:
        return 0
    name = encoding_name(model)
    if name == DEFAULT_ENCODING and text.isascii():
        count = _ascii_counter().count(text)  # exact, without tiktoken's ~0.3 s load (core.text.ascii_tokens)
        if count is not None:
            return count
    encode = _encoding(name).encode_ordinary
    if len(text) <= _PART:
        return len(encode(text))
    return sum(len(encode(part)) for part in _parts(text))  # memory bounded by a part, not by the text


def count_messages(messages: Sequence[ChatMessage], model: str | None = None) -> int:
    """Tokens of a chat prompt: per message ``MESSAGE_OVERHEAD`` plus its role and content, then
    ``REPLY_PRIMING`` once for the reply. An empty prompt is 0."""
    if not messages:
        return 0
    return REPLY_PRIMING + sum(
        MESSAGE_OVERHEAD + count_tokens(m.role, model) + count_tokens(m.content, model) for m in messages
    )


# Long texts are counted in parts (the module docstring says why): at most this many characters each.
_PART: Final = 1 << 16
_FORCED: Final = 4096  # a window with no sure end of a piece is cut every this many characters
# Where a piece of o200k_base's and cl100k_base's patterns surely ends, whatever follows: the match's start.
# 1. After an ASCII letter and before an ASCII character that is not a letter or an apostrophe: a letter is
#    only ever in a piece of letters (the optional character before them is no letter, digit or line
#    break), which goes on with letters, marks or a contraction ('s, 're, ...) only.
# 2. After an ASCII digit and before an ASCII character that is not a digit: digits are pieces of their own
#    (\p{N}{1,3}); an apostrophe is harmless here, no contraction follows a digit.
# 3. After a line break and before a character that is not white space or "/": a piece holding a line break
#    goes on only with white space, line breaks or, after punctuation, "/" (o200k's ``[\r\n/]*``).
#    Python's \s is wider than Unicode's White_Space (\x1c-\x1f), which only makes it stricter; U+180E was
#    white space before Unicode 6.3.
# In each case the piece's last match also reads the next character only to stop at it, as it would stop
# at the end of the text (``\s++$`` in cl100k matches where ``\s*[\r\n]`` would have, the same piece), so
# the part before counts as it does inside the whole text, and the part after starts a piece.
# tests/core/test_tokens.py checks sums of parts against whole counts on texts cut at every such place.
_PART_END: Final = (
    r"(?<=[A-Za-z])[\x00-\x26\x28-\x40\x5b-\x60\x7b-\x7f]|(?<=[0-9])[\x00-\x2f\x3a-\x7f]|(?<=\n)[^\s/\u180e]"
)


@functools.cache
def _part_end() -> re.Pattern[str]:
    """``_PART_END`` compiled, at the first long text counted (at import, it cost every run 1.1 M instructions)."""
    return re.compile(_PART_END)


def _parts(text: str) -> Iterator[str]:
    """``text`` in parts of at most ``_PART`` characters whose counts add up to the whole text's (see the
    module docstring), each cut at the first sure end of a piece past its middle."""
    start, end = 0, len(text)
    while end - start > _PART:
        cut = _part_end().search(text, start + _PART // 2, start + _PART)
        if cut is not None:
            yield text[start : cut.start()]
            start = cut.start()
        else:  # no sure end in half a part: not text anyone reads; cut anywhere (a token or so a cut)
            yield from (text[at : at + _FORCED] for at in range(start, start + _PART, _FORCED))
            start += _PART
    yield text[start:]


@dataclass(frozen=True)
class _EncodingDefinition:
    sha256: str
    pat_str: str
    special_tokens: Mapping[str, int]


# Copied from tiktoken 0.14's tiktoken_ext/openai_public.py, which builds these inside functions that
# download the rank file, so they cannot be imported without the network. sha256 is of the decompressed
# file. tests/core/test_tokens.py checks every field against tiktoken's own definitions.
_O200K_PAT_STR: Final = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PAT_STR: Final = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""  # noqa: E501 (verbatim copy)
_DEFINITIONS: Final[Mapping[EncodingName, _EncodingDefinition]] = {
    "o200k_base": _EncodingDefinition(
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str=_O200K_PAT_STR,
        special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
    "cl100k_base": _EncodingDefinition(
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=_CL100K_PAT_STR,
        special_tokens={
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
}

_loaded: dict[EncodingName, tiktoken.Encoding] = {}
_load_lock = threading.Lock()


_ascii: ascii_tokens.Counter | None = None


def _ascii_counter() -> ascii_tokens.Counter:
    """The ASCII counter of o200k_base, loaded on first use (~6 ms, ~3.4 MB) and kept for the process."""
    global _ascii
    counter = _ascii
    if counter is None:
        with _load_lock:
            counter = _ascii
            if counter is None:
                counter = _ascii = ascii_tokens.load()
    return counter


def _encoding(name: EncodingName) -> tiktoken.Encoding:
    """The encoding ``name``, built on first use and kept for the life of the process."""
    encoding = _loaded.get(name)
    if encoding is None:
        with _load_lock:  # two threads counting at once must not build it twice (~0.2 s and ~30 MB each)
            encoding = _loaded.get(name)
            if encoding is None:
                encoding = _loaded[name] = _load_encoding(name)
    return encoding


def _load_encoding(name: EncodingName) -> tiktoken.Encoding:
    """Build ``name`` from the shipped rank file, uncached (the benchmark times this). Raises ConfigError."""
    import gzip  # these three lazily: the tokenizer's import and data are paid only by a process that counts
    from importlib import resources

    import tiktoken

    definition = _DEFINITIONS[name]
    resource = f"tokenizer_data/{name}.tiktoken.gz"
    hint = "the flujo installation is incomplete; reinstall it (pip install --force-reinstall flujo-runner)"
    try:
        data = gzip.decompress(resources.files("core.text").joinpath(resource).read_bytes())
    except (OSError, EOFError, zlib.error) as exc:
        raise ConfigError(f"cannot read the tokenizer file core/{resource}: {exc}", hint=hint) from exc
    if hashlib.sha256(data).hexdigest() != definition.sha256:
        raise ConfigError(f"the tokenizer file core/{resource} is damaged (sha256 mismatch)", hint=hint)
    # Lines are "<base64 token> <rank>". One split() of the whole file, zip, and binascii (what
    # base64.b64decode calls, minus its per-call checks) parse o200k in ~90 ms; tiktoken's line loop takes ~155.
    fields = data.split()
    ranks = dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))
    del fields, data  # ~20 MB the tokenizer's own tables need not sit beside while they are built
    encoding = tiktoken.Encoding(
        name, pat_str=definition.pat_str, mergeable_ranks=ranks, special_tokens=dict(definition.special_tokens)
    )
    # tiktoken keeps the Python ranks (~26 MB for o200k) only to pickle the encoding, which flujo never
    # does; its tables in Rust are what encodes. A private attribute: tiktoken is pinned (pyproject.toml).
    encoding._mergeable_ranks = {}
    return encoding
