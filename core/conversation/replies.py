"""What a reply says, read as data and as a person reads it.

``parse_reply`` reads a reply that is a JSON object (also inside a ```json fence) as that mapping: an
ensemble's accumulated context takes its keys. ``shown_text`` is a structured reply's text for a person: a
decision agent's ``{"action": "ask", "question": "Who is it for?"}`` reads ``Who is it for?`` in
``output: {text: conversation_history}`` and ``flujo threads show``. What is shown never replaces what was
said: a model is sent its own reply as it wrote it (``ConversationTurn.content``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any

# A structured reply shows the first of these that it holds as non-blank text (docs/conversation.md).
SHOWN_FIELDS = ("question", "message", "text", "answer", "summary")


@functools.cache  # compiled at the first reply parsed (at import, it cost every run 0.6 M instructions)
def _fence() -> re.Pattern[str]:
    return re.compile(r"^\s*```(?:json|JSON)?\s*\n(.*?)\n?```\s*$", re.DOTALL)


def parse_reply(output: Any) -> Any:
    """A reply as data: a text that is a JSON object (also inside a ```json fence) becomes that mapping;
    anything else stays as it is."""
    if not isinstance(output, str):
        return output
    text = output.strip()
    fenced = _fence().match(text)
    if fenced is not None:
        text = fenced.group(1).strip()
    if not text.startswith("{"):
        return output
    try:
        value = json.loads(text)
    except ValueError:
        return output
    return value if isinstance(value, dict) else output


def shown_text(value: Any) -> str | None:
    """The text a person reads for ``value`` when it is a structured reply (a mapping, or a JSON object
    as text): its first ``SHOWN_FIELDS`` entry holding non-blank text. None when it is not structured or
    holds none of them: then the reply is shown as it is."""
    data = parse_reply(value) if isinstance(value, str) and value.lstrip()[:1] in ("{", "`") else value
    if not isinstance(data, Mapping):
        return None
    for key in SHOWN_FIELDS:
        text = data.get(key)
        if isinstance(text, str) and text.strip():
            return text
    return None
