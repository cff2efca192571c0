"""Reading what flujo needs from a GGUF model file's header, before llama.cpp is asked to load it.

llama.cpp's Python binding raises the same ``RuntimeError`` for a missing file, a file that is not a
model, a cut-off download and one too big for memory ("Failed to init server"), so ``read_gguf`` tells
them apart first, each as one ConfigError saying what is wrong and what fixes it: the magic bytes, the
format version, the header's key/value section (the model's name, architecture and trained context
length), then the tensor table, whose offsets and sizes say how long the file must be; a file shorter than
that was cut off. It reads no tensor data (the file is mapped, and only its header pages are touched), so it
takes milliseconds: a few tens for the 98 MB default model, whose vocabulary is most of its header.

The format (ggml's docs/gguf.md): the magic ``GGUF``, a uint32 version (1 to 3), the tensor count and the
key/value count (uint64 since version 2), then each key (a uint64-length UTF-8 string), a uint32 value type
and the value; then per tensor its name, a uint32 number of dimensions, each dimension (uint64), a uint32
ggml type and a uint64 offset into the data section, which starts at the next multiple of
``general.alignment`` (32 when absent). All little-endian.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

from core.model.errors import ConfigError

MAGIC = b"GGUF"
VERSIONS = range(1, 4)
"""The format versions llama.cpp reads (1 to 3)."""

# Value types: their struct format (fixed size), or None for string (8) and array (9).
_SCALARS: dict[int, str] = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9
# A header with more keys or tensors than these is not a model file we can trust (real ones have ~30-50
# keys and a few hundred to a few thousand tensors).
_MAX_KEYS = 10_000
_MAX_TENSORS = 1_000_000
_MAX_DIMS = 8
_DEFAULT_ALIGNMENT = 32

# ggml tensor types: (values per block, bytes per block), from ggml's type traits. A type missing here (a
# newer one) is measured by its offset alone, which still catches a file cut before its last tensor starts.
_BLOCKS: dict[int, tuple[int, int]] = {
    0: (1, 4),  # F32
    1: (1, 2),  # F16
    2: (32, 18),  # Q4_0
    3: (32, 20),  # Q4_1
    6: (32, 22),  # Q5_0
    7: (32, 24),  # Q5_1
    8: (32, 34),  # Q8_0
    9: (32, 36),  # Q8_1
    10: (256, 84),  # Q2_K
    11: (256, 110),  # Q3_K
    12: (256, 144),  # Q4_K
    13: (256, 176),  # Q5_K
    14: (256, 210),  # Q6_K
    15: (256, 292),  # Q8_K
    24: (1, 1),  # I8
    25: (1, 2),  # I16
    26: (1, 4),  # I32
    27: (1, 8),  # I64
    28: (1, 8),  # F64
    30: (1, 2),  # BF16
}


@dataclass(frozen=True)
class GGUFInfo:
    """What the header says: ``name`` (``general.name``, else the file's stem), ``architecture``
    (``llama``, ``qwen2``...) and ``context_length`` (the trained context window; None when absent)."""

    name: str
    architecture: str | None
    context_length: int | None
    size_bytes: int


class _Corrupt(Exception):
    """Internal: the header ends early or holds an impossible value."""


def read_gguf(path: Path) -> GGUFInfo:
    """The header facts of the GGUF file at ``path``. ConfigError when the file is missing, unreadable,
    not a GGUF file (wrong magic bytes), of a format version llama.cpp does not read, damaged in its header,
    or shorter than its tensor table says (a download cut off)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as file:
            magic = file.read(4)
            if magic != MAGIC:
                raise ConfigError(
                    f"{path} is not a GGUF model file (it starts with {magic!r}, not b'GGUF')",
                    hint="give model: local a .gguf file (llama.cpp's format), or download the file again",
                )
            with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
                values, needed = _Header(data, path).read()
    except FileNotFoundError:
        raise ConfigError(
            f"the model file {path} does not exist",
            hint="fix the path after model: local: (relative to the blueprint's folder) or [local] model_path",
        ) from None
    except IsADirectoryError:
        raise ConfigError(f"the model path {path} is a folder, not a GGUF file", hint="name the .gguf file") from None
    except OSError as exc:
        raise ConfigError(f"cannot read the model file {path}: {exc.strerror}", hint="check its permissions") from None
    except _Corrupt as exc:
        raise ConfigError(
            f"the model file {path} is damaged: {exc}", hint="download the file again (its header is incomplete)"
        ) from None
    if size < needed:
        raise ConfigError(
            f"the model file {path} is cut off: it holds {size:,} bytes, and its tensors need {needed:,}",
            hint="download the file again (the copy is incomplete)",
        )
    architecture = values.get("general.architecture")
    architecture = architecture if isinstance(architecture, str) else None
    length = values.get(f"{architecture}.context_length") if architecture else None
    name = values.get("general.name")
    return GGUFInfo(
        name=name if isinstance(name, str) and name else path.stem,
        architecture=architecture,
        context_length=length if isinstance(length, int) and length > 0 else None,
        size_bytes=size,
    )


class _Header:
    """A reader of the header in ``data`` (the mapped file), from just after the magic bytes."""

    def __init__(self, data: mmap.mmap, path: Path) -> None:
        self.data = data
        self.at = 4
        self.path = path

    def read(self) -> tuple[dict[str, object], int]:
        """The scalar and string values of the header (arrays, such as the vocabulary, are skipped), and the
        size in bytes the file must have to hold every tensor."""
        (version,) = self.unpack("<I")
        if version not in VERSIONS:
            raise ConfigError(
                f"the model file {self.path} is GGUF version {version}, which llama.cpp does not read"
                f" (it reads versions {VERSIONS.start} to {VERSIONS.stop - 1})",
                hint="use a GGUF file made for llama.cpp, or download the file again",
            )
        count_format = "<I" if version == 1 else "<Q"
        (tensors,) = self.unpack(count_format)
        (count,) = self.unpack(count_format)
        if tensors == 0:
            raise _Corrupt("it holds no tensors")
        if tensors > _MAX_TENSORS:
            raise _Corrupt(f"it claims {tensors:,} tensors")
        if count > _MAX_KEYS:
            raise _Corrupt(f"it claims {count} header keys")
        values: dict[str, object] = {}
        for _ in range(count):
            key = self.string(count_format)
            (kind,) = self.unpack("<I")
            values[key] = self.value(kind, count_format)
        alignment = values.get("general.alignment", _DEFAULT_ALIGNMENT)
        if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
            raise _Corrupt(f"its alignment is {alignment!r}")
        end = 0
        for _ in range(tensors):
            end = max(end, self.tensor_end(count_format))
        start = -(-self.at // alignment) * alignment  # the data section starts at the next multiple
        return values, start + end

    def tensor_end(self, count_format: str) -> int:
        """Where the next tensor of the table ends, as an offset into the data section."""
        self.string(count_format)
        (dims,) = self.unpack("<I")
        if dims > _MAX_DIMS:
            raise _Corrupt(f"a tensor has {dims} dimensions")
        values = 1
        for _ in range(dims):
            (extent,) = self.unpack(count_format)
            values *= extent
        (kind,) = self.unpack("<I")
        (offset,) = self.unpack("<Q")
        per_block, block_bytes = _BLOCKS.get(kind, (1, 0))
        return offset + -(-values // per_block) * block_bytes

    def value(self, kind: int, count_format: str) -> object:
        if kind in _SCALARS:
            return self.unpack(_SCALARS[kind])[0]
        if kind == _STRING:
            return self.string(count_format)
        if kind == _ARRAY:
            (item_kind,) = self.unpack("<I")
            (length,) = self.unpack(count_format)
            if item_kind in _SCALARS:
                self.skip(length * struct.calcsize(_SCALARS[item_kind]))
            elif item_kind == _STRING:
                self.skip_strings(length, count_format)
            else:
                for _ in range(length):
                    self.value(item_kind, count_format)
            return None
        raise _Corrupt(f"unknown value type {kind}")

    def skip_strings(self, count: int, count_format: str) -> None:
        """Skip ``count`` strings unread: the vocabulary, tens of thousands of them, is most of a header, so
        this loop is kept to one unpack and one addition per string."""
        unpack = struct.Struct(count_format).unpack_from
        data, at, width = self.data, self.at, struct.calcsize(count_format)
        try:
            for _ in range(count):
                at += width + unpack(data, at)[0]
        except struct.error:
            raise _Corrupt("the header ends early") from None
        self.skip(at - self.at)

    def string(self, count_format: str) -> str:
        (length,) = self.unpack(count_format)
        if length > 1 << 24:
            raise _Corrupt(f"a {length}-byte header string")
        start = self.at
        self.skip(length)
        return self.data[start : self.at].decode("utf-8", "replace")

    def skip(self, size: int) -> None:
        if self.at + size > len(self.data):
            raise _Corrupt("the header ends early")
        self.at += size

    def unpack(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            raise _Corrupt("the header ends early")
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return values
