"""Checking settings data against the settings' dataclasses (``core.settings.config``, ``core.text.bounds``).

The settings are plain dataclasses, so that reading them, or a copy kept on disk (``core.settings.kept_settings``),
imports none of pydantic's model machinery (a model class alone costs a ``flujo run`` a large part of its
start-up). What checks a value beyond its type is written in the dataclasses' annotations, as text
(``from __future__ import annotations``): ``Field(gt=0)`` constraints and the names of the checks defined
here (``DefaultModel``, ``SummarizerModel``, ``OtelEndpoint``, ``RedactPattern``). pydantic reads a
dataclass's annotations in its module's namespace, so ``check`` puts these names there before it builds
the one ``TypeAdapter`` (mypy reads them under ``TYPE_CHECKING``). This is the only settings module that
imports pydantic, and it is imported only when settings data are checked or the JSON Schema is written.

Invariant: a refusal reads as it did when the settings were pydantic models (``Problem``): the dataclass
wording of an unknown key, a missing one or a value that is no table is translated to the models'.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Annotated, Any, NamedTuple, TypeVar

from pydantic import AfterValidator, Field, TypeAdapter, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from core.model.providers import PROVIDER_NAMES, provider_of

T = TypeVar("T")


def _checked_model_id(field: str, value: str | None, *, scripted: str) -> str | None:
    """``value`` when it can name a model of a setting (``provider:model``, ``local``, ``echo``), else a
    validation error saying why; ``scripted`` is refused, ``scripted`` saying why (it needs replies, which only
    an agent has)."""
    if value is None or value == "echo":
        return value
    provider, colon, name = value.partition(":")
    if provider_of(value) is not None and (name or not colon):
        return value
    if value == "scripted":
        problem = scripted
    elif not colon:
        problem = f"unknown model {value!r}; did you mean openai:{value}?"
    elif provider not in PROVIDER_NAMES:
        problem = f"unknown provider {provider!r} (providers: {', '.join(PROVIDER_NAMES)})"
    elif not name:
        problem = f"{value!r} names no model"
    else:
        return value
    raise PydanticCustomError(field, "{problem}", {"problem": problem})


def _a_default_model(value: str | None) -> str | None:
    scripted = "scripted needs replies, which only an agent has; write model: scripted in the blueprint"
    given = value.strip() if value is not None else ""
    return _checked_model_id("default_model", given or None, scripted=scripted)  # "" (an empty variable): none


def _a_summarizer_model(value: str | None) -> str | None:
    scripted = (
        "a scripted summarizer needs replies, which only an agent under agents: has; "
        "name such an agent in the loop's history_management.summarizer_agent"
    )
    return _checked_model_id("summarizer_model", value, scripted=scripted)


def _a_url(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    scheme, _, rest = value.strip().partition("://")
    if scheme not in ("http", "https") or not rest.strip("/"):
        problem = f"{value!r} is not an http:// or https:// URL (e.g. http://localhost:4318)"
        raise PydanticCustomError("otel_endpoint", "{problem}", {"problem": problem})
    return value.strip()


def _a_pattern(value: str) -> str:
    """``value`` when it compiles as a regular expression (a ``redact_patterns`` item), else a validation
    error saying why: found when the settings are read, not as the first text is masked. Compiled by the
    engine the redactor runs them on, ``regex`` (``core.text.redaction``)."""
    import regex

    try:
        regex.compile(value)
    except regex.error as exc:
        problem = f"{value!r} is not a regular expression ({exc})"
        raise PydanticCustomError("redact_pattern", "{problem}", {"problem": problem}) from None
    return value


DefaultModel = Annotated[str | None, AfterValidator(_a_default_model)]
"""``Settings.default_model``: a model id a blueprint's agents may run (not ``scripted``); blank is none."""
SummarizerModel = Annotated[str | None, AfterValidator(_a_summarizer_model)]
"""``HistorySettings.summarizer_model``: a model id a summarizer may run (not ``scripted``)."""
OtelEndpoint = Annotated[str | None, AfterValidator(_a_url)]
"""``OtelSettings.endpoint``: an http(s) URL, stripped; blank is none."""
RedactPattern = Annotated[str, AfterValidator(_a_pattern)]
"""An item of ``Settings.redact_patterns``: a regular expression ``regex`` compiles."""

NAMES: dict[str, Any] = {
    "Annotated": Annotated,
    "Field": Field,
    "DefaultModel": DefaultModel,
    "SummarizerModel": SummarizerModel,
    "OtelEndpoint": OtelEndpoint,
    "RedactPattern": RedactPattern,
}
"""What the settings' annotations name of this module (and pydantic's ``Field``)."""

_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


def adapter(cls: type[T], namespaces: Sequence[MutableMapping[str, Any]]) -> TypeAdapter[T]:
    """The one ``TypeAdapter`` of the dataclass ``cls``, built (once) after ``NAMES`` are put in
    ``namespaces``: the globals of the modules whose dataclasses it holds."""
    found = _ADAPTERS.get(cls)
    if found is None:
        for namespace in namespaces:
            namespace.update(NAMES)
        found = _ADAPTERS[cls] = TypeAdapter(cls)
    return found


class Problem(NamedTuple):
    """The first thing wrong in settings data: where (``("history", "max_tokens")``) and why, in words."""

    loc: tuple[str | int, ...]
    msg: str


# The dataclass wording of a refusal, and the models' that users read before the settings were dataclasses.
_MODEL_WORDS = {
    "unexpected_keyword_argument": "Extra inputs are not permitted",
    "missing_keyword_only_argument": "Field required",
    "missing_argument": "Field required",
}


def check(cls: type[T], data: Mapping[str, Any], namespaces: Sequence[MutableMapping[str, Any]]) -> T | Problem:
    """``data`` (plain values, lax: ``"60"`` is 60) as a ``cls``, or the first ``Problem`` in it."""
    try:
        return adapter(cls, namespaces).validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        message = _MODEL_WORDS.get(first["type"], first["msg"])
        if first["type"] == "dataclass_type":
            message = f"Input should be a valid dictionary or instance of {first['ctx']['class_name']}"
        return Problem(tuple(first["loc"]), message)


class _Described(GenerateJsonSchema):
    """pydantic's JSON Schema, with each settings section's docstring as its description, as a model's is
    (pydantic leaves a plain dataclass's out: by default it is the class's signature)."""

    def dataclass_schema(self, schema: core_schema.DataclassSchema) -> JsonSchemaValue:
        generated = super().dataclass_schema(schema)
        cls = schema["cls"]
        if cls.__doc__ and not cls.__doc__.startswith(f"{cls.__name__}("):
            generated["description"] = inspect.cleandoc(cls.__doc__)
        return generated


def json_schema(cls: type[Any], namespaces: Sequence[MutableMapping[str, Any]]) -> dict[str, Any]:
    """The JSON Schema (pydantic's, draft 2020-12) of the settings dataclass ``cls``."""
    return adapter(cls, namespaces).json_schema(schema_generator=_Described)
