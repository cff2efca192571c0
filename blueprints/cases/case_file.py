"""A case file (``NAME.case.yaml``): one recorded run of a blueprint, self-contained and masked, kept in git
and replayed by ``flujo test`` (docs/testing-conversations.md).

    flujo_case: 1                 # the format's version
    blueprint: ../flows/trip.yaml # the blueprint, relative to the case file's folder
    digest: 9f2c...               # the blueprint's digest when recorded (a change is shown, never an error)
    input: Plan a trip            # the run's input
    options: {simulate_user: agents.tester}   # how it ran: simulate_user, set, max_tokens, max_cost_usd
    output: ...                   # its final output
    expect: ...                   # optional, written by hand: blueprints.cases.expectations
    recording: {run_id, calls, answers}       # core.replay's Recording.to_dict(); optional with expect:

Everything in it is masked as lens masks it (the writer is given masked values; nothing here masks).
``read_case`` reads one within the settings' YAML bounds, with a ``BlueprintError`` at file:line:col for
any mistake; ``case_text`` writes one as YAML whose diffs read well: keys in the order above, a text of
several lines as a literal block, no line folded, no aliases.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from blueprints.cases.expectations import Expectations, read_expectations
from blueprints.reading.positions import Path as DataPath
from blueprints.reading.positions import PositionIndex
from blueprints.reading.suggestions import did_you_mean
from blueprints.reading.yaml_source import parse_yaml
from core import BlueprintError, BoundsSettings, Recording, SourcePosition, not_a_file

CASE_FORMAT = 1
CASE_SUFFIX = ".case.yaml"
CASE_KEYS = ("flujo_case", "blueprint", "digest", "input", "options", "output", "expect", "recording")
OPTION_KEYS = ("simulate_user", "set", "max_tokens", "max_cost_usd")


@dataclass(frozen=True)
class Case:
    """A case: its ``file`` and what it holds. ``expect_text`` is its ``expect:`` block as written (comments
    and all), which an export over the file keeps; ``blueprint_at`` where the file names its blueprint."""

    file: Path
    blueprint: str
    recording: Recording
    digest: str | None = None
    input: Any = None
    options: Mapping[str, Any] = field(default_factory=dict)
    output: Any = None
    expect: Expectations | None = None
    expect_text: str | None = None
    blueprint_at: SourcePosition | None = None

    @property
    def blueprint_path(self) -> Path:
        """The blueprint, found from the case file's folder."""
        return self.file.parent / self.blueprint


