"""What ``codec`` packs stored values with: JSON codes, and a preset dictionary for deflate.

* ``JSON_CODES``: the fragments of JSON that flujo's stores write most (the keys of event payloads, of usages
  and of messages; references to stored texts), each written as one control character (the first as
  ``\x01``, the second as ``\x02``, ...). JSON text holds no control character (a JSON string escapes them),
  so a stored JSON text that holds one holds codes, and one that holds none reads as it is.
* ``EVENT_KINDS``: the trace event kinds, each stored as one control character in a SQLite store's
  ``events.kind`` (``codec.kind_code``, ``codec.kind_name``); ``STEP_STATUSES`` likewise in ``steps.status``.
* ``DICTIONARY``: what a text is compressed against (deflate's ``zdict``). A text of a few hundred bytes
  compressed alone finds few repeats in itself; against a dictionary of common English words and phrases
  (written by hand, from no particular text) they become references of two or three bytes. Deflate finds
  the nearest repeat soonest, so the most frequent fragments are the last.

Invariant: these tables never change. A stored value compressed against ``DICTIONARY`` names it by its
first byte (``VERSION``); JSON codes have no version: a new fragment takes a code not used yet (there
are 31), and ``codec.grow`` keeps reading the old ones. An older flujo cannot read either, which is why
the SQLite schema records ``m010_texts_by_hash``, which it does not know.
"""

from __future__ import annotations

VERSION = 1
"""The first byte of a value compressed against ``DICTIONARY``."""

_ENGLISH = (
    "Here is a summary of the main points. Let me know if you would like more detail on any of them. "
    "For example, you could also consider the following options, depending on your budget and schedule. "
    "Thank you for the question; it is a good one. In short, the answer depends on what you need. "
    "First, make sure that everything is ready before you start. Second, check the results again. "
    "However, there are a few things to keep in mind: the cost, the time it takes, and the people involved. "
    "Because of this, I would recommend that we should wait until next week, when more information is available. "
    "Would you like me to write a draft? I can help with that. Please tell me which one you prefer. "
    "Yes, of course. No, I do not think so. I am not sure, but I believe it was about the same as before. "
    "She said that he had already been there, and they were both very happy with how it went. "
    "We have been working on this for a long time, and there is still something important to add. "
    "It is important to note that this is only an estimate; the actual number may be higher or lower. "
    "Could you please confirm the date, the time and the place? Once I have them, I will update the plan. "
    "The first step is to understand the problem. The next step is to find out what has changed since then. "
    "They would rather know now than later, which is why it should be done as soon as possible. "
    "Although it may seem difficult at first, most people find that it becomes easier with practice. "
    "without between through another something anything everything nothing whether himself herself "
    "themselves yourself myself itself really always usually often sometimes perhaps probably certainly "
    "people family friends house world life morning evening night year month day hour minute question answer "
    "information example different possible important necessary available several little great small large "
)

DICTIONARY = _ENGLISH.encode("utf-8")
"""What ``codec.pack`` compresses a text against: at most 3,800 bytes, all inside deflate's window of 4 KB."""

JSON_CODES = (
    ',"history_injected":true,"history":{"conversation":"',
    ',"history_injected":false,"history":{"conversation":"',
    ',"dropped":0,"mode":"messages"}}',
    ',"dropped":0}}',
    ',"dropped":',
    ',"mode":"messages"}}',
    '{"role":"assistant","content":',
    '{"role":"user","content":',
    '{"role":"system","content":',
    '{"role":"tool","content":',
    '{"agent":"',
    '","messages":',
    ',"turns":',
    '{"output":',
    ',"model":"',
    ',"attempts":1,"usage":{"input_tokens":',
    ',"usage":{"input_tokens":',
    ',"output_tokens":',
    ',"requests":1,"cost_usd":0.0}}',
    ',"requests":',
    ',"cost_usd":',
    '{"message":',
    ',"answer":',
    '{"tool":"',
    '","arguments":',
    ',"result":',
    '{"$text":[',
    '{"$text":',
    ',"turn":',
)
"""JSON fragments by their code: ``chr(1 + index)``; the longer of two that begin alike first (``codec.shrink``
replaces them in this order)."""

EVENT_KINDS = (
    "agent.prompt", "agent.reply", "hitl.answer", "agent.call", "agent.started", "agent.process", "agent.repair",
    "agent.cut", "step.error", "history.not_injected", "history.summarized", "history.summarize_failed",
    "hitl.rejected", "loop.exit", "workflow.child", "conditional.branch", "parallel.done", "ensemble.done",
    "tool.call",
)  # fmt: skip
"""The trace event kinds a SQLite store writes as one control character each in ``events.kind`` (the first as
``\x01``): a conversation's iteration stores two or three events, and the kind's text was a tenth of an
event's row. A kind not here (a newer one) is written as it is; a stored kind that is no code reads as it is
(every store wrote those before ``m011_event_kind_codes``)."""

STEP_STATUSES = ("completed", "failed", "skipped", "paused")
"""The step statuses a SQLite store writes as one control character each in ``steps.status`` (the first as
``\x01``), as ``EVENT_KINDS``: a status that is no code reads as it is."""

JSON_CODE_KEYS = (
    '"history', '"dropped"', '"mode"', '"role"', '"agent"', '"messages"', '"turns"', '"output"', '"model"',
    '"usage"', '"output_tokens"', '"requests"', '"cost_usd"', '"message"', '"answer"', '"tool"', '"arguments"',
    '"result"', '"$text"', '"turn"',
)  # fmt: skip
"""What ``codec.shrink`` looks for before it replaces the fragments whose first key (in this order) it is."""
