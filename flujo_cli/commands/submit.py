"""``flujo submit`` and ``flujo cancel``: queue runs of a blueprint for ``flujo worker`` processes, and
cancel a queued or running one (docs/scale.md). The blueprint is checked once, before anything is queued."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import flujo_cli.exit_codes as exit_codes
from flujo_cli.messages import divert_stdout, error_line, fail, require_file, require_text, stderr, usage_error


@dataclass(frozen=True)
class QueuedInput:
    """One run to queue: its input, the answers it is given up front, its thread."""

    input: Any = None
    answers: list[str] = field(default_factory=list)
    answers_by_step: dict[str, list[str]] = field(default_factory=dict)
    thread: str | None = None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _answers(value: Any, where: str) -> tuple[list[str], dict[str, list[str]]]:
    """Answers as ``--answers FILE`` holds them: a list in order, or a mapping of step name to answer(s)."""
    if isinstance(value, list):
        return [_text(item) for item in value], {}
    if isinstance(value, Mapping):
        return [], {str(k): [_text(i) for i in v] if isinstance(v, list) else [_text(v)] for k, v in value.items()}
    usage_error(f"{where}: answers must be a list, or a mapping of step name to answer(s)")


def read_inputs(path: Path, *, thread: str | None) -> list[QueuedInput]:
    """The runs of ``--inputs FILE.jsonl``: each line a JSON string (the input) or an object with
    ``input``, ``answers`` and ``thread``; blank lines are skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        usage_error(f"cannot read {path}: {exc.strerror}")
    found: list[QueuedInput] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            usage_error(f"{where}: not JSON ({exc.msg})", 'each line is a JSON string or {"input": ..., ...}')
        if isinstance(value, str):
            found.append(QueuedInput(input=value, thread=thread))
        elif isinstance(value, dict) and set(value) <= {"input", "answers", "thread"}:
            positional, by_step = _answers(value["answers"], where) if "answers" in value else ([], {})
            line_thread = value.get("thread", thread)
            if line_thread is not None and not isinstance(line_thread, str):
                usage_error(f"{where}: thread must be a string")
            found.append(QueuedInput(value.get("input"), positional, by_step, line_thread))
        else:
            usage_error(
                f"{where}: a line is a JSON string or an object with input, answers and thread",
                'e.g. "plan a trip" or {"input": "plan a trip", "answers": ["June"], "thread": "ana"}',
            )
    return found


def submit(
    file: Path,
    *,
    input_text: str | None,
    inputs_file: Path | None,
    thread: str | None,
    simulate_user: str | None,
    answers_file: Path | None,
    json_output: bool,
    state: str | None,
    debug: bool,
    models: Sequence[str] = (),
) -> int:
    from flujo_cli.human import load_answers_file
    from flujo_cli.model_flags import checked_models

    require_file(file, "blueprint file", "check the path; examples live in blueprints/examples/")
    models = checked_models(models)
    if input_text is not None and inputs_file is not None:
        usage_error("give --input or --inputs, not both")
    if inputs_file is not None:
        require_file(inputs_file, "inputs file")
    if answers_file is not None:
        require_file(answers_file, "answers file")
    try:
        positional, by_step = load_answers_file(answers_file) if answers_file else ([], {})
    except Exception as exc:  # ConfigError: one line
        fail(exc, debug=debug)
    if inputs_file is not None:
        runs = read_inputs(inputs_file, thread=thread)
    else:
        if input_text == "-":
            input_text = require_text(sys.stdin.read().rstrip("\n"), "the input read from stdin")
        elif input_text is not None:
            input_text = require_text(input_text, "--input")
        runs = [QueuedInput(input=input_text, thread=thread)]
    runs = [
        replace(run, answers=run.answers or positional, answers_by_step=run.answers_by_step or by_step) for run in runs
    ]
    try:
        return asyncio.run(
            _submit(file, runs, simulate_user=simulate_user, models=models, json_output=json_output, state=state)
        )
    except Exception as exc:  # the CLI's top level: one clear line
        fail(exc, debug=debug)


