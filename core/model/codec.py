"""How run-store records become SQLite rows and come back: JSON payloads, usage, status words.

Invariants: every payload (inputs, outputs, event payloads, usage) is stored as JSON text written with
``json.dumps(default=json_default, ensure_ascii=False)``: a view or mapping comes back as an object, a value
that JSON cannot represent as its ``str()``, tuples as lists; ``None`` is stored as SQL NULL. The SQLite
store keeps a JSON text shrunk, its common fragments written as codes, and compressed when long
(``pack_json``), and a text compressed (``pack``: against a preset dictionary, or zlib alone when long);
``load`` reads every form. Both stores
pass values through ``normalize`` so the in-memory store hands back exactly what the SQLite store would.
"""

from __future__ import annotations

import json
import re
import zlib
from _json import make_encoder
from collections.abc import Callable
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any, get_args

from core.model import pack_tables
from core.model.errors import StoreError
from core.model.records import RunRecord, RunStatus, RunUpdate, StepRecord, StepStatus
from core.model.usage import ZERO_USAGE, Usage
from core.model.views import ATOMIC, json_default

_RUN_STATUSES: frozenset[str] = frozenset(get_args(RunStatus))
_STEP_STATUSES: frozenset[str] = frozenset(get_args(StepStatus))
_DAMAGED = "the database may be damaged"


