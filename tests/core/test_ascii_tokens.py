"""core.text.ascii_tokens: the same o200k_base counts as tiktoken for ASCII text, from a table that loads in
milliseconds; None (tiktoken counts) for anything it does not cover; the shipped table is the one its
builder makes from the shipped rank file."""

from __future__ import annotations

import binascii
import gzip
import hashlib
import importlib.resources
import itertools
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import ConfigError
from core.text import ascii_tokens, tokens
from core.text.tokens import count_tokens

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "core" / "text" / "tokenizer_data"


@pytest.fixture(scope="module")
def counter() -> ascii_tokens.Counter:
    return ascii_tokens.load()


def tiktoken_count(text: str) -> int:
    return len(tokens._encoding("o200k_base").encode_ordinary(text))


def test_the_shipped_table_is_built_from_the_shipped_rank_file() -> None:
    data = gzip.decompress((DATA / "o200k_base.tiktoken.gz").read_bytes())
    fields = data.split()
    ranks = dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))
    built = ascii_tokens.build_table(ranks)
    shipped = (DATA / "o200k_base.ascii").read_bytes()
    assert hashlib.sha256(built).hexdigest() == ascii_tokens.SHA256
    assert built == shipped
    table = ascii_tokens.Table(shipped)
    ascii_ranks = {token: rank for token, rank in ranks.items() if token.isascii()}
    assert len(ascii_ranks) == 128_835
    assert all(table.rank(token) == rank for token, rank in ascii_ranks.items())
    assert table.rank(b"not a token at all") == ascii_tokens._EMPTY


def test_every_ascii_text_of_one_or_two_characters(counter: ascii_tokens.Counter) -> None:
    characters = [chr(code) for code in range(128)]
    texts = characters + ["".join(pair) for pair in itertools.product(characters, repeat=2)]
    assert [counter.count(text) for text in texts] == [tiktoken_count(text) for text in texts]


# Where the pattern's alternatives meet: contractions in either case, runs of each kind of white space
# (\x1c-\x1f are white space to Python's str.isspace but not to tiktoken's \s), digits in threes,
# punctuation before letters and new lines, the slash rule, trailing white space.
CASES = [
    "don't I'LL we've",
    "It'S 'sup THEY'RE o'clock '''s",
    "x'Re y'vE Z'D m'M ll'LL",
    "a  b   c\t\td\n\ne\r\n\r\nf \n g",
    "  \n  ",
    "end with spaces   ",
    "\t\x0b\x0c\r \n",
    "\x1c\x1d\x1e\x1f a\x1fb \x1f",
    "1234567890 12 3456 7",
    "x1y22z333w4444",
    "...Hello!!! (yes)/no\n//",
    "path/to/file.py:12:3",
    "CamelCaseWORDSAndMore ABCdef aBC",
    "!!!\n\n\n???\r\r",
    "\x00\x7f\x01 a\x00b",
    '{"key": [1, 2, {"x": "y"}]}',
    "    indented code\n        more",
    "-" * 100,
    "=" * 127 + "\n",
    "Ana: The budget matters most; I need it by the end of next month (42)?",
]


@pytest.mark.parametrize("text", CASES)
def test_the_pattern_where_its_alternatives_meet(counter: ascii_tokens.Counter, text: str) -> None:
    assert counter.count(text) == tiktoken_count(text)


def test_every_ascii_line_of_this_repository(counter: ascii_tokens.Counter) -> None:
    """Prose, Python, YAML and JSON as people write them: every ASCII line of the repository's own files."""
    lines = set()
    for path in itertools.chain(ROOT.glob("*/*.py"), ROOT.glob("docs/**/*.md"), ROOT.glob("docs/**/*.yaml")):
        text = path.read_text(encoding="utf-8")
        lines.update(line for line in text.splitlines(keepends=True) if line.isascii())
        if text.isascii():
            lines.add(text)
    assert len(lines) > 10_000
    mismatched = [line for line in lines if counter.count(line) != tiktoken_count(line)]
    assert mismatched == []


TRICKY = "aAsStTdDmMlLvVrReEzZ' \t\n\r\x0b\x0c\x1c/0123456789.,;:!?-_=*#()[]{}\"\\`~|<>@$%^&+\x00\x7f"


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=TRICKY, max_size=40) | st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_random_ascii_texts_count_as_tiktoken_counts_them(text: str) -> None:
    assert tokens._ascii_counter().count(text) == tiktoken_count(text)
    assert count_tokens(text) == tiktoken_count(text)


