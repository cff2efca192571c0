"""``flujo run`` and ``flujo resume``: wire the blueprint, the store, the human and the display."""

from __future__ import annotations

import asyncio
import functools
import json
import re
import sys
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

import flujo_cli.collection as collection
import flujo_cli.exit_codes as exit_codes
from flujo_cli.answering import NO_ANSWER_FLAGS, AnswerFlags
from flujo_cli.event_lines import NO_EVENTS, EventFlags
from flujo_cli.messages import (
    divert_stdout,
    error_line,
    fail,
    flujo_command,
    require_file,
    require_text,
    stderr,
    usage_error,
)
from flujo_cli.model_flags import checked_models, model_overrides, refused_at_load
from flujo_cli.redacting import command_redactor

if TYPE_CHECKING:
    from blueprints import Blueprint
    from core import BoundsSettings, RunRecord, RunStore, Settings

# The last part of a setting's key that names a secret: ``openai.api_key``, ``x.token``, ``y.db_password``
# (never ``history.max_tokens``).
_SECRET_KEY = r"(?i)(?:^|[._])(?:\w+_)?(?:key|token|secret|password|credentials?)\s*$"  # compiled when first used


@dataclass(frozen=True)
class RunOverrides:
    """What the command line overrides for one run: settings (``--set``), the blueprint's limits and its
    agents' models (``--model``, as ``flujo_cli.model_flags.checked_models`` gives them); and the settings'
    ``default_model`` when an agent runs it (``with_default_model``), wherever it was set.

    They are recorded with the run (``RunRecord.options``) and apply again when it is resumed or replayed (or
    a worker executes it), under any given to that command itself: a run continues under the settings it
    started with, its agents with the models they started with, whatever the user's settings say now."""

    settings: Sequence[str] = ()
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    models: Sequence[str] = ()
    default_model: str | None = None

    def with_default_model(self, blueprint: Blueprint, settings: Settings) -> RunOverrides:
        """These overrides keeping the settings' ``default_model`` when an agent of ``blueprint`` (or of a
        blueprint it imports) runs it, and none is kept yet (a resumed run keeps the one it recorded)."""
        if self.default_model is not None or settings.default_model is None or not blueprint.takes_default_model:
            return self
        return replace(self, default_model=settings.default_model)

    def setting_assignments(self) -> list[str]:
        """The command-line layer of the settings as ``KEY=VALUE`` texts: the kept ``default_model``, under
        the ``--set`` values."""
        kept = [f"default_model={self.default_model}"] if self.default_model is not None else []
        return [*kept, *self.settings]

    def setting_overrides(self) -> dict[str, Any]:
        """The command-line layer of the settings (``setting_assignments``), parsed."""
        from core import overrides_from_assignments

        return overrides_from_assignments(self.setting_assignments())

    def to_options(self) -> dict[str, Any] | None:
        """These overrides as the run records them (None when there are none). A secret (``--set
        openai.api_key=...``, any key naming a key, token, secret or password) is never written to the store:
        a resume must be given it again."""
        options: dict[str, Any] = {}
        # Nor is the store's location (--set state_uri=...: a resume looks the run up where it is told to).
        kept = [
            assignment
            for assignment in self.settings
            if not re.search(_SECRET_KEY, key := assignment.partition("=")[0]) and key.strip() != "state_uri"
        ]
        if kept:
            options["set"] = kept
        if self.max_tokens is not None:
            options["max_tokens"] = self.max_tokens
        if self.max_cost_usd is not None:
            options["max_cost_usd"] = self.max_cost_usd
        if self.models:
            options["models"] = list(self.models)
        if self.default_model is not None:
            options["default_model"] = self.default_model
        return options or None

    def over(self, recorded: Mapping[str, Any] | None) -> RunOverrides:
        """These overrides on top of those a run recorded: recorded ``--set`` and ``--model`` values first (a
        later one wins), a limit given now beats the recorded one. Values of the wrong type are ignored."""
        if not recorded:
            return self
        settings, models = _strings(recorded.get("set")), _strings(recorded.get("models"))
        tokens, cost = recorded.get("max_tokens"), recorded.get("max_cost_usd")
        default_model = recorded.get("default_model")
        return RunOverrides(
            settings=[*settings, *self.settings],
            models=[*models, *self.models],
            default_model=default_model if isinstance(default_model, str) else self.default_model,
            max_tokens=self.max_tokens if self.max_tokens is not None else tokens if isinstance(tokens, int) else None,
            max_cost_usd=(
                self.max_cost_usd if self.max_cost_usd is not None else cost if isinstance(cost, int | float) else None
            ),
        )