async def _submit(
    file: Path,
    runs: list[QueuedInput],
    *,
    simulate_user: str | None,
    models: Sequence[str],
    json_output: bool,
    state: str | None,
) -> int:
    from blueprints import ModelOverrideError, compile_pipeline, load_blueprint, simulated_user
    from core import BlueprintError, RunError, StepPaths, check_thread, new_run_id
    from flujo_cli.commands.run import RunOverrides, _report_blueprint_error
    from flujo_cli.model_flags import model_overrides, refused_at_load
    from flujo_cli.store_access import open_for, settings_with_state, where
    from flujo_cli.user_cache import validated_files

    console = stderr()
    settings = settings_with_state(state)
    try:  # absolute: workers run anywhere
        found = validated_files()
        with divert_stdout():  # a module the blueprint imports may print: stdout holds only the queued ids
            blueprint = load_blueprint(file.resolve(), settings=settings, models=model_overrides(models), kept=found)
            pipeline = compile_pipeline(blueprint, settings)
    except ModelOverrideError as exc:  # --model names an agent the blueprint does not have: nothing is queued
        return refused_at_load(exc)
    except BlueprintError as exc:
        _report_blueprint_error(exc, console, file)
        return exit_codes.BLUEPRINT
    try:
        if simulate_user:
            simulated_user(blueprint, settings, simulate_user)
        for name in sorted({run.thread for run in runs if run.thread is not None}):
            check_thread(pipeline, name)
        paths = StepPaths(pipeline)
        for key in sorted({key for run in runs for key in run.answers_by_step}):
            named = paths.ambiguous(key)
            if named:  # as flujo run refuses it, before anything is queued
                raise RunError(
                    f"the answers key {key!r} names {len(named)} steps of {file}: {', '.join(named)}",
                    hint=f"key the answers by a step's path instead, e.g. {named[-1]}: ...",
                )
    except RunError as exc:  # --simulate-user, --thread or an answers key does not fit: nothing is queued
        error_line(exc.message, exc.hint)
        return exit_codes.USAGE
    records = []
    for run in runs:
        # The worker runs with them, and with the default_model an agent took here (its settings may differ).
        kept = RunOverrides(models=models).with_default_model(blueprint, settings)
        options: dict[str, Any] = kept.to_options() or {}
        if run.answers:
            options["answers"] = run.answers
        if run.answers_by_step:
            options["answers_by_step"] = run.answers_by_step
        if simulate_user:
            options["simulate_user"] = simulate_user
        record = pipeline.new_run(new_run_id(), run.input, thread=run.thread, options=options or None)
        records.append(replace(record, status="queued"))
    store = await open_for(settings)
    try:
        await store.queue_runs(records)
    finally:
        await store.close()
    ids = [record.run_id for record in records]
    if json_output:
        sys.stdout.write(json.dumps({"queued": ids}) + "\n")
    else:
        sys.stdout.write("".join(f"{run_id}\n" for run_id in ids))
    console.print(f"[green]queued {len(ids)} run(s)[/] of {file} in {where(settings)}; execute them with: flujo worker")
    return exit_codes.OK


def cancel(run_id: str, *, state: str | None, debug: bool) -> int:
    try:
        return asyncio.run(_cancel(run_id, state=state))
    except Exception as exc:  # the CLI's top level: one clear line
        fail(exc, debug=debug)


async def _cancel(run_id: str, *, state: str | None) -> int:
    from core import RunError
    from flujo_cli.store_access import elsewhere, open_for, settings_with_state, where

    settings = settings_with_state(state)
    store = await open_for(settings, "existing")
    try:
        record = await store.get_run(run_id)
        if record is None:
            raise RunError(f"no run matches {run_id!r} in {where(settings)}", hint=elsewhere("flujo lens list"))
        done = await store.cancel_queued(record.run_id)
    finally:
        await store.close()
    if done == "not_queued":
        error_line(
            f"run {record.run_id} is {record.status.replace('_', ' ')}, not queued or executed by a worker",
            "only runs queued with flujo submit can be cancelled",
        )
        return exit_codes.FAILED
    if done == "requested":
        stderr().print(f"cancelling run {record.run_id}: its worker ({record.owner}) stops it")
    else:
        stderr().print(f"cancelled run {record.run_id}")
    return exit_codes.OK
