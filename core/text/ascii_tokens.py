"""Exact o200k_base token counts of ASCII text without loading tiktoken: ~3 MB and a few milliseconds.

Why. Loading o200k_base into tiktoken costs ~0.3 s and ~70 MB, once per process (its ~200,000 ranks go
through Python and then Rust's tables). A conversation pays it as soon as its history outgrows its bound's
byte estimate (``ConversationTurn.tokens_at_most``): issue 19 measured it as most of the cost of iterations
2-100 and most of a long run's peak memory. docs/performance.md ("The tokenizer's load") has the libraries
we measured instead; none was exact, light and quick to load at once.

What. ``count(text)`` is ``len(tiktoken o200k_base .encode_ordinary(text))`` for an ASCII ``text``, from
tiktoken's own two steps done here for ASCII only:

1. Split. ``_PIECES`` is o200k's pattern (``core.text.tokens._O200K_PAT_STR``) with its Unicode classes narrowed
   to their ASCII members: ``\\p{L}`` is ``A-Za-z``, ``\\p{Lu}`` ``A-Z``, ``\\p{Ll}`` ``a-z``, ``\\p{N}``
   ``0-9``; ``\\p{Lt}``, ``\\p{Lm}``, ``\\p{Lo}`` and ``\\p{M}`` have no ASCII members; ``\\s`` (Unicode
   White_Space) is ``\\t \\n \\x0b \\x0c \\r`` and space. Python's ``re`` backtracks leftmost-first as
   tiktoken's fancy-regex does, and on ASCII text no Unicode table (whose version differs between the two)
   is ever consulted. Anything outside ASCII goes to tiktoken.
2. Merge. A piece that is a token is one token; else tiktoken's byte-pair merge (lowest rank first, the
   leftmost of equal ranks) runs on it. It only ever looks up pieces of the piece, which are ASCII, so the
   ASCII tokens of o200k (128,835 of its 199,998) give exactly the ranks the whole table would.

The table. ``tokenizer_data/o200k_base.ascii`` holds those tokens, built from the shipped
``o200k_base.tiktoken.gz`` by ``build_table`` (tests/core/test_ascii_tokens.py rebuilds it and compares): the
tokens' bytes end to end, their ranks, offsets and CRC-32s, and an open-addressed slot array indexed by
CRC-32 (zlib's, the same in every process, unlike ``hash``). A look-up is a CRC, a probe or two and one
comparison of bytes. Loading it is checking its sha256, as the rank files' are checked, and mapping the
file, whose pages are read as look-ups use them: ~2 ms.

Counts of pieces and words are remembered (``_Counts``, ``_Words``, at most ``_REMEMBERED`` each, then
forgotten all at once), so a word is split and merged once per process. A piece longer than ``_LONGEST``
bytes (a line of 200 dashes) makes ``count`` return None: tiktoken counts that text, since merging here is
quadratic in the piece's length and ~10x slower than tiktoken's. So does a text over ``_LONGEST_TEXT``
characters: where every word is new, counting here costs ~30x tiktoken's count (1.6 s for 1 MB of random
words), and past 64 KB tiktoken's one-time load is the smaller cost. Prose repeats its words: 416 KB of
these docs count in ~0.08 s here.
"""

from __future__ import annotations

import array
import functools
import hashlib
import re
import struct
import sys
import zlib
from collections.abc import Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Final

from core.model.errors import ConfigError

if TYPE_CHECKING:  # a run that counts no text never loads the table, nor imports what reads it
    import mmap
    from importlib.abc import Traversable

RESOURCE: Final = "tokenizer_data/o200k_base.ascii"
# sha256 of the decompressed table; tests/core/test_ascii_tokens.py rebuilds the table and checks both.
SHA256: Final = "bfb2d6889f889df191890e818b29542d4662571f361d985059b9b489e783c752"
_MAGIC: Final = b"flujo o200k_base ascii 1\n"
_HEADER: Final = struct.Struct("<II")  # tokens, slots
_EMPTY: Final = 0xFFFFFFFF  # a free slot; also "no rank" (tiktoken's Rank::MAX)
_LONGEST: Final = 128  # merging is quadratic in a piece: 0.3 ms at 128 bytes (tiktoken: 0.03)
# Past this many characters tiktoken counts: its load (~0.3 s) is then small next to what it saves on text
# of new words (~1.6 µs a character here when every word is new and merged, ~0.05 for tiktoken).
_LONGEST_TEXT: Final = 65_536
_REMEMBERED: Final = 4096  # per memo (pieces, first words, words after a space): ~0.5 MB each at most

