"""AgentSpec: the definition of an agent, independent of YAML (the blueprint compiler fills it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AgentSpec:
    """What an agent is. Exactly one of ``model``, ``python``, ``command`` or ``builtin`` is set.

    ``model`` is ``provider:name`` (``openai:gpt-4o-mini``, ``anthropic:claude-...``, ``ollama:llama3``,
    ``local:model.gguf``; the rows of ``core.model.providers``), ``local`` (the default model on this machine),
    or an offline kind: ``scripted`` (``replies`` in order, the last repeating) or ``echo``.
    ``python`` is ``package.module:function`` (sync or async callable of (input, context)).
    ``command`` is an argv list (input on stdin, JSON when not text; stdout parsed as JSON when it is).
    ``builtin`` is one of ``flujo.builtins.passthrough|stringify|ask_user``.
    ``timeout`` and ``max_retries`` left None take the provider's ``timeout_s`` and ``max_retries`` from
    the settings (a command agent's timeout then defaults to 300 seconds).
    ``examples`` are worked (user, assistant) exchanges a chat model is sent as earlier turns of the
    conversation, after the system prompt and before the history: small models copy a reply's length and
    tone from them better than from instructions.
    ``model_setting`` names the setting ``model`` was taken from when the blueprint does not say it
    (``profiles.NAME.model`` for an ensemble participant's ``model_profile``, ``history.summarizer_model``):
    an error about the model (a missing API key) tells the person to change that setting, since there is no
    ``model:`` of theirs to change.
    """

    name: str
    model: str | None = None
    system_prompt: str | None = None
    examples: tuple[tuple[str, str], ...] = ()
    output_schema: Mapping[str, Any] | None = None
    model_settings: Mapping[str, Any] = field(default_factory=dict)
    timeout: float | None = None
    max_retries: int | None = None
    replies: tuple[Any, ...] = ()
    python: str | None = None
    command: tuple[str, ...] = ()
    builtin: str | None = None
    context_window: int | None = None
    base_url: str | None = None
    model_setting: str | None = None

    @property
    def provider(self) -> str | None:
        """``openai``/``anthropic``/``ollama``/``local`` for model agents, ``scripted``/``echo`` offline, else None."""
        if self.model is None:
            return None
        return self.model.split(":", 1)[0] if ":" in self.model else self.model