def _not_plain(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# The C encoder that ``JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode`` makes on every call,
# made once. Without the check for cycles (``markers``): what ``compact`` is given is plain data the store
# has just built (``texts.split``, ``shared_lists.finish``), which has none; a step writes ~8 of them.
_COMPACT = make_encoder(None, _not_plain, encode_basestring, None, ":", ",", False, False, True)


def dump(value: Any) -> str | None:
    """JSON text for ``value``; None stays None (stored as NULL)."""
    if value is None:
        return None
    return _dump(value)


def _dump(value: Any) -> str:
    """``JSONEncoder(default=json_default, ensure_ascii=False).encode(value)`` without its two Python layers:
    the C encoder it makes (a new one each time: its check for cycles keeps state while it encodes)."""
    if type(value) is str:
        return encode_basestring(value)
    return "".join(make_encoder({}, json_default, encode_basestring, None, ": ", ", ", False, False, True)(value, 0))


def compact(value: Any) -> str:
    """Compact JSON text of plain data (``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``):
    how the stores write a value once its long texts are references. Plain data only: a value that holds
    itself is not detected as such (it exhausts the recursion limit)."""
    if type(value) is str:
        return encode_basestring(value)
    return "".join(_COMPACT(value, 0))


# json.loads' own scanner (C), which it reaches through three Python layers (typeshed leaves the attribute out).
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _loads(text: str) -> Any:
    """``json.loads(text)``: a text that is one JSON value from its first character to its last (all that the
    stores write) is scanned directly; anything else (whitespace around it, or not JSON) goes to json.loads,
    which reads it or raises as it does."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def load(text: str | bytes | None) -> Any:
    """The value ``dump`` wrote (or that ``pack_json`` packed)."""
    if text is None:
        return None
    return _parsed(grow(unpack(text)))


def _parsed(text: str) -> Any:
    try:
        return _loads(text)
    except json.JSONDecodeError as exc:
        raise StoreError(f"a stored value is not valid JSON: {exc}", hint=_DAMAGED) from exc


_CODE = {fragment: chr(1 + index) for index, fragment in enumerate(pack_tables.JSON_CODES)}
_GROW = {1 + index: fragment for index, fragment in enumerate(pack_tables.JSON_CODES)}
_A_CODE = re.compile(r"[\x01-\x1f]").search
_REFERENCE = '{"$text":'
_REFERENCE_CODE = _CODE[_REFERENCE]


def _first_key(fragment: str) -> str:
    return next(key for key in pack_tables.JSON_CODE_KEYS if key in fragment)


# The codes in groups, each looked for only when the text holds its key (a step's write shrinks some eight
# texts: a search per group instead of one per code). A fragment whose key is missing is left as it is,
# which ``grow`` reads the same.
_GROUPS = tuple(
    (key, tuple((fragment, _CODE[fragment]) for fragment in pack_tables.JSON_CODES if _first_key(fragment) == key))
    for key in pack_tables.JSON_CODE_KEYS
)


def shrink(json_text: str) -> str:
    """``json_text`` with the fragments of ``pack_tables.JSON_CODES`` written as their codes (one character)."""
    if len(json_text) < 24:  # a reference to a stored text (a step's input or output), or a short value
        return json_text.replace(_REFERENCE, _REFERENCE_CODE)
    for key, codes in _GROUPS:
        if key in json_text:
            for fragment, code in codes:
                json_text = json_text.replace(fragment, code)
    return json_text


def grow(text: str) -> str:
    """The JSON text ``shrink`` was given (a text without codes, as every store wrote before, is that)."""
    return text if _A_CODE(text) is None else text.translate(_GROW)


PACK_FROM = 256
"""Texts at least this long (in UTF-8 bytes) are stored compressed when that makes them smaller."""

PACK_JSON_FROM = 256
"""JSON texts at least this long, once shrunk (``shrink``), are compressed as texts are."""

ALONE_FROM = 3072
"""Texts at least this long are compressed alone (zlib, its whole window); shorter ones against
``pack_tables.DICTIONARY``, inside a window of 4 KB."""

_WINDOW_BITS = 12  # deflate's window: 4 KB, the dictionary and a text shorter than ALONE_FROM inside it
_MARK = bytes([pack_tables.VERSION])
# A compressor and a decompressor primed with the dictionary once; each value gets a copy of one (deflate's
# state copied: cheaper than building it and hashing the dictionary again). Raw deflate: no zlib header nor
# checksum (6 bytes a value); the first byte names the dictionary instead.
_PRIMED = zlib.compressobj(6, zlib.DEFLATED, -_WINDOW_BITS, 5, zlib.Z_DEFAULT_STRATEGY, pack_tables.DICTIONARY)
_PRIMED_READER = zlib.decompressobj(-_WINDOW_BITS, pack_tables.DICTIONARY)


def pack_json(json_text: str) -> str | bytes:
    """A JSON text as the SQLite store keeps it: shrunk (``shrink``), then compressed as ``pack`` does when
    still ``PACK_JSON_FROM`` bytes or more. ``load`` reads it, and every form stored before."""
    shrunk = shrink(json_text)
    return shrunk if len(shrunk) < PACK_JSON_FROM else pack(shrunk)


def pack(text: str) -> str | bytes:
    """``text`` as the SQLite store keeps it: as it is (TEXT), or compressed (a BLOB) when that is smaller.

    A text of ``PACK_FROM`` bytes or more is compressed against the preset dictionary (``pack_tables``): its
    version byte, then raw deflate; one of ``ALONE_FROM`` bytes or more with zlib alone (a zlib stream, whose
    first byte is never a version byte). ``unpack`` tells the forms apart, so rows written before either
    existed read the same."""
    encoded = text.encode("utf-8")
    size = len(encoded)
    if size < PACK_FROM:
        return text
    if size >= ALONE_FROM:
        packed = zlib.compress(encoded, 6)
        return packed if len(packed) * 10 <= size * 9 else text
    compressor = _PRIMED.copy()
    packed = _MARK + compressor.compress(encoded) + compressor.flush()
    return packed if len(packed) < size else text


def unpack(value: str | bytes) -> str:
    """The text ``pack`` stored."""
    if isinstance(value, str):
        return value
    try:
        if value[:1] == _MARK:
            reader = _PRIMED_READER.copy()
            text = reader.decompress(memoryview(value)[1:]) + reader.flush()
            if not reader.eof or reader.unused_data:
                raise zlib.error("the compressed value is cut short or followed by other bytes")
            return text.decode("utf-8")
        return zlib.decompress(value).decode("utf-8")
    except (zlib.error, UnicodeDecodeError) as exc:
        raise StoreError(f"a stored value cannot be decompressed: {exc}", hint=_DAMAGED) from exc


def normalize(value: Any) -> Any:
    """``value`` as it comes back from storage (a JSON round trip; a text, number, boolean or None is
    already that)."""
    if type(value) in ATOMIC:
        return value
    return _parsed(_dump(value))


def dump_payload(payload: Any) -> str:
    """JSON text of an event payload (never NULL)."""
    return _dump(dict(payload))


def load_payload(text: str | bytes) -> dict[str, Any]:
    value = load(text)
    if not isinstance(value, dict):
        raise StoreError("a stored event payload is not a JSON object", hint=_DAMAGED)
    return value


# ``json.dumps``' own encoder for a usage, compact (numbers or None under text keys: no cycle to check), made once.
_USAGE = make_encoder(None, _not_plain, encode_basestring_ascii, None, ":", ",", False, False, True)


def dump_usage(usage: Usage) -> str:
    """The compact JSON of ``usage`` (every step's row has one) without the counts that are 0 and a cost of
    0.0: what ``load_usage`` reads as such (``{}`` for no usage; an unknown cost stays ``null``). Every
    flujo's ``load_usage`` reads it."""
    data = usage.to_dict()
    return "".join(_USAGE({key: value for key, value in data.items() if value != 0}, 0))


def load_usage(text: str | None) -> Usage:
    if text is None:
        return ZERO_USAGE
    data = load(text)
    if not isinstance(data, dict):
        raise StoreError("a stored usage is not a JSON object", hint=_DAMAGED)
    cost = data.get("cost_usd", 0.0)
    try:
        return Usage(
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            requests=int(data.get("requests", 0)),
            cost_usd=None if cost is None else float(cost),
            interrupted=int(data.get("interrupted", 0)),
        )
    except (TypeError, ValueError) as exc:
        raise StoreError(f"a stored usage is not counts of tokens: {exc}", hint=_DAMAGED) from None


_LATEST_TIME = 253402300799.0  # 9999-12-31T23:59:59Z, the last moment a date can show


def timestamp(value: Any, *, what: str) -> float:
    """A stored time (seconds since the epoch) checked; StoreError naming ``what`` when it is not one."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= _LATEST_TIME:
        return float(value)
    raise StoreError(f"the store holds {value!r:.60} as the {what}, which is not a time", hint=_DAMAGED)


def optional_timestamp(value: Any, *, what: str) -> float | None:
    return None if value is None else timestamp(value, what=what)


def run_status(text: str) -> RunStatus:
    """``text`` checked against the run statuses flujo knows."""
    if text not in _RUN_STATUSES:
        raise StoreError(f"unknown run status {text!r} in the store", hint="upgrade flujo")
    return text  # type: ignore[return-value]  # checked against get_args(RunStatus) above


_KIND_CODE = {kind: chr(1 + index) for index, kind in enumerate(pack_tables.EVENT_KINDS)}
_KIND_NAME = {code: kind for kind, code in _KIND_CODE.items()}


def kind_code(kind: str) -> str:
    """How a SQLite store writes the event kind ``kind`` (``pack_tables.EVENT_KINDS``): its code, or itself."""
    return _KIND_CODE.get(kind, kind)


def kind_name(stored: str) -> str:
    """The event kind a store holds as ``stored`` (``kind_code``'s undone; a kind that is no code is itself)."""
    return _KIND_NAME.get(stored, stored)


_STATUS_CODE = {status: chr(1 + index) for index, status in enumerate(pack_tables.STEP_STATUSES)}
_STATUS_NAME = {code: status for status, code in _STATUS_CODE.items()}


def step_status(text: str) -> StepStatus:
    """``text`` checked against the step statuses flujo knows (a SQLite store's code of one read as its name:
    ``pack_tables.STEP_STATUSES``)."""
    text = _STATUS_NAME.get(text, text)
    if text not in _STEP_STATUSES:
        raise StoreError(f"unknown step status {text!r} in the store", hint="upgrade flujo")
    return text  # type: ignore[return-value]  # checked against get_args(StepStatus) above


RUN_COLUMNS = (
    "run_id, pipeline_name, status, source, source_hash, input, output, error, created_at, finished_at,"
    " usage, parent_run_id, thread, pause_path, pause_message, owner, options"
)
RUN_COLUMNS_WITHOUT_VALUES = RUN_COLUMNS.replace(" input, output,", " NULL, NULL,")
"""``RUN_COLUMNS`` with NULL for the input and output: a listing's rows (``RunStore.list_runs(values=False)``),
which read and decompress none of the runs' texts."""
STEP_COLUMNS = "run_id, path, name, kind, status, input, output, error, started_at, duration_s, usage"


def plain(value: Any) -> Any:
    """``value`` as plain JSON data (dicts, lists, str, numbers, bool, None): what ``load(dump(value))`` gives."""
    return normalize(value)


def run_row(run: RunRecord, input: str | bytes | None, output: str | bytes | None) -> tuple[Any, ...]:
    """The values of ``RUN_COLUMNS`` for ``run``, its input and output already encoded."""
    return (
        run.run_id, run.pipeline_name, run.status, run.source, run.source_hash, input,
        output, run.error, run.created_at, run.finished_at, dump_usage(run.usage),
        run.parent_run_id, run.thread, run.pause_path, run.pause_message, run.owner, dump(run.options),
    )  # fmt: skip


def run_from_row(row: Any) -> RunRecord:
    """The run in a row of ``RUN_COLUMNS``."""
    return RunRecord(
        run_id=row[0],
        pipeline_name=row[1],
        status=run_status(row[2]),
        source=row[3],
        source_hash=row[4],
        input=load(row[5]),
        output=load(row[6]),
        error=row[7],
        created_at=timestamp(row[8], what=f"start time of run {row[0]}"),
        finished_at=optional_timestamp(row[9], what=f"end time of run {row[0]}"),
        usage=load_usage(row[10]),
        parent_run_id=row[11],
        thread=row[12],
        pause_path=row[13],
        pause_message=row[14],
        owner=row[15],
        options=load(row[16]),
    )


UPDATE_RUN_SET = (
    "status = {0}, output = COALESCE({0}, output), error = COALESCE({0}, error), usage = COALESCE({0}, usage),"
    " finished_at = COALESCE({0}, finished_at), pause_path = {0}, pause_message = {0},"
    " options = COALESCE({0}, options)"
)
"""The ``SET`` clause of a run's update, its parameter mark (``?``, ``%s``) left as ``{0}``: ``update_row``
gives its values; a value that is None leaves the stored one (except the pause point, always set)."""


def update_row(update: RunUpdate, output: str | bytes | None) -> tuple[Any, ...]:
    """The values of ``UPDATE_RUN_SET`` for ``update``, its output already encoded as ``output``."""
    return (
        update.status, output, update.error, None if update.usage is None else dump_usage(update.usage),
        update.finished_at, update.pause_path, update.pause_message, dump(update.options),
    )  # fmt: skip


def step_row(
    step: StepRecord, input: str | bytes | None, output: str | bytes | None, *, coded: bool = False
) -> tuple[Any, ...]:
    """The values of ``STEP_COLUMNS`` for ``step``, its input and output already encoded; with ``coded`` (a
    SQLite store, since ``m011_event_kind_codes``) its status as one character (``pack_tables.STEP_STATUSES``)."""
    status = _STATUS_CODE[step.status] if coded else step.status
    return (
        step.run_id, step.path, step.name, step.kind, status, input, output,
        step.error, step.started_at, step.duration_s, dump_usage(step.usage),
    )  # fmt: skip


def step_from_row(row: Any, input: Any = None, output: Any = None) -> StepRecord:
    """The step in a row of ``STEP_COLUMNS``; ``input`` and ``output`` when given are its values already
    decoded (the SQLite store decodes them first to put back their long texts)."""
    return StepRecord(
        run_id=row[0],
        path=row[1],
        name=row[2],
        kind=row[3],
        status=step_status(row[4]),
        input=load(row[5]) if input is None else input,
        output=load(row[6]) if output is None else output,
        error=row[7],
        started_at=row[8],
        duration_s=row[9],
        usage=load_usage(row[10]),
    )
