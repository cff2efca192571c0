"""Reading what flujo needs from a GGUF model file's header, before llama.cpp is asked to load it.

llama.cpp's Python binding raises the same ``RuntimeError`` for a missing file, a file that is not a
model and one too big for memory, so ``check_model_file`` tells them apart first, each as one ConfigError
saying what is wrong and what fixes it. ``read_gguf`` reads the header's key/value section (the model's
name, architecture and trained context length); it reads no tensor data, so it takes milliseconds.

The format (ggml's docs/gguf.md): the magic ``GGUF``, a uint32 version, the tensor count and the key/value
count (uint64 since version 2), then each key (a uint64-length UTF-8 string), a uint32 value type and
the value. All little-endian.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from core.errors import ConfigError

MAGIC = b"GGUF"
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
# A header with more keys than this is not a model file we can trust (the real ones have ~30-50).
_MAX_KEYS = 10_000


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
    not a GGUF file (wrong magic bytes) or its header is damaged."""
    try:
        size = path.stat().st_size
        with path.open("rb") as file:
            magic = file.read(4)
            if magic != MAGIC:
                raise ConfigError(
                    f"{path} is not a GGUF model file (it starts with {magic!r}, not b'GGUF')",
                    hint="give model: local a .gguf file (llama.cpp's format), or download the file again",
                )
            values = _header(file)
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


def _header(file: BinaryIO) -> dict[str, object]:
    """The scalar and string values of the header (arrays, such as the vocabulary, are skipped)."""
    (version,) = _unpack(file, "<I")
    if version == 1:
        tensors, count = _unpack(file, "<II")
    else:
        tensors, count = _unpack(file, "<QQ")
    if tensors == 0:
        raise _Corrupt("it holds no tensors")
    if count > _MAX_KEYS:
        raise _Corrupt(f"it claims {count} header keys")
    values: dict[str, object] = {}
    for _ in range(count):
        key = _string(file)
        (kind,) = _unpack(file, "<I")
        values[key] = _value(file, kind)
        architecture = values.get("general.architecture")
        if isinstance(architecture, str) and f"{architecture}.context_length" in values:
            break  # all we need; the vocabulary arrays that follow take most of the header's time
    return values


def _value(file: BinaryIO, kind: int) -> object:
    if kind in _SCALARS:
        return _unpack(file, _SCALARS[kind])[0]
    if kind == _STRING:
        return _string(file)
    if kind == _ARRAY:
        (item_kind,) = _unpack(file, "<I")
        (length,) = _unpack(file, "<Q")
        if item_kind in _SCALARS:
            file.seek(length * struct.calcsize(_SCALARS[item_kind]), 1)
        else:
            for _ in range(length):
                _value(file, item_kind)
        return None
    raise _Corrupt(f"unknown value type {kind}")


def _string(file: BinaryIO) -> str:
    (length,) = _unpack(file, "<Q")
    if length > 1 << 24:
        raise _Corrupt(f"a {length}-byte header string")
    data = file.read(length)
    if len(data) != length:
        raise _Corrupt("the header ends early")
    return data.decode("utf-8", "replace")


def _unpack(file: BinaryIO, fmt: str) -> tuple[int, ...]:
    size = struct.calcsize(fmt)
    data = file.read(size)
    if len(data) != size:
        raise _Corrupt("the header ends early")
    return struct.unpack(fmt, data)