def read_case(path: Path, *, bounds: BoundsSettings | None = None) -> Case:
    """The case in the file at ``path``; BlueprintError (file:line:col, a hint) when it cannot be read or is
    not a case of this format."""
    file = str(path)
    kind = not_a_file(path)  # before opening it: a FIFO would wait for a writer, a device never end
    if kind is not None:
        hint = "a case file is a regular file, written by: flujo lens export RUN --case FILE"
        raise BlueprintError(
            f"no such file: {file}" if kind == "nothing" else f"{file} is {kind}, not a case file", hint=hint
        )
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BlueprintError(f"cannot read {file}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        at = SourcePosition.of_byte(file, raw, exc.start)
        raise BlueprintError(f"not UTF-8 text (byte {exc.start})", position=at, hint="save it as UTF-8") from None
    parsed = parse_yaml(text, file, bounds=bounds, fast=True)
    problem = next((finding for finding in parsed.findings if finding.is_error), None)
    if problem is not None:
        raise BlueprintError(problem.message, position=problem.position, hint=problem.hint)
    return _Reader(parsed.index, path).case(parsed.data)


class _Reader:
    def __init__(self, index: PositionIndex, path: Path) -> None:
        self.index = index
        self.path = path

    def error(self, at: DataPath, message: str, hint: str | None = None, *, key: bool = False) -> BlueprintError:
        position = (self.index.key(at) if key else self.index.value(at)) or self.index.nearest(at)[1]
        return BlueprintError(message, position=position, hint=hint)

    def case(self, data: Any) -> Case:
        if not isinstance(data, Mapping) or "flujo_case" not in data:
            raise self.error(
                (),
                "not a case file: it has no flujo_case: key",
                "write one from a run with: flujo lens export RUN --case FILE",
            )
        if data["flujo_case"] != CASE_FORMAT:
            raise self.error(
                ("flujo_case",),
                f"this case file is of format {data['flujo_case']!r}; this flujo reads format {CASE_FORMAT}",
                "export the run again with this flujo: flujo lens export RUN --case FILE",
            )
        for key in data:
            if key not in CASE_KEYS:
                raise self.error(
                    (key,),
                    f"unknown key {key!r} in a case file{did_you_mean(key, CASE_KEYS)}",
                    f"a case file holds: {', '.join(CASE_KEYS)}",
                    key=True,
                )
        blueprint = data.get("blueprint")
        if not isinstance(blueprint, str) or not blueprint.strip():
            raise self.error(("blueprint",), "blueprint: must name the blueprint file, relative to the case file")
        digest = data.get("digest")
        if digest is not None and not isinstance(digest, str):
            raise self.error(("digest",), "digest: must be a text (the blueprint's digest when it was recorded)")
        expect = data.get("expect")
        # A case written by hand may hold expectations only: its replay is live from the first call.
        recording = data.get("recording", {} if expect is not None else None)
        if not isinstance(recording, Mapping):
            raise self.error(
                ("recording",) if "recording" in data else (),
                "recording: must be the mapping flujo lens export wrote (calls, answers)",
                "a case without one must have an expect: block (what must hold of a live run)",
            )
        try:
            recorded = Recording.from_dict(recording)
        except ValueError as exc:
            raise self.error(("recording",), f"recording: {exc}", "export the run again") from None
        return Case(
            file=self.path,
            blueprint=blueprint,
            recording=recorded,
            digest=digest,
            input=data.get("input"),
            options=self.options(data.get("options")),
            output=data.get("output"),
            expect=read_expectations(expect, self.index) if expect is not None else None,
            expect_text=self.block_text("expect") if expect is not None else None,
            blueprint_at=self.index.value(("blueprint",)),
        )

    def options(self, options: Any) -> dict[str, Any]:
        if options is None:
            return {}
        if not isinstance(options, Mapping):
            raise self.error(("options",), "options: must be a mapping", f"its keys: {', '.join(OPTION_KEYS)}")
        for key, value in options.items():
            at = ("options", key)
            if key not in OPTION_KEYS:
                hint = f"the options: {', '.join(OPTION_KEYS)}"
                raise self.error(at, f"unknown option {key!r}{did_you_mean(key, OPTION_KEYS)}", hint, key=True)
            if key == "simulate_user" and not isinstance(value, str):
                raise self.error(at, "simulate_user: must name an agent, e.g. agents.tester")
            if key == "set" and not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
                raise self.error(at, "set: must be a list of KEY=VALUE settings")
            if key == "max_tokens" and not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
                raise self.error(at, "max_tokens: must be a whole number, 1 or more")
            if key == "max_cost_usd" and not (isinstance(value, int | float) and not isinstance(value, bool)):
                raise self.error(at, "max_cost_usd: must be a number of US dollars")
        return dict(options)

    def block_text(self, key: str) -> str:
        """The lines of the top-level entry ``key`` as written: from its key to the next top-level key."""
        start = self.index.key((key,))
        assert start is not None
        following = [
            place.key_line
            for data_path, place in self.index.items()
            if len(data_path) == 1 and place.key_line is not None and place.key_line > start.line
        ]
        end = min(following) - 1 if following else len(self.index.lines)
        lines = self.index.lines[start.line - 1 : end]
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(lines) + "\n"


def case_text(case: Case, *, comment: str = "") -> str:
    """``case`` as the YAML of a case file (keys in ``CASE_KEYS`` order; ``expect_text`` as it is written),
    after ``comment`` (lines made comments)."""
    head: dict[str, Any] = {"flujo_case": CASE_FORMAT, "blueprint": case.blueprint, "digest": case.digest}
    head["input"] = case.input
    if case.options:
        head["options"] = dict(case.options)
    head["output"] = case.output
    parts = ["".join(f"# {line}".rstrip() + "\n" for line in comment.splitlines()), _dump(head)]
    if case.expect_text:
        parts.append(case.expect_text)
    parts.append(_dump({"recording": case.recording.to_dict()}))
    return "".join(parts)


class _CaseDumper(yaml.SafeDumper):
    """Safe YAML for a case file: a text of several lines as a literal block (``|``), never an alias."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_CaseDumper.add_representer(str, _represent_text)


def _dump(data: Mapping[str, Any]) -> str:
    # A JSON round trip first: what a run stores is JSON data (tuples become lists, anything else its text).
    plain = json.loads(json.dumps(data, ensure_ascii=False, default=str))
    text: str = yaml.dump(
        plain, Dumper=_CaseDumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1 << 30
    )
    return text
