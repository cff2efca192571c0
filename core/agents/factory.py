"""build_agent: an AgentSpec plus the settings become a ready-to-call Agent.

The spec sets exactly one of ``model``, ``python``, ``command`` or ``builtin``. Models are a row of
``core.model.providers`` (``openai:<m>``, ``anthropic:<m>``, ``ollama:<m>``, ``local`` / ``local:FILE.gguf``),
whose ``api`` picks the agent class, or the offline ``scripted`` and ``echo``. Every problem that can be
known before a run starts (an unknown provider, a missing API key, a python path that does not import,
an invalid output_schema) is a ConfigError here, never a silent fallback. Provider modules are imported
only when an agent needs them, so importing ``core.agents`` stays cheap (no httpx, no jsonschema).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar, assert_never
from urllib.parse import urlsplit

from core.agents.spec import AgentSpec
from core.model.errors import ConfigError
from core.model.providers import OFFLINE_MODELS, PROVIDER_NAMES, Provider, find_provider, valid_models
from core.ports import Agent
from core.settings.config import ProviderSettings, Settings

if TYPE_CHECKING:
    from core.agents.http import Backoff, Endpoint

MODEL_PROVIDERS = PROVIDER_NAMES
BUILTIN_AGENTS = ("flujo.builtins.passthrough", "flujo.builtins.stringify")
_VALID_MODELS = valid_models()


def build_agent(
    spec: AgentSpec, settings: Settings, *, backoff: Backoff | None = None, defer_missing_key: bool = False
) -> Agent:
    """The agent ``spec`` describes. ``backoff`` sets the delays between provider retries (tests make
    them tiny); the number of retries is ``spec.max_retries``, else the provider's ``max_retries`` setting.
    Raises ConfigError.

    ``defer_missing_key``: a provider's missing API key is not an error yet: the agent is built, and its
    first request raises the ConfigError instead (``flujo test`` replays a case whose calls are served from
    its recording; the key is needed only if the replay goes live)."""
    kinds = [
        kind
        for kind, present in (
            ("model", spec.model is not None),
            ("python", spec.python is not None),
            ("command", bool(spec.command)),
            ("builtin", spec.builtin is not None),
        )
        if present
    ]
    if len(kinds) != 1:
        found = f" (it sets {' and '.join(kinds)})" if kinds else ""
        raise ConfigError(
            f"agents.{spec.name} must set exactly one of model, python, command or builtin{found}",
            hint=f"e.g. model: openai:gpt-4o-mini; valid models: {_VALID_MODELS}",
        )
    if spec.model is not None:
        return _model_agent(spec, spec.model, settings, backoff, defer_missing_key)
    if spec.python is not None:
        from core.agents.script import PythonAgent

        return PythonAgent(spec.python, name=spec.name)
    if spec.command:
        from core.agents.script import CommandAgent

        return CommandAgent(spec.command, name=spec.name, timeout=spec.timeout)
    return _builtin_agent(spec, spec.builtin or "")


def prompt_budget(spec: AgentSpec, window: int | None, reserve: int) -> int | None:
    """The context window minus the tokens kept free for the reply (``reply_share``); None when the window is
    unknown. Never below 1."""
    if window is None:
        return None
    return max(1, window - reply_share(spec, reserve))


def reply_share(spec: AgentSpec, reserve: int) -> int:
    """The tokens of the context window kept free for the reply: ``model_settings.max_tokens`` when set, else
    ``reserve``."""
    wanted = spec.model_settings.get("max_tokens")
    return wanted if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted > 0 else reserve


class _Budgeted(Protocol):
    prompt_budget: int | None
    reply_reserve: int | None


A = TypeVar("A", bound=_Budgeted)


def _sharing(agent: A, spec: AgentSpec, reserve: int) -> A:
    """``agent`` knowing its reply's share of the window (``reply_reserve``), which ``lens trace --why`` names
    beside its prompt budget."""
    if agent.prompt_budget is not None:
        agent.reply_reserve = reply_share(spec, reserve)
    return agent


def _model_agent(
    spec: AgentSpec, model: str, settings: Settings, backoff: Backoff | None, defer_missing_key: bool = False
) -> Agent:
    if model in OFFLINE_MODELS:
        from core.agents.offline import EchoAgent, ScriptedAgent

        offline_budget = prompt_budget(spec, spec.context_window, 0)
        if model == "echo":
            echo = EchoAgent(system_prompt=spec.system_prompt, examples=spec.examples, prompt_budget=offline_budget)
            return _sharing(echo, spec, 0)
        scripted = ScriptedAgent(
            spec.replies,
            name=spec.name,
            system_prompt=spec.system_prompt,
            examples=spec.examples,
            output_schema=spec.output_schema,
            prompt_budget=offline_budget,
        )
        return _sharing(scripted, spec, 0)

    provider_name, colon, name = model.partition(":")
    row = find_provider(provider_name)
    if row is None or (not colon and not row.bare):
        guess = f"did you mean openai:{model}? " if not colon else ""
        raise ConfigError(
            f"agents.{spec.name}: unknown model provider {provider_name!r} in model: {model}",
            hint=f"{guess}valid models: {_VALID_MODELS}",
        )
    if colon and not name:
        raise ConfigError(
            f"agents.{spec.name}: model: {model} names no model",
            hint=f"write the model after the colon, e.g. {row.example}",
        )
    if row.api == "local":
        return _local_agent(spec, name or None, settings, backoff)
    if row.api == "openai" or row.api == "anthropic":
        return _http_agent(spec, row, model, name, settings, backoff, defer_missing_key)
    assert_never(row.api)


def _local_agent(spec: AgentSpec, file: str | None, settings: Settings, backoff: Backoff | None) -> Agent:
    from core.agents.http import Backoff, Endpoint
    from core.agents.local_chat import LocalChatAgent
    from core.agents.local_server import LocalModel

    local = LocalModel.resolve(file, settings.local)
    reply = spec.model_settings.get("max_tokens")
    endpoint = Endpoint(
        label=f"local model {local.label}",
        base_url="http://127.0.0.1",  # the server's own URL replaces it when it starts, on the first call
        timeout=spec.timeout if spec.timeout is not None else settings.local.timeout_s,
        max_retries=spec.max_retries if spec.max_retries is not None else settings.local.max_retries,
        headers={"Connection": "close"},
        backoff=backoff or Backoff(),
        unreachable_hint="the local model's server stopped; run again (flujo resume RUN_ID)",
        agent=spec.name,
    )
    reserve = reply if isinstance(reply, int) and not isinstance(reply, bool) else settings.local.max_tokens
    budget = prompt_budget(spec, spec.context_window or local.context_window, reserve)
    return _sharing(LocalChatAgent(spec, endpoint, local, prompt_budget=budget), spec, reserve)


def _http_agent(
    spec: AgentSpec,
    row: Provider,
    model: str,
    name: str,
    settings: Settings,
    backoff: Backoff | None,
    defer_missing_key: bool = False,
) -> Agent:
    conf = settings.provider(row.name)
    base_url = (spec.base_url or conf.base_url).rstrip("/")
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(
            f"agents.{spec.name}: the base URL {base_url!r} for {model} is not an http:// or https:// URL",
            hint="fix base_url in the blueprint or flujo.toml, or the *_BASE_URL environment variable",
        )
    api_key = conf.api_key.get_secret_value() if conf.api_key is not None else None
    price = settings.model_info(model)
    budget = prompt_budget(
        spec,
        spec.context_window or price.context_window or settings.default_context_window,
        settings.response_reserve_tokens,
    )

    if row.api == "anthropic":
        from core.agents.anthropic_chat import AnthropicChatAgent, anthropic_headers

        missing = None if api_key else _missing_key(spec, model, row.key_env or "ANTHROPIC_API_KEY", "")
        if missing is not None and not defer_missing_key:
            raise missing
        endpoint = _endpoint(
            spec,
            model,
            base_url,
            conf,
            backoff,
            headers=anthropic_headers(api_key or ""),
            auth_hint=row.auth_hint,
            unreachable_hint=row.unreachable_hint,
            missing_key=missing,
        )
        anthropic = AnthropicChatAgent(spec, endpoint, model=name, price=price, prompt_budget=budget)
        return _sharing(anthropic, spec, settings.response_reserve_tokens)

    from core.agents.openai_chat import OpenAIChatAgent, openai_headers

    missing = None
    if row.key_required and not api_key and _is_openai_cloud(base_url):
        missing = _missing_key(
            spec, model, row.key_env or "OPENAI_API_KEY", ", point OPENAI_BASE_URL at a local OpenAI-compatible server"
        )
        if not defer_missing_key:
            raise missing
    endpoint = _endpoint(
        spec,
        model,
        base_url,
        conf,
        backoff,
        headers=openai_headers(api_key),
        auth_hint=row.auth_hint,
        unreachable_hint=row.unreachable_hint,
        missing_key=missing,
    )
    mode = conf.structured_output or row.structured_output
    openai = OpenAIChatAgent(spec, endpoint, model=name, price=price, structured_output=mode, prompt_budget=budget)
    return _sharing(openai, spec, settings.response_reserve_tokens)


def _endpoint(
    spec: AgentSpec,
    model: str,
    base_url: str,
    conf: ProviderSettings,
    backoff: Backoff | None,
    *,
    headers: dict[str, str],
    auth_hint: str,
    unreachable_hint: str,
    missing_key: ConfigError | None = None,
) -> Endpoint:
    from core.agents.http import Backoff, Endpoint

    return Endpoint(
        label=model,
        base_url=base_url,
        # The agent's own values win; the provider's settings are the defaults.
        timeout=spec.timeout if spec.timeout is not None else conf.timeout_s,
        max_retries=spec.max_retries if spec.max_retries is not None else conf.max_retries,
        headers=headers,
        backoff=backoff or Backoff(),
        auth_hint=auth_hint,
        unreachable_hint=unreachable_hint,
        agent=spec.name,
        missing_key=missing_key,
    )


def _missing_key(spec: AgentSpec, model: str, variable: str, alternative: str) -> ConfigError:
    """The error of a model whose API key is not set. Its hint's other way out is the ``model:`` the blueprint
    gives the agent, or, for a model taken from the settings (an ensemble participant's profile), that
    setting: ``model: scripted`` is no way out there (a profile has no replies), ``echo`` is."""
    setting = spec.model_setting
    other = (
        "use model: scripted for an offline run"
        if setting is None
        else f"set {setting} to another model in flujo.toml (--set {setting}=echo runs offline)"
    )
    return ConfigError(
        f"agents.{spec.name} uses {model} but {variable} is not set",
        hint=f"export {variable}=...{alternative}, or {other}",
    )


def _is_openai_cloud(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    return host == "api.openai.com" or host.endswith(".openai.com")


def _builtin_agent(spec: AgentSpec, builtin: str) -> Agent:
    from core.agents.script import BUILTINS

    make = BUILTINS.get(builtin)
    if make is not None:
        return make()
    if builtin == "flujo.builtins.ask_user":
        raise ConfigError(
            f"agents.{spec.name}: flujo.builtins.ask_user asks the human; it is a step, not an agent",
            hint="use a step of kind: hitl",
        )
    raise ConfigError(
        f"agents.{spec.name}: unknown builtin {builtin!r}",
        hint=f"valid builtins: {', '.join(BUILTIN_AGENTS)}",
    )