_SPACE = r"\t\n\x0b\x0c\r "
_CONTRACTION = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
_PIECES: Final = "|".join(
    [
        rf"[^\r\nA-Za-z0-9]?[A-Z]*[a-z]+{_CONTRACTION}",
        rf"[^\r\nA-Za-z0-9]?[A-Z]+[a-z]*{_CONTRACTION}",
        r"[0-9]{1,3}",
        rf" ?[^{_SPACE}A-Za-z0-9]+[\r\n/]*",
        rf"[{_SPACE}]*[\r\n]+",
        rf"[{_SPACE}]+(?![^{_SPACE}])",
        rf"[{_SPACE}]+",
    ]
)


@functools.cache
def _pieces() -> re.Pattern[str]:
    """``_PIECES`` compiled, at the first text counted (compiling it at import cost every run 3.6 M
    instructions; a run that counts no history never needs it)."""
    return re.compile(_PIECES)


class Table:
    """The ASCII tokens of o200k_base and their ranks, looked up by CRC-32 (see the module docstring)."""

    __slots__ = ("_blob", "_crcs", "_mask", "_offsets", "_ranks", "_slots")
    _ranks: Sequence[int]
    _crcs: Sequence[int]
    _offsets: Sequence[int]
    _slots: Sequence[int]
    _blob: memoryview
    _mask: int

    def __init__(self, data: bytes | mmap.mmap) -> None:
        view = memoryview(data)
        if bytes(view[: len(_MAGIC)]) != _MAGIC:
            raise ValueError("not a flujo ASCII token table")
        tokens, slots = _HEADER.unpack_from(view, len(_MAGIC))
        if slots & (slots - 1):
            raise ValueError("the slot count is not a power of two")
        arrays: list[Sequence[int]] = []
        at = len(_MAGIC) + _HEADER.size
        for length in (tokens, tokens, tokens + 1, slots):  # ranks, CRCs, offsets (with the end), slots
            if sys.byteorder == "little":  # the file's order: read in place, no copy
                arrays.append(view[at : at + 4 * length].cast("I"))
            else:
                part = array.array("I")
                part.frombytes(view[at : at + 4 * length])
                part.byteswap()
                arrays.append(part)
            at += 4 * length
        self._ranks, self._crcs, self._offsets, self._slots = arrays
        self._blob = view[at:]
        if len(self._blob) != self._offsets[-1]:
            raise ValueError("the table's tokens do not end where its offsets say")
        self._mask = slots - 1

    def rank(self, piece: bytes) -> int:
        """The rank of ``piece`` if it is a token, else ``_EMPTY``."""
        crc = zlib.crc32(piece)
        slots, crcs, offsets, mask = self._slots, self._crcs, self._offsets, self._mask
        at = crc & mask
        while (token := slots[at]) != _EMPTY:
            if crcs[token] == crc and self._blob[offsets[token] : offsets[token + 1]] == piece:
                return self._ranks[token]
            at = (at + 1) & mask
        return _EMPTY

    def merged(self, piece: bytes) -> int:
        """Tokens of one piece (not itself a token): tiktoken's ``_byte_pair_merge``, step for step."""
        rank = self.rank
        starts = list(range(len(piece) + 1))
        ranks = [rank(piece[at : at + 2]) for at in range(len(piece) - 1)]
        ranks += (_EMPTY, _EMPTY)
        while (lowest := min(ranks)) != _EMPTY:
            at = ranks.index(lowest)  # the leftmost of equal ranks, as tiktoken's strict < scan picks
            # A part's rank is that of it and the part after, merged; parts[at + 1] goes after these.
            if at > 0:
                ranks[at - 1] = rank(piece[starts[at - 1] : starts[at + 2]]) if at + 2 < len(starts) else _EMPTY
            ranks[at] = rank(piece[starts[at] : starts[at + 3]]) if at + 3 < len(starts) else _EMPTY
            del starts[at + 1], ranks[at + 1]
        return len(starts) - 1


class _Counts(dict[str, int]):
    """Tokens per piece, filled on a miss; forgotten all at once past ``_REMEMBERED`` pieces."""

    def __init__(self, table: Table) -> None:
        super().__init__()
        self.table = table

    def __missing__(self, piece: str) -> int:
        data = piece.encode("ascii")
        if self.table.rank(data) != _EMPTY:
            count = 1
        elif len(data) > _LONGEST:
            raise _TooLong
        else:
            count = self.table.merged(data)
        if len(self) >= _REMEMBERED:
            self.clear()
        self[piece] = count
        return count