def _strings(recorded: Any) -> list[str]:
    """The texts of a list a run recorded (anything else: none)."""
    return [value for value in recorded if isinstance(value, str)] if isinstance(recorded, list) else []


def _read_input(input_text: str | None) -> str | None:
    """The run's input: ``--input``'s, or stdin's with ``--input -``; a usage error when it is not UTF-8 text."""
    if input_text == "-":
        return require_text(sys.stdin.read().rstrip("\n"), "the input read from stdin")
    return input_text if input_text is None else require_text(input_text, "--input")


def _print_output(output: Any) -> None:
    if isinstance(output, str):
        sys.stdout.write(output if output.endswith("\n") else output + "\n")
    else:
        sys.stdout.write(json.dumps(output, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def _answers(
    answers: Sequence[str], answers_file: Path | None, bounds: BoundsSettings
) -> tuple[list[str], dict[str, list[str]]]:
    from flujo_cli.human import load_answers_file

    positional, by_step = load_answers_file(answers_file, bounds=bounds) if answers_file else ([], {})
    return [*answers, *positional], by_step


@dataclass
class _Invocation:
    """What the top level needs to know of the run in progress when it is interrupted."""

    run_id: str | None = None
    settings: Settings | None = None  # the run's, to name its store in the command that continues it
    stored: Callable[[], bool] = lambda: True  # whether the run is in the store (a new one: once a step started)

    def state_option(self) -> str:
        """`` --state URI`` when the run's store must be named to find it again (``store_access``); computed
        only when a command to continue the run is printed (it reads the settings again)."""
        from flujo_cli.store_access import state_option

        return state_option(self.settings) if self.settings is not None else ""


def _drive(coroutine: Coroutine[Any, Any, int], invocation: _Invocation, *, debug: bool) -> int:
    """Run the async command; turn Ctrl-C and errors into one clear line and an exit code. A store that became
    unavailable during the run (its server lost, its file locked too long) left the run resumable: the hint
    says how to continue it."""
    from core import StoreGone, StoreUnavailable

    try:
        return asyncio.run(coroutine)
    except StoreUnavailable as exc:
        # Gone, or never stored (the store failed as the run was created): nothing to resume.
        if invocation.run_id is not None and invocation.stored() and not isinstance(exc, StoreGone):
            exc.hint = (
                f"run {invocation.run_id} is saved up to its last finished step; once the store is back, continue"
                f" it with: {flujo_command()} resume {invocation.run_id}{invocation.state_option()}"
            )
        fail(exc, debug=debug)
    except KeyboardInterrupt:
        if invocation.run_id is None or not invocation.stored():
            error_line("interrupted before the run started")
        else:
            error_line(
                f"interrupted: run {invocation.run_id} is saved up to its last finished step",
                f"continue it with: {flujo_command()} resume {invocation.run_id}{invocation.state_option()}",
            )
        return exit_codes.INTERRUPTED
    except Exception as exc:  # the CLI's top level: one clear line, never a traceback (unless --debug)
        fail(exc, debug=debug)


@collection.paused()  # until the run starts (flujo_cli/collection.py)
def run_blueprint(
    file: Path,
    *,
    input_text: str | None,
    answers: Sequence[str],
    answers_file: Path | None,
    no_input: bool,
    json_output: bool,
    overrides: RunOverrides = RunOverrides(),
    thread: str | None = None,
    continue_last: bool = False,
    answer_flags: AnswerFlags = NO_ANSWER_FLAGS,
    state: str | None = None,
    events: EventFlags = NO_EVENTS,
    debug: bool,
) -> int:
    """Run blueprint ``file``; in ``thread``, or (``continue_last``) in the thread of its latest run."""
    require_file(file, "blueprint file", "check the path; examples live in blueprints/examples/")
    answers = [require_text(answer, "--answer") for answer in answers]
    overrides = replace(overrides, models=checked_models(overrides.models))
    if thread is not None:
        _check_thread_name(thread)
    if answers_file is not None:
        require_file(answers_file, "answers file")
    invocation = _Invocation()
    return _drive(
        _run(
            file,
            invocation,
            resume_id=None,
            input_text=_read_input(input_text),
            answers=answers,
            answers_file=answers_file,
            no_input=no_input,
            json_output=json_output,
            overrides=overrides,
            thread=thread,
            continue_last=continue_last,
            answer_flags=answer_flags,
            state=state,
            events=events,
        ),
        invocation,
        debug=debug,
    )


def _check_thread_name(thread: str) -> None:
    from core import RunError, check_thread_name

    try:
        check_thread_name(thread)
    except RunError as exc:
        usage_error(exc.message, exc.hint)


@collection.paused()  # until the run starts (flujo_cli/collection.py)
def resume_run(
    run_id: str,
    *,
    answers: Sequence[str],
    answers_file: Path | None,
    no_input: bool,
    json_output: bool,
    overrides: RunOverrides = RunOverrides(),
    force: bool = False,
    answer_flags: AnswerFlags = NO_ANSWER_FLAGS,
    state: str | None = None,
    events: EventFlags = NO_EVENTS,
    debug: bool,
) -> int:
    if answers_file is not None:
        require_file(answers_file, "answers file")
    answers = [require_text(answer, "--answer") for answer in answers]
    overrides = replace(overrides, models=checked_models(overrides.models))
    invocation = _Invocation()
    return _drive(
        _run(
            None,
            invocation,
            resume_id=run_id,
            force=force,
            input_text=None,
            answers=answers,
            answers_file=answers_file,
            no_input=no_input,
            json_output=json_output,
            overrides=overrides,
            answer_flags=answer_flags,
            state=state,
            events=events,
        ),
        invocation,
        debug=debug,
    )


def _load_local_models() -> None:
    """As a person is asked at a terminal, the local models this run's agents use begin to load, so the load
    overlaps their typing (``core.agents.local_server.load_in_background``)."""
    server = sys.modules.get("core.agents.local_server")  # imported only by runs with a model: local agent
    if server is not None:
        server.load_in_background()


async def _run(
    file: Path | None,
    invocation: _Invocation,
    *,
    resume_id: str | None,
    force: bool = False,
    input_text: str | None,
    answers: Sequence[str],
    answers_file: Path | None,
    no_input: bool,
    json_output: bool,
    overrides: RunOverrides,
    thread: str | None = None,
    continue_last: bool = False,
    answer_flags: AnswerFlags = NO_ANSWER_FLAGS,
    state: str | None = None,
    events: EventFlags = NO_EVENTS,
) -> int:
    from blueprints import ModelOverrideError, compile_pipeline, load_blueprint
    from core import (
        BlueprintError,
        Engine,
        ReplayDiverged,
        ResumeRefused,
        RunError,
        StepPaths,
        check_thread,
        new_run_id,
        use_bounds,
    )
    from core.agents import build_agent
    from flujo_cli.answering import (
        answering_for,
        answers_json,
        given_answers_taken,
        replay_for,
        report_answers,
        report_replay,
    )
    from flujo_cli.human import TerminalHuman
    from flujo_cli.live_traces import LiveTraces
    from flujo_cli.progress import LiveReporter
    from flujo_cli.run_claims import hold_thread, take_for_resume
    from flujo_cli.store_access import elsewhere, open_for, settings_with_state, where
    from flujo_cli.user_cache import validated_files

    console = stderr()
    settings = settings_with_state(state, overrides.setting_overrides())
    invocation.settings = settings
    positional, by_step = _answers(answers, answers_file, settings.bounds)
    # Answers given up front come first; the terminal (or a pause) comes after any replay or simulated person.
    given = TerminalHuman(answers=positional, by_step=by_step, interactive=False, console=console)
    human = TerminalHuman(interactive=not no_input, console=console, while_typing=_load_local_models)
    reporter = LiveReporter(console, quiet=json_output)
    lines = events.open()  # the run's events as they are committed (flujo_cli.event_lines), if asked for
    if lines is not None:
        reporter.events = lines.write
    redactor = command_redactor(settings)
    started = time.perf_counter()
    # A resume only looks the run up: it never creates a store (a missing one is named, exit code 7).
    store = await open_for(settings, "create" if resume_id is None else "existing")
    recorded: dict[str, Any] = {}  # the options a resumed run recorded
    taken: list[tuple[str, str]] = []  # the questions a resumed run's recorded answers were given to already
    resumed: RunRecord | None = None
    traces: LiveTraces | None = None
    # What the blueprint's own code prints (a python: tool, agent or module) goes to stderr, not the results.
    diverted = divert_stdout()
    diverted.__enter__()
    try:
        if continue_last:
            assert file is not None
            thread = await _latest_thread(store, file, where(settings))
            if thread is None:
                return exit_codes.USAGE
        if resume_id is not None:
            record = await store.get_run(resume_id)
            if record is None:
                raise RunError(
                    f"no run matches {resume_id!r} in {where(settings)}",
                    hint=elsewhere("check the id printed when the run paused (flujo lens list lists the runs)"),
                )
            invocation.run_id = resume_id = record.run_id
            resumed = record
            recorded = dict(record.options or {})
            if answer_flags.replay_answers is not None and isinstance(recorded.get("replay"), str):
                error_line(
                    f"run {record.run_id} replays run {recorded['replay']} (--replay), answers and all:"
                    " --replay-answers cannot be given to its resume",
                    "resume it without --replay-answers",
                )
                return exit_codes.USAGE
            answer_flags = answer_flags.over(recorded)  # it keeps answering as it started
            if not answers and answers_file is None and (recorded.get("answers") or recorded.get("answers_by_step")):
                # A submitted run resumed by hand (its worker died, say) keeps the answers it was queued
                # with, past those its answered questions took; answers given to resume replace them.
                given = TerminalHuman(
                    answers=list(recorded.get("answers") or []),
                    by_step=dict(recorded.get("answers_by_step") or {}),
                    interactive=False,
                    console=console,
                )
                taken = await given_answers_taken(store, record.run_id)  # passed over once the keys are known
            if record.options:  # the run continues under the settings it started with (ours on top)
                overrides = overrides.over(record.options)
                settings = settings_with_state(state, overrides.setting_overrides())
                redactor = command_redactor(settings)
            if record.parent_run_id is not None:  # the engine refuses it too; here the hint names the store
                raise ResumeRefused(
                    f"run {record.run_id} is a sub-workflow of run {record.parent_run_id}; resume that run instead",
                    hint=f"{flujo_command()} resume {record.parent_run_id}{invocation.state_option()}"
                    " continues inside this sub-workflow",
                )
            if record.status == "completed":  # the engine refuses it too; say so before loading anything
                raise ResumeRefused(
                    f"run {record.run_id} already completed; there is nothing to resume",
                    hint=f"start a new run with: flujo run {record.source or 'FILE'}",
                )
            if record.source is None or not Path(record.source).is_file():
                raise RunError(
                    f"the blueprint of run {record.run_id} ({record.source}) is no longer there",
                    hint="restore the file at that path, then resume again",
                )
            file = Path(record.source)
        elif answer_flags.replay is not None:  # a replay runs under the --set and limits its recording ran with
            replayed_run = await store.get_run(answer_flags.replay)  # (ours on top); none: said below, exit 2
            if replayed_run is not None and replayed_run.options:
                overrides = overrides.over(replayed_run.options)
                settings = settings_with_state(state, overrides.setting_overrides())
                redactor = command_redactor(settings)
        assert file is not None
        use_bounds(settings.bounds)  # what templates and expressions of this run may make and do
        try:  # absolute: resume works from anywhere
            blueprint = load_blueprint(
                file.resolve(), settings=settings, models=model_overrides(overrides.models), kept=validated_files()
            )
            overrides = overrides.with_default_model(blueprint, settings)  # recorded: a resume runs the same
            # A replay calls a model only once it diverges (live): a missing API key is said then, not now.
            factory = functools.partial(build_agent, defer_missing_key=True) if answer_flags.replay else None
            pipeline = compile_pipeline(blueprint, settings, agent_factory=factory)
        except ModelOverrideError as exc:  # --model names an agent the blueprint does not have
            return refused_at_load(exc)
        except BlueprintError as exc:
            _report_blueprint_error(exc, console, file)
            return exit_codes.BLUEPRINT
        if answer_flags.replay is None:  # a replay serves the calls: a program is looked for once it goes live
            _report_missing_programs(blueprint, console, file)
        ambiguous = given.key_by(StepPaths(pipeline))
        if ambiguous is not None:  # an --answers key that is the name of several steps: say which is meant
            key, paths = ambiguous
            error_line(
                f"the answers key {key!r} names {len(paths)} steps of {file}: {', '.join(paths)}",
                f"key the answers by a step's path instead, e.g. {paths[-1]}: ...",
            )
            return exit_codes.USAGE
        given.pass_over(taken)
        try:
            replay, replayed = await replay_for(answer_flags, store, redactor)
            if replayed is not None and resumed is None:  # a replay runs as the recorded run ran
                if input_text is None:
                    input_text = replayed.input
                person_then = (replayed.options or {}).get("simulate_user")
                if answer_flags.simulate_user is None and isinstance(person_then, str):
                    answer_flags = replace(answer_flags, simulate_user=person_then)
            person = None
            if answer_flags.simulate_user:  # the simulated person's modules: imported by the runs that have one
                from blueprints import simulated_user

                person = simulated_user(blueprint, settings, answer_flags.simulate_user, agent_factory=factory)
            answering = await answering_for(answer_flags, store, given, person, replay)
        except RunError as exc:  # --simulate-user, --replay or --replay-answers names nothing: nothing ran
            error_line(exc.message, exc.hint)
            return exit_codes.USAGE
        pipeline = _with_limits(pipeline, overrides)
        collection.loaded()  # frozen: full collections need not scan it again; collection resumes
        if thread is not None:
            try:
                check_thread(pipeline, thread)
            except RunError as exc:  # --thread does not fit this blueprint: a usage error, nothing ran
                error_line(exc.message, exc.hint)
                return exit_codes.USAGE
        reporter.redactor = redactor  # the run's own: a resumed run's settings may have changed it
        traces = LiveTraces.configured(settings)  # None unless a collector is configured (docs/observability.md)
        engine = Engine(
            store=store, human=human, reporter=reporter, redactor=redactor, answering=answering, replay=replay
        )
        # What the run records to resume as it started; a resumed run keeps what it recorded besides
        # (the answers it was queued with, say).
        options = {
            **recorded,
            **(overrides.to_options() or {}),
            **answer_flags.to_options(answering),
        }
        # Claims (flujo_cli.run_claims): the run's and its thread's; closing the store releases them.
        took = time.time()  # what this process does of the run starts now (the spans it sends: LiveTraces)
        if resumed is not None:  # in the run's own thread, if it has one
            await take_for_resume(store, resumed)  # and out of the queue, if it was queued
            human.remember(await _answers_given(store, resumed.run_id))  # Up recalls them at the next question
            outcome = await engine.resume(pipeline, resumed.run_id, force=force, options=options or None, claimed=True)
        else:
            invocation.run_id = new_run_id()
            invocation.stored = lambda: reporter.started
            if thread is not None:
                await hold_thread(store, thread)
            outcome = await engine.run(
                pipeline, input_text, run_id=invocation.run_id, thread=thread, options=options or None
            )
        if traces is not None:
            await traces.add(store, outcome.run_id, redactor=redactor, since=took)
        if lines is not None:
            lines.finished(outcome, redactor)
    finally:
        diverted.__exit__(None, None, None)
        reporter.close()
        await store.close()
        if lines is not None:
            lines.close()
    report_answers(answering, console, whole=replay is not None)
    extra = answers_json(answering)
    if replay is not None:
        report_replay(replay, console)
        extra["replay"] = replay.report()
    retry = None
    if replay is not None and isinstance(outcome.error, ReplayDiverged):  # resuming would diverge again
        retry = (
            f"to accept the change, go on live from there: {flujo_command()} run {file}"
            f" --replay {replay.recording.run_id} --on-divergence live{invocation.state_option()}"
        )
    code = _finish(
        outcome, json_output=json_output, seconds=time.perf_counter() - started, console=console,
        extra=extra, output=lines is None or not lines.stdout,
        state_option=invocation.state_option() if outcome.status != "completed" else "",
        retry=retry,
    )  # fmt: skip
    if lines is not None and lines.failure is not None:  # the run went on without its lines: said, exit 2
        error_line(
            f"{lines.name}: cannot write it: {lines.failure}",
            f"the run's events are in the store: {flujo_command()} lens trace {outcome.run_id}"
            f"{invocation.state_option()}",
        )
        code = exit_codes.USAGE if code == exit_codes.OK else code
    if traces is not None:  # after the run's result is printed: the spans may take a moment to go
        await traces.close(state_option=invocation.state_option())
    if code == exit_codes.OK and replay is not None and replay.mode == "stop" and not replay.clean:
        # It completed, but without making every call the recording has: it diverged at its end.
        error_line(
            f"the replay of run {replay.recording.run_id} diverged: {replay.log.divergences[0].reason}",
            "the blueprint now makes fewer calls; see the diff above",
        )
        return exit_codes.REPLAY_DIVERGED
    if outcome.status == "completed" and given.unused:
        console.print(
            f"[yellow]note:[/] {given.unused} answer(s) given with --answer/--answers were not used:"
            " the run asked fewer questions"
            + "".join(f"; no question took the answers keyed {escape(repr(key))}" for key in given.unused_keys())
        )
    if outcome.pause is not None:  # a misspelt --answers key leaves its question unanswered: say which
        _note_misspelt_key(given.unused_keys(), outcome.pause, StepPaths(pipeline), console)
    return code


def _note_misspelt_key(keys: Sequence[str], pause: Any, paths: Any, console: Console) -> None:
    """A note when an ``--answers`` key no question took names no step of the blueprint and is close to the
    name or step path of the question the run paused at (``get_gaol`` for ``get_goal``, ``approve:multiplyy``,
    ``loop/answr``)."""
    import difflib

    asked = [pause.step, *([path] if (path := paths.of(pause.path)) not in (None, pause.step) else [])]
    for key in keys:
        if key in asked or paths.named(key) or paths.of(key) is not None:
            continue
        close = difflib.get_close_matches(key, asked, n=1, cutoff=0.75)
        if close:
            console.print(
                f"[yellow]note:[/] the --answers key {escape(repr(key))} names no question of the run;"
                f" did you mean {escape(repr(close[0]))}?"
            )


async def _latest_thread(store: RunStore, file: Path, where: str) -> str | None:
    """The thread of the latest run of blueprint ``file`` (``flujo run FILE --continue``); None, said in one
    line, when there is no such run or it was in no thread."""
    latest = await store.latest_run(source=str(file.resolve()))
    if latest is None:
        error_line(
            f"no run of {file} in {where} to continue",
            "start a conversation with: flujo run FILE --thread NAME; flujo run FILE -c then continues it",
        )
        return None
    if latest.thread is None:
        error_line(
            f"the latest run of {file} (run {latest.run_id}) was in no thread: there is no conversation to continue",
            "start one with: flujo run FILE --thread NAME; flujo run FILE -c then continues it",
        )
        return None
    return latest.thread


async def _answers_given(store: Any, run_id: str) -> list[str]:
    """The answers the run's questions took before it paused, in the order they were given."""
    return [
        step.output if isinstance(step.output, str) else json.dumps(step.output, ensure_ascii=False)
        for step in await store.steps(run_id)
        if step.kind == "hitl" and step.status == "completed"
    ]


def _with_limits(pipeline: Any, overrides: RunOverrides) -> Any:
    """``pipeline`` with the limits given on the command line in place of its own (itself when none is given)."""
    if overrides.max_tokens is None and overrides.max_cost_usd is None:
        return pipeline
    limits = pipeline.limits
    if overrides.max_tokens is not None:
        limits = replace(limits, max_tokens=overrides.max_tokens)
    if overrides.max_cost_usd is not None:
        limits = replace(limits, max_cost_usd=overrides.max_cost_usd)
    return replace(pipeline, limits=limits)


def _report_blueprint_error(exc: Any, console: Console, given: Path) -> None:
    """The blueprint's errors, each file named as ``flujo validate`` names it for the same argument:
    ``given`` as typed (the run itself loaded it resolved, so that a resume works from any folder)."""
    from flujo_cli.findings_view import render_findings

    as_given = _as_given(given)
    findings = _named_as_given([f for f in getattr(exc, "findings", []) if f.severity == "error"], given)
    if findings:
        render_findings(findings, console)
        console.print(f"[bold red]{len(findings)} error(s)[/]; nothing ran. Check with: flujo validate FILE")
    elif exc.position is not None:
        error_line(f"{replace(exc.position, file=as_given(exc.position.file))}: {exc.message}", exc.hint)
    else:
        error_line(str(exc), exc.hint)


def _report_missing_programs(blueprint: Any, console: Console, given: Path) -> None:
    """The warnings ``flujo validate`` gives of a ``command:`` whose program this machine does not have
    (``program-not-found``), in the blueprint and its imports, shown before the run starts: the run goes on
    (the program may be there by the time it is called), but a person learns of it now, not at the call."""
    from flujo_cli.findings_view import render_findings

    found = [f for each in blueprint.files() for f in each.findings if f.code == "program-not-found"]
    if found:
        render_findings(_named_as_given(found, given), console)


def _named_as_given(findings: Sequence[Any], given: Path) -> list[Any]:
    """``findings`` with their files named as ``flujo validate`` names them for the argument ``given``."""
    as_given = _as_given(given)
    return [
        replace(f, position=replace(f.position, file=as_given(f.position.file)) if f.position else None)
        for f in findings
    ]


def _as_given(given: Path) -> Callable[[str], str]:
    """Maps a path under the resolved folder of ``given`` to the same path under that folder as typed."""
    folder, typed = given.resolve().parent, given.parent

    def as_given(path: str) -> str:
        try:
            return str(typed / Path(path).relative_to(folder))
        except ValueError:
            return path

    return as_given


def _finish(
    outcome: Any,
    *,
    json_output: bool,
    seconds: float,
    console: Console,
    extra: Mapping[str, Any] | None = None,
    state_option: str = "",
    retry: str | None = None,
    output: bool = True,
) -> int:
    """Print how the run ended and return its exit code. Every command suggested to continue the run names
    its store with ``state_option`` (`` --state URI``) when that store is not the one found by default.
    ``retry`` is what to suggest after a failure instead of resuming the run. ``output``: print a completed
    run's output on stdout (not when its events are written there instead)."""
    from core import RunOutcome
    from flujo_cli.messages import exit_code_for

    assert isinstance(outcome, RunOutcome)
    resume = f"{flujo_command()} resume {outcome.run_id}{state_option}"
    resume_cmd = f"{resume} --answer '...'"
    usage = outcome.usage
    if json_output:
        payload: dict[str, Any] = {
            "run_id": outcome.run_id,
            "status": outcome.status,
            "output": outcome.output,
            "error": outcome.error.message if outcome.error else outcome.detail,
            "failed_step": outcome.failed_step,
            "pause": (
                {
                    "step": outcome.pause.step,
                    "message": outcome.pause.message,
                    "reason": outcome.pause.reason,
                    "resume": resume_cmd,
                }
                if outcome.pause
                else None
            ),
            "usage": usage.to_dict(),
            **(extra or {}),
        }
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")
    summary = f"run {outcome.run_id} · {seconds:.2f}s"
    if outcome.replayed:
        summary += f" · {outcome.replayed} finished step(s) replayed from the store"
    if usage.total_tokens:
        summary += f" · {usage.total_tokens} tokens"
    if usage.interrupted:  # calls an earlier process sent and never recorded the reply of (docs/durability.md)
        summary += f" · {usage.interrupted} interrupted call(s) of unknown usage"
    if usage.cost_usd is None:  # a model without a price was called, or an interrupted one: never shown as $0
        summary += " · cost unknown"
    elif usage.cost_usd:
        summary += f" · ${usage.cost_usd:.4f}" if usage.cost_usd >= 0.01 else f" · ${usage.cost_usd:.6f}"
    if outcome.status == "completed":
        if not json_output and output:
            _print_output(outcome.output)
        console.print(f"[green]✓ completed[/] [dim]{summary}[/]")
        return exit_codes.OK
    if outcome.status == "paused":
        assert outcome.pause is not None
        console.print(f"[yellow]⏸ paused[/] at [bold]{escape(outcome.pause.step)}[/]: {escape(outcome.pause.message)}")
        if outcome.pause.reason:
            console.print(f"  [dim]why:[/] {escape(outcome.pause.reason)}")
        console.print(f"  continue with: [bold]{escape(resume_cmd)}[/]  [dim]{summary}[/]")
        return exit_codes.PAUSED
    if outcome.status == "limit_reached":
        flag = "--max-cost-usd AMOUNT" if (outcome.detail or "").startswith("cost") else "--max-tokens N"
        error_line(
            outcome.detail or "usage limit reached",
            f"continue with a higher limit: {resume} {flag} (finished steps are replayed, not paid again)",
        )
        console.print(f"  [dim]{summary}[/]")
        return exit_codes.LIMIT
    if outcome.status == "aborted":
        error_line(f"run aborted: {outcome.detail}")
        return exit_codes.FAILED
    error = outcome.error
    where = f" at step {outcome.failed_step}" if outcome.failed_step else ""
    error_line(f"run failed{where}: {error.message if error else 'unknown error'}", error.hint if error else None)
    console.print(f"  [dim]{summary} · {escape(retry or f'after fixing the cause: {resume}')}[/]")
    return exit_code_for(error) if error else exit_codes.FAILED
