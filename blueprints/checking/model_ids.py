"""Whether a model id names a model flujo can run, and the words for what is wrong with one.

A model id is ``provider:model`` (a row of ``core.model.providers``), a provider that runs without a model
name (``local``), or an offline model (``scripted``, ``echo``). The check of ``agents:`` in a blueprint and
the check of ``--model`` on the command line both ask ``model_id_problem``, so they say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass

from blueprints.reading.suggestions import did_you_mean, one_of
from core import OFFLINE_MODELS, PROVIDER_NAMES, find_provider, provider_of


@dataclass(frozen=True)
class ModelIdProblem:
    """What is wrong with a model id (``message``, without saying whose it is) and what to write instead."""

    message: str
    hint: str | None = None


def model_id_problem(model: str) -> ModelIdProblem | None:
    """What is wrong with ``model`` as a model id, or None when flujo knows how to run it. Whether a
    ``local:FILE`` exists, and whether ``scripted`` has replies, are for the caller to check."""
    provider, colon, model_name = model.partition(":")
    if not colon and provider_of(model) is not None:
        return None  # a provider that runs without a model name (model: local)
    if colon:
        if provider not in PROVIDER_NAMES:
            return ModelIdProblem(
                f"unknown provider {provider!r}{did_you_mean(provider, PROVIDER_NAMES)}",
                f"providers: {one_of(PROVIDER_NAMES)} (openai: works with any OpenAI-compatible server)",
            )
        row = find_provider(provider)
        if not model_name and row is not None:
            return ModelIdProblem(f"model {model!r} names no model", f"e.g. {row.example}")
        return None
    if model not in OFFLINE_MODELS:
        return ModelIdProblem(
            f"unknown model {model!r}{did_you_mean(model, OFFLINE_MODELS)}",
            "write provider:model (openai:gpt-4o-mini), local (a model on this machine), "
            "or scripted / echo for offline runs",
        )
    return None
