"""``flujo lens trace RUN --json`` written as it is read: the document ``trace_document`` makes (docs/cli.md),
byte for byte as ``json.dumps(masked_document(trace_document(tree)), ensure_ascii=False)`` writes it, one line,
but a part at a time (``lens.parts``), so its first bytes are out before the run's events are read and its
memory does not grow with the run.

The run's fields come first, from its record alone; then its own events, then its spans, each part written
as soon as it is built. Every value is masked twice, as ``masked_document`` masks the finished document again
(keys included), by the ``Masker`` that masked the records, which remembers what it masked: a text is masked
once however often it comes back (a conversation's turns, in every prompt that injected them), not once
for each record and again for the document.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from core import Redactor, RunRecord, RunStore, sensitive_key
from lens.documents import node_document, run_with_values, trace_event
from lens.masking import Masker
from lens.parts import ROWS, Closed, Opened, RunParts, Whole

_LISTS = ("events", "children")  # the keys whose lists are written an item at a time
assert not any(sensitive_key(key) for key in ("run", "spans", *_LISTS)), "a key whose value masking would hide"


async def write_trace(
    store: RunStore,
    record: RunRecord,
    *,
    redactor: Redactor,
    write: Callable[[str], object],
    flush: Callable[[], object],
    rows: int = ROWS,
    kinds: Mapping[str, str] | None = None,
) -> None:
    """Write the ``--json`` trace of the run of ``record`` (as stored, as shown: ``lens.listing.as_shown``)
    with ``write``, calling ``flush`` after each part (of ``rows`` rows: ``lens.parts``)."""
    masker = Masker(redactor, again=True)
    parts = RunParts(store, record, masker, rows=rows, kinds=kinds)
    key = _key(masker)
    write("{" + key("run") + ": " + _opened(masker.value(run_with_values(parts.masked)), key("events")))
    flush()
    first = True
    async for event in parts.events():
        write(("" if first else ", ") + _dumps(masker.value(trace_event(event))))
        first = False
    write("]}, " + key("spans") + ": [")
    flush()
    firsts = [True]  # for each list open: whether its next item is its first
    async for piece in parts.spans():
        match piece:
            case Whole(nodes=nodes):
                documents = [masker.value(found) for node in nodes if (found := node_document(node)) is not None]
                if not documents:
                    continue
                write(("" if firsts[-1] else ", ") + _dumps(documents)[1:-1])  # the items, as in their list
                firsts[-1] = False
            case Opened(node=node):
                document = node_document(node)
                assert document is not None
                del document["children"]  # the last key: what follows are its items
                write(("" if firsts[-1] else ", ") + _opened(masker.value(document), key("children")))
                firsts[-1] = False
                firsts.append(True)
            case Closed():
                write("]}")
                firsts.pop()
        flush()
    write("]}\n")
    flush()


def _key(masker: Masker) -> Callable[[str], str]:
    """A key of the document as ``masked_document`` writes it: masked, in JSON."""
    return lambda key: _dumps(masker.text(key))


def _opened(document: dict[str, Any], key: str) -> str:
    """``document`` written up to a last key ``key`` whose list's items follow: ``{..., "key": [``."""
    return _dumps(document)[:-1] + ", " + key + ": ["


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