def test_what_it_does_not_cover_is_left_to_tiktoken(counter: ascii_tokens.Counter) -> None:
    spanish = "¿Dónde está la reunión?"
    assert counter.count(spanish) is None
    assert count_tokens(spanish) == tiktoken_count(spanish) == 6
    long_piece = "=" * (ascii_tokens._LONGEST + 1)
    assert counter.count(long_piece) is None
    assert count_tokens(long_piece) == tiktoken_count(long_piece)
    long_text = "word " * (ascii_tokens._LONGEST_TEXT // 5 + 1)
    assert counter.count(long_text) is None and counter.count(long_text[: ascii_tokens._LONGEST_TEXT]) is not None
    assert count_tokens(long_text) == tiktoken_count(long_text)
    assert count_tokens("hello world", "openai:gpt-4") == 2  # cl100k_base: always tiktoken


def test_piece_counts_are_remembered_up_to_a_bound(
    counter: ascii_tokens.Counter, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = counter._pieces
    counts.clear()
    assert counter.count("hello hello hello") == 3 and counts == {"hello": 1, " hello": 1}
    monkeypatch.setattr(ascii_tokens, "_REMEMBERED", 10)
    for number in range(100):
        counter.count(f" word{number}x")
        assert len(counts) <= 10
    assert counter.count(" word99x") == tiktoken_count(" word99x")


def test_prose_is_split_once_per_new_word(monkeypatch: pytest.MonkeyPatch) -> None:
    """Splitting with ``re`` is most of a count's cost: prose whose white space is single spaces is split
    word by word, each word once, and other text whole, every time."""
    split: list[str] = []

    class Pieces:
        def findall(self, text: str) -> list[str]:
            split.append(text)
            return PIECES.findall(text)

    PIECES, pieces = ascii_tokens._pieces(), Pieces()
    monkeypatch.setattr(ascii_tokens, "_pieces", lambda: pieces)
    counter = ascii_tokens.Counter(ascii_tokens.Table((DATA / "o200k_base.ascii").read_bytes()))
    prose = "The budget matters most; the team decides."
    assert counter.count(prose) == tiktoken_count(prose)
    assert split == ["The", " budget", " matters", " most;", " the", " team", " decides."]
    split.clear()
    assert counter.count("the budget matters") == tiktoken_count("the budget matters") and split == ["the"]
    split.clear()
    lines = "The budget\nmatters most."
    assert counter.count(lines) == counter.count(lines) == tiktoken_count(lines) and split == [lines, lines]


def test_the_counter_is_loaded_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def counting_load() -> ascii_tokens.Counter:
        calls.append(1)
        return ascii_tokens.Counter(ascii_tokens.Table((DATA / "o200k_base.ascii").read_bytes()))

    monkeypatch.setattr(tokens, "_ascii", None)
    monkeypatch.setattr(ascii_tokens, "load", counting_load)
    start = threading.Barrier(6)
    results: list[int] = []

    def count() -> None:
        start.wait()
        results.append(count_tokens("hello world"))

    threads = [threading.Thread(target=count) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [2] * 6 and calls == [1]


def test_a_damaged_or_missing_table_is_a_config_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    data = tmp_path / "tokenizer_data"
    data.mkdir()
    monkeypatch.setattr(importlib.resources, "files", lambda package: tmp_path)  # imported where it reads
    with pytest.raises(ConfigError, match="cannot read the tokenizer file") as missing:
        ascii_tokens.load()
    assert missing.value.hint is not None and "reinstall" in missing.value.hint
    shipped = (DATA / "o200k_base.ascii").read_bytes()
    (data / "o200k_base.ascii").write_bytes(shipped[:-1] + b"?")
    with pytest.raises(ConfigError, match="damaged"):
        ascii_tokens.load()


def test_a_big_endian_machine_reads_the_little_endian_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The file's arrays are little-endian. Here, on a little-endian machine, the arrays are swapped to
    stand for what a big-endian one would read natively, and the loader is told it runs on one."""
    shipped = (DATA / "o200k_base.ascii").read_bytes()
    tokens_, slots = ascii_tokens._HEADER.unpack_from(shipped, len(ascii_tokens._MAGIC))
    start = len(ascii_tokens._MAGIC) + ascii_tokens._HEADER.size
    end = start + 4 * (3 * tokens_ + 1 + slots)
    words = shipped[start:end]
    swapped = b"".join(words[at : at + 4][::-1] for at in range(0, len(words), 4))
    monkeypatch.setattr(ascii_tokens, "sys", SimpleNamespace(byteorder="big"))
    table = ascii_tokens.Table(shipped[:start] + swapped + shipped[end:])
    assert ascii_tokens.Counter(table).count("Hello, world! don't") == tiktoken_count("Hello, world! don't") == 5


ASCII_ONLY = textwrap.dedent(
    """
    import resource, sys
    from core.text.tokens import count_tokens, count_messages
    from core.ports import ChatMessage
    print(count_tokens("The budget matters most; I need it by the end of next month."))
    print(count_messages([ChatMessage("user", "hello world")]))
    assert "tiktoken" not in sys.modules, "ASCII text in o200k_base must not load tiktoken"
    print(count_tokens("¿Dónde?"))
    assert "tiktoken" in sys.modules
    """
)


@pytest.mark.slow
def test_a_process_that_counts_only_ascii_never_loads_tiktoken(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", ASCII_ONLY], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr
    expected = [
        tiktoken_count("The budget matters most; I need it by the end of next month."),
        tokens.REPLY_PRIMING + tokens.MESSAGE_OVERHEAD + 1 + 2,
        tiktoken_count("¿Dónde?"),
    ]
    assert result.stdout.split() == [str(count) for count in expected]
