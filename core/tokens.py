"""Token counting, offline: the one place that maps a model to its tokenizer.

PLACEHOLDER (session 2 scaffolding): the estimate below is replaced by tiktoken with shipped encoding
files. The API is the contract the history manager and the usage reservation use:

- ``count_tokens(text, model=None)``: tokens of ``text`` for ``model`` (``openai:gpt-4o`` or ``gpt-4o``);
  ``model=None`` counts with the default encoding (history turns are counted once, this way).
- ``count_messages(messages, model=None)``: tokens of a chat prompt, including per-message overhead.
- ``estimate_tokens(text)``: the documented fallback for models with no known tokenizer.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.ports import ChatMessage

MESSAGE_OVERHEAD = 3  # role and separators per message (OpenAI's published accounting)
REPLY_PRIMING = 3  # every reply is primed with <|start|>assistant<|message|>


def estimate_tokens(text: str) -> int:
    """About four characters per token: the fallback when no tokenizer is known for a model."""
    return -(-len(text) // 4)


def count_tokens(text: str, model: str | None = None) -> int:
    return estimate_tokens(text)


def count_messages(messages: Sequence[ChatMessage], model: str | None = None) -> int:
    if not messages:
        return 0
    return REPLY_PRIMING + sum(MESSAGE_OVERHEAD + count_tokens(m.content, model) for m in messages)