class _Words(dict[str, int]):
    """Tokens per word, from its pieces' counts, with a space before it (``spaced``) or not; forgotten all
    at once past ``_REMEMBERED`` words."""

    def __init__(self, pieces: _Counts, *, spaced: bool) -> None:
        super().__init__()
        self.pieces = pieces
        self.space = " " if spaced else ""

    def __missing__(self, word: str) -> int:
        count = sum(map(self.pieces.__getitem__, _pieces().findall(self.space + word)))
        if len(self) >= _REMEMBERED:
            self.clear()
        self[word] = count
        return count


class _TooLong(Exception):
    """A piece too long to merge here (see ``_LONGEST``)."""


class Counter:
    r"""Counts ASCII texts with one table; ``count`` returns None where tiktoken must count instead.

    Splitting is most of the cost (Python's ``re`` on o200k's pattern: ~450 instructions a character), so
    prose is split at its spaces first, and each word's count is remembered: in a text whose only white
    space is single spaces (printable ASCII, no two spaces in a row), no piece spans a space, and every
    space starts a piece. Proof: the pattern's pieces that hold a space anywhere but first are runs of two
    or more white-space characters; its one look-ahead, ``(?!\S)`` after white space, sees the same
    character in a word as in the text, or the text's end for a last word that is a lone space. So
    ``"a word, said"`` counts as ``"a"``, ``" word,"`` and ``" said"`` do, and a word seen before costs one
    look-up (by the word alone: ``_spaced`` holds the counts of words after a space, ``_first`` of a
    text's first word). Any other text is split whole.
    """

    __slots__ = ("_first", "_pieces", "_spaced")

    def __init__(self, table: Table) -> None:
        self._pieces = _Counts(table)
        self._first = _Words(self._pieces, spaced=False)
        self._spaced = _Words(self._pieces, spaced=True)

    def count(self, text: str) -> int | None:
        """o200k_base tokens of ``text``, or None if it is not ASCII, is over ``_LONGEST_TEXT`` characters or
        has a piece too long to merge here."""
        if len(text) > _LONGEST_TEXT or not text.isascii():
            return None
        try:
            if text.isprintable() and "  " not in text:  # white space is single spaces: word by word
                words = text.split(" ")
                return self._first[words[0]] + sum(map(self._spaced.__getitem__, islice(words, 1, None)))
            return sum(map(self._pieces.__getitem__, _pieces().findall(text)))
        except _TooLong:
            return None


def load() -> Counter:
    """The counter built from the shipped table. Raises ConfigError if the table is missing or damaged."""
    hint = "the flujo installation is incomplete; reinstall it (pip install --force-reinstall flujo-runner)"
    from importlib import resources

    try:
        data, digest = _read(resources.files("core.text").joinpath(RESOURCE))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the tokenizer file core/{RESOURCE}: {exc}", hint=hint) from exc
    if digest != SHA256:
        raise ConfigError(f"the tokenizer file core/{RESOURCE} is damaged (sha256 mismatch)", hint=hint)
    return Counter(Table(data))


def _read(file: Traversable) -> tuple[bytes | mmap.mmap, str]:
    """The table's bytes and their sha256. An installed file is hashed as it is read in chunks and then
    mapped, so only the pages look-ups touch become the process's memory (~2 ms in all); a zipped install's
    is read whole. Not compressed: gzip would cost ~15 ms per process."""
    if isinstance(file, Path):
        import mmap

        with file.open("rb") as opened:
            digest = hashlib.file_digest(opened, "sha256").hexdigest()
            return mmap.mmap(opened.fileno(), 0, access=mmap.ACCESS_READ), digest
    data = file.read_bytes()
    return data, hashlib.sha256(data).hexdigest()


def build_table(ranks: Mapping[bytes, int]) -> bytes:
    """The table of ``ranks``' ASCII tokens (o200k_base's ranks from its rank file), in ``Table``'s format."""
    tokens = sorted((rank, token) for token, rank in ranks.items() if token.isascii())
    slots = 1 << max(1, (2 * len(tokens) - 1).bit_length())  # at most half full: probes stay short
    crcs = array.array("I", (zlib.crc32(token) for _, token in tokens))
    offsets = array.array("I", [0])
    for _, token in tokens:
        offsets.append(offsets[-1] + len(token))
    table = array.array("I", [_EMPTY]) * slots
    for index, crc in enumerate(crcs):
        at = crc & (slots - 1)
        while table[at] != _EMPTY:
            at = (at + 1) & (slots - 1)
        table[at] = index
    parts = [array.array("I", (rank for rank, _ in tokens)), crcs, offsets, table]
    if sys.byteorder == "big":
        for part in parts:
            part.byteswap()
    body = b"".join(part.tobytes() for part in parts)
    return _MAGIC + _HEADER.pack(len(tokens), slots) + body + b"".join(token for _, token in tokens)
