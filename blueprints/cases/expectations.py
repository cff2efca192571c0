"""A case's ``expect:`` block: what must hold of a replayed run, for prompts that are expected to change
(docs/testing-conversations.md). A case with one is not compared with its recorded output: the replay goes
live from its first divergence and the case passes when every expectation holds.

    expect:
      output_schema: {type: object, required: [summary]}   # the final output matches this JSON Schema
      output_contains: June                                # ... holds this text (or each of a list)
      max_turns: 4                                         # every conversation ended within 4 turns
      asked: [answer]                                      # a question was asked at this step (name or path)
      tools_called: [search]                               # the model called this tool ...
      tools_not_called: [send_email]                       # ... and never this one

A conversation's turns are counted as the run counts them: a loop's iterations (each a round of the
conversation: the agent speaks, the person answers), an ensemble's ``turn_count``. A step path given to
``asked`` may leave out the iteration numbers (``clarification_loop/answer`` is asked at
``clarification_loop/2/answer``). A tool call the person declined counts as called: the model called it.

``read_expectations`` reads the block (a ``BlueprintError`` at file:line:col for a mistake);
``check_expectations`` checks it against the facts of a run (``RunFacts``), one ``ExpectationResult`` each.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from blueprints.reading.positions import Path, PositionIndex
from blueprints.reading.suggestions import did_you_mean
from core import BlueprintError, SourcePosition, schema_errors

EXPECTATION_KEYS = ("output_schema", "output_contains", "max_turns", "asked", "tools_called", "tools_not_called")


@dataclass(frozen=True)
class Expectations:
    """What an ``expect:`` block asks (empty parts ask nothing)."""

    output_schema: Mapping[str, Any] | None = None
    output_contains: tuple[str, ...] = ()
    max_turns: int | None = None
    asked: tuple[str, ...] = ()
    tools_called: tuple[str, ...] = ()
    tools_not_called: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunFacts:
    """What a run did that expectations look at: its final output (masked), the questions asked (step path,
    step name), the tools its models called (step path, tool) and how many turns each conversation took
    (the path of its loop or ensemble, turns). Paths of a sub-workflow's run are under its step's path."""

    output: Any = None
    questions: tuple[tuple[str, str], ...] = ()
    tools: tuple[tuple[str, str], ...] = ()
    conversations: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class ExpectationResult:
    """One expectation checked: ``expectation`` says it as written (``output_contains: June``), ``problem``
    what the run did instead (None when it holds)."""

    expectation: str
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None

    def to_dict(self) -> dict[str, Any]:
        return {"expectation": self.expectation, "ok": self.ok, "problem": self.problem}


def read_expectations(data: Any, index: PositionIndex, path: Path = ("expect",)) -> Expectations:
    """The expectations of the ``expect:`` value ``data`` at ``path`` of the file ``index`` describes;
    BlueprintError at the place of the first mistake."""
    reader = _Reader(index)
    if not isinstance(data, Mapping):
        keys = ", ".join(EXPECTATION_KEYS)
        raise reader.error(path, "expect: must be a mapping of expectations", f"its keys: {keys}")
    for key in data:
        if key not in EXPECTATION_KEYS:
            raise reader.error(
                (*path, key),
                f"unknown expectation {key!r}{did_you_mean(str(key), EXPECTATION_KEYS)}",
                f"the expectations: {', '.join(EXPECTATION_KEYS)}",
                at_key=True,
            )
    schema = data.get("output_schema")
    if schema is not None:
        reader.schema((*path, "output_schema"), schema)
    turns = data.get("max_turns")
    if turns is not None and (not isinstance(turns, int) or isinstance(turns, bool) or turns < 1):
        raise reader.error((*path, "max_turns"), "max_turns must be a whole number of turns, 1 or more")
    return Expectations(
        output_schema=schema,
        output_contains=reader.texts(path, "output_contains", data),
        max_turns=turns,
        asked=reader.texts(path, "asked", data),
        tools_called=reader.texts(path, "tools_called", data),
        tools_not_called=reader.texts(path, "tools_not_called", data),
    )


class _Reader:
    def __init__(self, index: PositionIndex) -> None:
        self.index = index

    def error(self, path: Path, message: str, hint: str | None = None, *, at_key: bool = False) -> BlueprintError:
        position: SourcePosition | None = self.index.key(path) if at_key else self.index.value(path)
        return BlueprintError(message, position=position or self.index.nearest(path)[1], hint=hint)

    def texts(self, path: Path, key: str, data: Mapping[str, Any]) -> tuple[str, ...]:
        value = data.get(key)
        if value is None:
            return ()
        items = value if isinstance(value, list) else [value]
        for number, item in enumerate(items):
            if not isinstance(item, str) or not item:
                where = (*path, key, number) if isinstance(value, list) else (*path, key)
                raise self.error(where, f"{key} takes a text or a list of texts", f"e.g. {key}: [{_example(key)}]")
        return tuple(items)

    def schema(self, path: Path, schema: Any) -> None:
        import jsonschema  # lazy: ~60 ms of imports, only for cases that expect a schema

        if not isinstance(schema, Mapping):
            hint = "e.g. output_schema: {type: object}"
            raise self.error(path, "output_schema must be a JSON Schema, a mapping", hint)
        try:
            jsonschema.validators.validator_for(schema).check_schema(dict(schema))
        except jsonschema.SchemaError as exc:
            inside = tuple(part for part in exc.absolute_path if isinstance(part, str | int))
            where = "/".join(str(part) for part in inside)
            raise self.error(
                (*path, *inside),
                f"output_schema is not a valid JSON Schema: {exc.message}" + (f" (at {where})" if where else ""),
                "a JSON Schema is a mapping such as {type: object, properties: {answer: {type: string}}}",
            ) from None


def _example(key: str) -> str:
    return {"output_contains": "June", "asked": "answer", "tools_called": "search"}.get(key, "send_email")


def check_expectations(expect: Expectations, facts: RunFacts) -> list[ExpectationResult]:
    """Each expectation of ``expect`` checked against ``facts``, in the order of ``EXPECTATION_KEYS``."""
    results: list[ExpectationResult] = []
    if expect.output_schema is not None:
        problem = schema_errors(facts.output, expect.output_schema)
        results.append(
            ExpectationResult(
                "output_schema", None if problem is None else f"the output does not match the schema: {problem}"
            )
        )
    text = facts.output if isinstance(facts.output, str) else json.dumps(facts.output, ensure_ascii=False)
    for wanted in expect.output_contains:
        missing = None if wanted in text else f"the output does not contain {wanted!r}: {_excerpt(text)}"
        results.append(ExpectationResult(f"output_contains: {wanted}", missing))
    if expect.max_turns is not None:
        results.append(_turns(expect.max_turns, facts.conversations))
    for step in expect.asked:
        found = any(_names(step, path, name) for path, name in facts.questions)
        asked = ", ".join(path for path, _ in facts.questions) or "none"
        problem = None if found else f"no question at {step} (asked: {asked})"
        results.append(ExpectationResult(f"asked: {step}", problem))
    called = {tool for _, tool in facts.tools}
    for tool in expect.tools_called:
        shown = ", ".join(sorted(called)) or "none"
        problem = None if tool in called else f"the models never called {tool} (called: {shown})"
        results.append(ExpectationResult(f"tools_called: {tool}", problem))
    for tool in expect.tools_not_called:
        where = [path for path, name in facts.tools if name == tool]
        problem = f"{tool} was called at {', '.join(where)}" if where else None
        results.append(ExpectationResult(f"tools_not_called: {tool}", problem))
    return results


def _turns(limit: int, conversations: Sequence[tuple[str, int]]) -> ExpectationResult:
    said = f"max_turns: {limit}"
    if not conversations:
        return ExpectationResult(said, "the run had no conversation (no loop or ensemble ended)")
    over = [f"{path} took {turns}" for path, turns in conversations if turns > limit]
    return ExpectationResult(said, f"{', '.join(over)} turns" if over else None)


def _names(wanted: str, path: str, name: str) -> bool:
    """Whether ``wanted`` (a step name, or a path with or without its iteration numbers) names the step at
    ``path`` whose name is ``name``."""
    wanted = wanted.strip("/")
    if wanted in (name, path):
        return True
    return wanted == "/".join(part for part in path.split("/") if not part.isdigit())


def _excerpt(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
