"""The Typer app: commands, their flags and help. Bodies import their work lazily (fast ``--help``)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

import flujo_cli.completion.values as complete
import flujo_cli.exit_codes as exit_codes
from flujo_cli.help_style import Command, Group
from flujo_cli.optional_values import OptionalValueCommand

app = typer.Typer(
    name="flujo",
    cls=Group,
    help="Run YAML blueprints of LLM agents and humans in conversation, durably, from the terminal.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="Exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in exit_codes.TABLE),
)


# The most runs --limit and --offset may name: more than any store holds, and far below the 2**63 - 1 a SQLite
# or PostgreSQL integer stops at (a larger number was an OverflowError from the store).
MOST_RUNS = 1_000_000_000
# The commands that keep the garbage collector paused from the command's start until they have loaded
# (flujo_cli/collection.py); every other one turns it back on before it starts.
_LOADING = ("run", "resume", "worker")


class _State:
    debug: bool = os.environ.get("FLUJO_DEBUG", "") not in ("", "0")


state = _State()


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"flujo {version('flujo-runner')}")
        except PackageNotFoundError:
            typer.echo("flujo (not installed)")
        raise typer.Exit()


def _install_completion(ctx: typer.Context, value: bool) -> None:
    if value and not ctx.resilient_parsing:  # not while completing a command line that holds the flag
        from flujo_cli.completion.install import install

        raise typer.Exit(install(None))


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
    install_completion: Annotated[
        bool,
        typer.Option(
            "--install-completion",
            callback=_install_completion,
            is_eager=True,
            help="Install shell completion for the shell you are in (bash, zsh or fish) and exit; see: flujo"
            " completion --help.",
        ),
    ] = False,
) -> None:
    if debug:
        state.debug = True


InputOption = Annotated[
    str | None,
    typer.Option("--input", "-i", help="Input for the first step; '-' reads it from stdin.", show_default=False),
]
AnswerOption = Annotated[
    list[str] | None,
    typer.Option("--answer", "-a", help="Answer to the next human question (repeat for several, in order)."),
]
AnswersFileOption = Annotated[
    Path | None,
    typer.Option(
        "--answers",
        metavar="FILE",
        help="YAML/JSON file of answers: a list in order, or a mapping by step name or path (loop/step).",
    ),
]
NoInputOption = Annotated[
    bool,
    typer.Option("--no-input", help="Never prompt: when no answer is given, pause the run (resume later)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print a JSON result on stdout (for scripts).")]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Override a setting for this run, e.g. --set history.max_tokens=2000 (repeatable; beats flujo.toml"
        " and FLUJO_* variables).",
        show_default=False,
    ),
]
MaxTokensOption = Annotated[
    int | None,
    typer.Option(
        "--max-tokens",
        metavar="N",
        min=1,
        help="Token limit for this run (beats the blueprint's limits).",
        show_default=False,
    ),
]
MaxCostOption = Annotated[
    float | None,
    typer.Option(
        "--max-cost-usd",
        metavar="USD",
        min=0.0,
        help="Cost limit in USD for this run (beats the blueprint's limits).",
        show_default=False,
    ),
]
ModelOption = Annotated[
    list[str] | None,
    typer.Option(
        "--model",
        metavar="agents.NAME=MODEL",
        help="Run agents.NAME with another model: --model agents.writer=ollama:llama3 runs agent writer on"
        " ollama:llama3; '*=MODEL' for"
        " every agent that has a model, e.g. --model '*=local' (repeatable; agents.NAME beats '*'). The YAML"
        " is unchanged.",
        show_default=False,
    ),
]

SimulateUserOption = Annotated[
    str | None,
    typer.Option(
        "--simulate-user",
        help="Let agents.NAME of the blueprint answer every human question (a simulated person; its system"
        " prompt is the persona). --answer/--answers and --replay-answers still come first.",
        show_default=False,
        autocompletion=complete.agent_refs,
    ),
]
ReplayAnswersOption = Annotated[
    str | None,
    typer.Option(
        "--replay-answers",
        help="Answer each question with the answer run RUN_ID recorded for it (same question path); questions"
        " it has no answer for are asked as usual.",
        metavar="RUN_ID",
        show_default=False,
        autocompletion=complete.run_ids,
    ),
]
ReplayOption = Annotated[
    str | None,
    typer.Option(
        "--replay",
        help="Replay run RUN_ID: each agent call, tool call and answer equal to the recorded one (same step"
        " path; prompts compared as masked) is served from the recording, with no model called and no tool"
        " run. Implies --replay-answers. The input defaults to the recorded run's.",
        metavar="RUN_ID",
        show_default=False,
        autocompletion=complete.run_ids,
    ),
]
OnDivergenceOption = Annotated[
    str,
    typer.Option(
        "--on-divergence",
        help="With --replay, at the first call that differs from the recording: stop (exit code 9, with a diff)"
        " or live (call the real models and tools from there on).",
        metavar="stop|live",
    ),
]

ThreadOption = Annotated[
    str | None,
    typer.Option(
        "--thread",
        metavar="NAME",
        help="Continue the conversation of thread NAME: its earlier turns open the first conversation: true"
        " loop's history, and this run's turns are added to it (see: flujo threads).",
        show_default=False,
        autocompletion=complete.thread_names,
    ),
]
StateOption = Annotated[
    str | None,
    typer.Option(
        "--state",
        help="The run store: a SQLite file path or a postgresql:// URI (beats"
        " FLUJO_STATE_URI and state_uri in flujo.toml; default .flujo/flujo.db).",
        show_default=False,
        metavar="URI",
    ),
]


EventsOption = Annotated[
    str | None,
    typer.Option(
        "--events",
        metavar="FORMAT",
        help="Write the run's trace events to stdout as they happen, instead of its output: jsonl (a JSON object"
        " a line; the last, run.finished, holds the status and output).",
        show_default=False,
    ),
]
EventsFileOption = Annotated[
    Path | None,
    typer.Option(
        "--events-file",
        metavar="FILE",
        help="Write the run's trace events to FILE as they happen (as --events jsonl); stdout is as without it.",
        show_default=False,
    ),
]


@app.command(cls=Command)
def run(
    file: Annotated[Path, typer.Argument(help="The blueprint YAML file to run.", show_default=False)],
    input: InputOption = None,
    answer: AnswerOption = None,
    answers: AnswersFileOption = None,
    no_input: NoInputOption = False,
    thread: ThreadOption = None,
    continue_last: Annotated[
        bool,
        typer.Option(
            "--continue",
            "-c",
            help="Continue the conversation of the latest run of FILE: its thread, as --thread would (not with"
            " --thread; a latest run in no thread is a usage error).",
        ),
    ] = False,
    json_output: JsonOption = False,
    set_: SetOption = None,
    max_tokens: MaxTokensOption = None,
    max_cost_usd: MaxCostOption = None,
    model: ModelOption = None,
    simulate_user: SimulateUserOption = None,
    replay_answers: ReplayAnswersOption = None,
    replay: ReplayOption = None,
    on_divergence: OnDivergenceOption = "stop",
    store: StateOption = None,
    events: EventsOption = None,
    events_file: EventsFileOption = None,
) -> None:
    """Run a blueprint. Human questions are asked in the terminal (or answered by --answer/--answers)."""
    from flujo_cli.answering import AnswerFlags
    from flujo_cli.commands.run import RunOverrides, run_blueprint
    from flujo_cli.event_lines import EventFlags
    from flujo_cli.messages import usage_error

    event_flags = EventFlags(events, events_file)
    event_flags.check(json_output=json_output)

    if replay is not None and replay_answers is not None:
        usage_error("--replay and --replay-answers cannot be given together: --replay replays the answers too")
    if on_divergence not in ("stop", "live"):
        usage_error(f"--on-divergence must be stop or live, not {on_divergence!r}")
    if replay is None and on_divergence != "stop":
        usage_error("--on-divergence applies to a replay: give --replay RUN_ID too")
    if continue_last and thread is not None:
        usage_error("--continue and --thread cannot be given together: --continue continues the latest run's thread")

    raise SystemExit(
        run_blueprint(
            file,
            input_text=input,
            answers=answer or [],
            answers_file=answers,
            no_input=no_input,
            json_output=json_output,
            overrides=RunOverrides(set_ or [], max_tokens, max_cost_usd, model or []),
            thread=thread,
            continue_last=continue_last,
            answer_flags=AnswerFlags(simulate_user, replay_answers, replay, on_divergence),
            state=store,
            events=event_flags,
            debug=state.debug,
        )
    )


@app.command(cls=Command)
def resume(
    run_id: Annotated[
        str,
        typer.Argument(
            help="The run id (a unique prefix is enough).",
            show_default=False,
            autocompletion=complete.resumable_run_ids,
        ),
    ],
    answer: AnswerOption = None,
    answers: AnswersFileOption = None,
    no_input: NoInputOption = False,
    json_output: JsonOption = False,
    set_: SetOption = None,
    max_tokens: MaxTokensOption = None,
    max_cost_usd: MaxCostOption = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Resume even though the blueprint file changed since the run started."),
    ] = False,
    model: ModelOption = None,
    simulate_user: SimulateUserOption = None,
    replay_answers: ReplayAnswersOption = None,
    store: StateOption = None,
    events: EventsOption = None,
    events_file: EventsFileOption = None,
) -> None:
    """Continue a paused, failed, interrupted or crashed run; steps already done are not run again (a run
    started with --thread stays in its thread). It keeps the --set, --model and limits it started with;
    those given here come on top."""
    from flujo_cli.answering import AnswerFlags
    from flujo_cli.commands.run import RunOverrides, resume_run
    from flujo_cli.event_lines import EventFlags

    event_flags = EventFlags(events, events_file)
    event_flags.check(json_output=json_output)

    raise SystemExit(
        resume_run(
            run_id,
            answers=answer or [],
            answers_file=answers,
            no_input=no_input,
            json_output=json_output,
            overrides=RunOverrides(set_ or [], max_tokens, max_cost_usd, model or []),
            force=force,
            answer_flags=AnswerFlags(simulate_user, replay_answers),
            state=store,
            events=event_flags,
            debug=state.debug,
        )
    )


@app.command(cls=Command)
def submit(
    file: Annotated[Path, typer.Argument(help="The blueprint YAML file to queue runs of.", show_default=False)],
    input: InputOption = None,
    inputs: Annotated[
        Path | None,
        typer.Option(
            "--inputs",
            metavar="FILE.jsonl",
            help='One run per line: a JSON string (the input) or {"input": ..., "answers": ..., "thread": ...}.',
            show_default=False,
        ),
    ] = None,
    thread: ThreadOption = None,
    model: ModelOption = None,
    simulate_user: SimulateUserOption = None,
    answers: AnswersFileOption = None,
    json_output: JsonOption = False,
    store: StateOption = None,
) -> None:
    """Queue runs of a blueprint for flujo worker processes and print their ids (nothing is queued when the
    blueprint has errors)."""
    from flujo_cli.commands.submit import submit as submit_runs

    raise SystemExit(
        submit_runs(
            file,
            input_text=input,
            inputs_file=inputs,
            thread=thread,
            simulate_user=simulate_user,
            answers_file=answers,
            json_output=json_output,
            state=store,
            debug=state.debug,
            models=model or [],
        )
    )


@app.command(cls=Command)
def worker(
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Runs executed at a time.")] = 1,
    until_idle: Annotated[
        bool, typer.Option("--until-idle", help="Exit (0) when no queued run is left to take.")
    ] = False,
    grace: Annotated[
        float,
        typer.Option(
            "--grace",
            metavar="SECONDS",
            min=0.0,
            help="On SIGTERM, how long runs in hand may finish before they are interrupted (resumable).",
        ),
    ] = 30.0,
    reconnect_for: Annotated[
        float,
        typer.Option(
            "--reconnect-for",
            metavar="SECONDS",
            min=0.0,
            help="When the run store becomes unavailable (server down, file locked), how long to keep trying"
            " to reach it before exiting (7); the runs in hand stay resumable.",
        ),
    ] = 60.0,
    store: StateOption = None,
) -> None:
    """Take queued runs (flujo submit) and execute them, on any machine that reaches the run store."""
    from flujo_cli.commands.worker import work

    raise SystemExit(
        work(
            concurrency=concurrency,
            until_idle=until_idle,
            grace_s=grace,
            reconnect_for_s=reconnect_for,
            state=store,
            debug=state.debug,
        )
    )


@app.command(cls=Command)
def cancel(
    run_id: Annotated[
        str,
        typer.Argument(
            help="The run id (a unique prefix is enough).",
            show_default=False,
            autocompletion=complete.cancellable_run_ids,
        ),
    ],
    store: StateOption = None,
) -> None:
    """Cancel a queued run, or stop a run a worker is executing (its status becomes cancelled)."""
    from flujo_cli.commands.submit import cancel as cancel_run

    raise SystemExit(cancel_run(run_id, state=store, debug=state.debug))


@app.command(cls=Command)
def validate(
    file: Annotated[Path, typer.Argument(help="The blueprint YAML file to check.", show_default=False)],
    json_output: JsonOption = False,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Check with this setting, as flujo run --set would run with it (repeatable), e.g."
            " --set history.max_tokens=2000.",
            show_default=False,
        ),
    ] = None,
    model: ModelOption = None,
) -> None:
    """Check a blueprint against the settings (flujo.toml, FLUJO_*, --set) and list every problem with
    file:line:col. Exit 0 when valid, 1 otherwise."""
    from flujo_cli.commands.validate import validate_blueprint

    raise SystemExit(
        validate_blueprint(file, json_output=json_output, debug=state.debug, settings=set_ or [], models=model or [])
    )


@app.command("test", cls=Command)
def test_command(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Case files, or folders searched for *.case.yaml files (default: the current folder).",
            show_default=False,
        ),
    ] = None,
    junit: Annotated[
        Path | None,
        typer.Option("--junit", metavar="FILE", help="Write a JUnit XML report for CI too.", show_default=False),
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", metavar="N", min=1, help="Cases replayed at a time.")] = 8,
    json_output: JsonOption = False,
    store: StateOption = None,
) -> None:
    """Replay every case file (flujo lens export RUN --case FILE) against its blueprint as it is now: each
    passed (every call served, the same output, or its expect: holds), diverged (with the diff) or failed.
    Exit 0 when all passed, 1 otherwise."""
    from flujo_cli.commands.test import replay_cases

    raise SystemExit(
        replay_cases(paths or [], jobs=jobs, junit=junit, json_output=json_output, state=store, debug=state.debug)
    )


def _flag(help: str, *names: str) -> Any:
    return typer.Option(*names, help=help, show_default=False, rich_help_panel="Answers (each skips its question)")


@app.command(cls=Command)
def create(
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="The file to write (default: NAME.yaml).", show_default=False),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace the file if it exists.")] = False,
    wizard: Annotated[
        bool,
        typer.Option(
            "--wizard",
            help="Ask the questions no flag answers, one at a time (what create does by default; not with"
            " --no-interactive).",
        ),
    ] = False,
    interactive: Annotated[
        bool | None,
        typer.Option(
            "--interactive/--no-interactive",
            help="Ask the questions no flag answers (the default), or take the defaults for them.",
            show_default=False,
        ),
    ] = None,
    purpose: Annotated[str | None, _flag("What the loop is for, in a few words.", "--purpose")] = None,
    name: Annotated[str | None, _flag("The blueprint's name (letters, digits, _).", "--name")] = None,
    human: Annotated[bool | None, _flag("Whether a person answers the agent each round.", "--human/--no-human")] = None,
    conversation: Annotated[
        bool | None,
        _flag("Keep the conversation history and send it to the agents.", "--conversation/--no-conversation"),
    ] = None,
    history: Annotated[str | None, _flag("truncate_tokens, truncate_turns or summarize.", "--history")] = None,
    history_limit: Annotated[
        int | None, _flag("Tokens (truncate_tokens) or turns (truncate_turns, summarize).", "--history-limit")
    ] = None,
    model: Annotated[str | None, _flag("scripted (offline), or provider:model.", "--model")] = None,
    step: Annotated[str | None, _flag("The name of the agent's step (ask, or draft).", "--step")] = None,
    extra_agent: Annotated[
        list[str] | None, _flag("Another agent step in each round (repeatable).", "--extra-agent")
    ] = None,
    ai_turn_source: Annotated[
        str | None, _flag("Whose replies are assistant turns: last, all_agents, named_steps.", "--ai-turn-source")
    ] = None,
    named_step: Annotated[
        list[str] | None, _flag("A step that speaks as the assistant (repeatable).", "--named-step")
    ] = None,
    stop: Annotated[str | None, _flag("finish, rounds, score or expression.", "--stop")] = None,
    max_loops: Annotated[int | None, _flag("The most rounds.", "--max-loops")] = None,
    score: Annotated[int | None, _flag("With --stop score: the score (1-10) that ends it.", "--score")] = None,
    exit_expression: Annotated[
        str | None, _flag("With --stop expression: the exit_expression.", "--exit-expression")
    ] = None,
    start: Annotated[str | None, _flag("The first message: ask (a question) or input (--input).", "--start")] = None,
    first_question: Annotated[str | None, _flag("With --start ask: the first question.", "--first-question")] = None,
    returns: Annotated[str | None, _flag("What the loop returns: conversation, fields or last.", "--returns")] = None,
    max_cost_usd: Annotated[float | None, _flag("Cost limit per run, for a real model.", "--max-cost-usd")] = None,
    max_tokens: Annotated[int | None, _flag("Token limit per run, for a real model.", "--max-tokens")] = None,
) -> None:
    """Write a working blueprint from a few plain questions, each also a flag; validate it, say how to run it.

    The questions: what the loop is for, who answers, whether it keeps a conversation and how its history is
    kept short, which model, other agents, how it stops, what it returns. flujo create and flujo create
    --wizard ask the questions no flag answers; --no-interactive takes their defaults instead. An existing
    file is never replaced without --force."""
    from flujo_cli.commands.create import create_blueprint

    given = {
        "purpose": purpose, "name": name, "human": human, "conversation": conversation, "history": history,
        "history_limit": history_limit, "model": model, "step": step,
        "extra_agents": tuple(extra_agent) if extra_agent else None, "ai_turn_source": ai_turn_source,
        "named_steps": tuple(named_step) if named_step else None, "stop": stop, "max_loops": max_loops,
        "score": score, "exit_expression": exit_expression, "start": start, "first_question": first_question,
        "returns": returns, "max_cost_usd": max_cost_usd, "max_tokens": max_tokens,
    }  # fmt: skip
    raise SystemExit(
        create_blueprint(given, output=output, force=force, interactive=interactive, wizard=wizard, debug=state.debug)
    )


@app.command(cls=Command)
def explain(
    file: Annotated[Path, typer.Argument(help="The blueprint YAML file to explain.", show_default=False)],
    json_output: JsonOption = False,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Explain with this setting, as flujo run --set would run with it (repeatable), e.g."
            " --set history.max_tokens=2000.",
            show_default=False,
        ),
    ] = None,
    model: ModelOption = None,
) -> None:
    """Say in plain words what a blueprint will do, without running it or calling a model.

    Each step in order, what each loop does per iteration, how it stops, what history agents see, where you
    are asked, what it returns and costs at most. A blueprint with errors prints them and exits 3."""
    from flujo_cli.commands.explain import explain_file

    raise SystemExit(
        explain_file(file, json_output=json_output, debug=state.debug, settings=set_ or [], models=model or [])
    )


threads_app = typer.Typer(
    name="threads",
    cls=Group,
    help="Conversations continued across runs with flujo run FILE --thread NAME.",
    no_args_is_help=True,
)
app.add_typer(threads_app)
ThreadName = Annotated[
    str, typer.Argument(help="The thread's name.", show_default=False, autocompletion=complete.thread_names)
]


@threads_app.command("list", cls=Command)
def threads_list(json_output: JsonOption = False, store: StateOption = None) -> None:
    """List the threads, the one with the latest run first: runs, turns, tokens."""
    from flujo_cli.commands.threads import list_threads

    raise SystemExit(list_threads(json_output=json_output, state=store, debug=state.debug))


@threads_app.command("show", cls=Command)
def threads_show(name: ThreadName, json_output: JsonOption = False, store: StateOption = None) -> None:
    """Print a thread's turns in order, grouped by the run that said them."""
    from flujo_cli.commands.threads import show_thread

    raise SystemExit(show_thread(name, json_output=json_output, state=store, debug=state.debug))


@threads_app.command("delete", cls=Command)
def threads_delete(name: ThreadName, json_output: JsonOption = False, store: StateOption = None) -> None:
    """Delete a thread's turns (without asking) and say what was removed; its runs stay in the run store."""
    from flujo_cli.commands.threads import delete_thread

    raise SystemExit(delete_thread(name, json_output=json_output, state=store, debug=state.debug))


@threads_app.command("fork", cls=Command)
def threads_fork(
    name: Annotated[
        str, typer.Argument(help="The thread to fork.", show_default=False, autocompletion=complete.thread_names)
    ],
    new: Annotated[str, typer.Argument(help="The name of the new thread.", show_default=False)],
    at_turn: Annotated[
        int | None,
        typer.Option(
            "--at-turn",
            metavar="N",
            min=1,
            help="Copy only the first N turns of NAME (counted as flujo threads show NAME prints them); default:"
            " all of them.",
            show_default=False,
        ),
    ] = None,
    json_output: JsonOption = False,
    store: StateOption = None,
) -> None:
    """Start thread NEW from an earlier point of thread NAME: NEW begins with a copy of NAME's first N turns,
    and flujo run FILE --thread NEW continues from there. NAME is left as it is."""
    from flujo_cli.commands.threads import fork_thread

    raise SystemExit(fork_thread(name, new, at_turn=at_turn, json_output=json_output, state=store, debug=state.debug))


lens_app = typer.Typer(
    name="lens",
    cls=Group,
    help="Look into the run store: runs, their steps, and the prompts each agent was sent (redacted).",
    no_args_is_help=True,
)
app.add_typer(lens_app)
RunIdArgument = Annotated[
    str,
    typer.Argument(help="The run id (a unique prefix is enough).", show_default=False, autocompletion=complete.run_ids),
]


@lens_app.command("list", cls=Command)
def lens_list(
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            help="Only runs with this status: queued, running, completed, failed, paused, limit_reached, aborted,"
            " interrupted, cancelled.",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=0, max=MOST_RUNS, help="How many runs, newest first.")
    ] = 20,
    thread: Annotated[
        str | None,
        typer.Option(
            "--thread",
            metavar="NAME",
            help="Only the runs of thread NAME.",
            show_default=False,
            autocompletion=complete.thread_names,
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="AGE",
            help="Only runs started in the last AGE (90m, 12h, 30d, 2w) or since a date (2025-06-01, local time).",
            show_default=False,
        ),
    ] = None,
    search: Annotated[
        str | None,
        typer.Option(
            "--search",
            metavar="TEXT",
            help="Only runs whose input or output holds TEXT (any case), as lens shows them: secrets are masked"
            " first, so a secret's value never matches.",
            show_default=False,
        ),
    ] = None,
    offset: Annotated[
        int,
        typer.Option(
            "--offset", metavar="N", min=0, max=MOST_RUNS, help="Skip the N newest matching runs (the next page)."
        ),
    ] = 0,
    json_output: JsonOption = False,
    store: StateOption = None,
) -> None:
    """List recent runs, newest first: id, blueprint, status, start, duration, steps, tokens, cost (a
    sub-workflow's child run is shown under its parent). The options narrow it down; together, all must hold."""
    from flujo_cli.commands.lens import ListOptions, list_runs

    options = ListOptions(status, thread, since, search, offset, limit)
    raise SystemExit(list_runs(options, json_output=json_output, state=store, debug=state.debug))


@lens_app.command("show", cls=Command)
def lens_show(
    run_id: RunIdArgument,
    final_output: Annotated[
        bool, typer.Option("--final-output", help="Print only the run's output, whole (as flujo run does).")
    ] = False,
    json_output: JsonOption = False,
    store: StateOption = None,
) -> None:
    """Show a run: its status, usage, input and output, then its steps in execution order (loops by
    iteration, parallel by branch, sub-workflows nested) with their input, output and errors."""
    from flujo_cli.commands.lens import show_run

    raise SystemExit(
        show_run(run_id, final_output=final_output, json_output=json_output, state=store, debug=state.debug)
    )


@lens_app.command("trace", cls=Command)
def lens_trace(
    run_id: RunIdArgument,
    step: Annotated[
        str | None,
        typer.Option(
            "--step",
            help="Only this step (a name, or a path such as chat/clarify or chat/3/clarify).",
            show_default=False,
            autocompletion=complete.step_names,
        ),
    ] = None,
    expand: Annotated[
        list[str] | None,
        typer.Option(
            "--expand",
            help="Show prompts whole: all, none (one line per call), or the calls at a step PATH (repeatable)."
            " By default long prompts are collapsed to a few lines.",
            show_default=False,
            autocompletion=complete.expand_values,
        ),
    ] = None,
    tui: Annotated[
        bool | None,
        typer.Option(
            "--tui/--plain",
            help="Open the interactive viewer, or print the trace. Default: the viewer when stdout is a terminal.",
            show_default=False,
        ),
    ] = None,
    why: Annotated[
        bool,
        typer.Option(
            "--why",
            help="For each agent call (of --step's step), say where each message came from and what history"
            " was left out, by which rule (with --tui, the viewer says it in its detail pane).",
        ),
    ] = False,
    json_output: JsonOption = False,
    store: StateOption = None,
) -> None:
    """Show a run's span tree (run, steps, iterations, agent calls) with the messages each agent was sent,
    redacted, and where conversation history was injected, trimmed or summarised."""
    from flujo_cli.commands.lens import TraceOptions, trace_run

    options = TraceOptions(step=step, expand=expand or (), tui=tui, why=why)
    raise SystemExit(trace_run(run_id, options, json_output=json_output, state=store, debug=state.debug))


@lens_app.command("diff", cls=Command)
def lens_diff(
    run_a: Annotated[
        str,
        typer.Argument(
            metavar="RUN_A",
            help="The first run's id (a unique prefix is enough).",
            show_default=False,
            autocompletion=complete.run_ids,
        ),
    ],
    run_b: Annotated[
        str,
        typer.Argument(
            metavar="RUN_B",
            help="The second run's id (a unique prefix is enough).",
            show_default=False,
            autocompletion=complete.run_ids,
        ),
    ],
    every: Annotated[bool, typer.Option("--all", help="Show every call that differs, not only the first.")] = False,
    json_output: JsonOption = False,
    store: StateOption = None,
    other_store: Annotated[
        str | None,
        typer.Option(
            "--other-state",
            metavar="URI",
            help="The run store RUN_B is in, when not the one --state names (a SQLite file path or a PostgreSQL URI).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Compare two runs call by call, in step order: the first call that differs (every one with --all), its
    prompt as a message-by-message diff, its reply or tool call and result, and usage, or a call only one run
    made; then the final outputs when they differ. Masked. Exit 0 whether they differ or not (the first line
    says which)."""
    from flujo_cli.commands.lens import diff_runs

    raise SystemExit(
        diff_runs(
            run_a,
            run_b,
            every=every,
            json_output=json_output,
            state=store,
            other_state=other_store,
            debug=state.debug,
        )
    )


@lens_app.command("export", cls=OptionalValueCommand)
def lens_export(
    run_id: RunIdArgument,
    otlp: Annotated[
        str | None,
        typer.Option(
            "--otlp",
            metavar="[ENDPOINT]",
            help="Send the run to an OpenTelemetry collector (OTLP/HTTP), as a trace in the GenAI conventions."
            " ENDPOINT: its URL (http://localhost:4318); left out, OTEL_EXPORTER_OTLP_ENDPOINT or \\[otel] endpoint"
            " in flujo.toml.",
            show_default=False,
        ),
    ] = None,
    case: Annotated[
        Path | None,
        typer.Option(
            "--case",
            metavar="FILE",
            help="Write the run as a case file that flujo test replays (name it NAME.case.yaml): the blueprint's"
            " path and digest, the input and options, every recorded call and answer, the output; masked. A case"
            " file written over keeps its expect: block.",
            show_default=False,
        ),
    ] = None,
    store: StateOption = None,
) -> None:
    """Export a stored run, in the one format its option names (exactly one per call): --case FILE writes it as
    a test case that flujo test replays (a completed run); --otlp sends it, with its sub-workflows' runs, to an
    OpenTelemetry collector such as Jaeger, Phoenix or Langfuse; the same trace as the run sent live, if it did
    (docs/observability.md)."""
    from flujo_cli.messages import usage_error

    # One format per call; each option is None when not given (--otlp alone is the empty text).
    formats = [option for option, value in (("--case", case), ("--otlp", otlp)) if value is not None]
    hint = "give --case FILE (a test case for flujo test) or --otlp [ENDPOINT] (an OpenTelemetry collector)"
    if not formats:
        usage_error("say which format to export: lens export takes one format option", hint)
    if len(formats) > 1:
        usage_error(f"lens export takes exactly one format option per call; {' and '.join(formats)} were given", hint)
    if otlp is not None:
        from flujo_cli.commands.export_otlp import export_otlp

        raise SystemExit(export_otlp(run_id, otlp, state=store, debug=state.debug))
    from flujo_cli.commands.lens_export import export_run

    raise SystemExit(export_run(run_id, case=case, state=store, debug=state.debug))


@lens_app.command("prune", cls=Command)
def lens_prune(
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            help="Delete runs older than AGE: 90m, 12h, 30d, 2w; or started before a date (2025-06-01, local time).",
            show_default=False,
        ),
    ] = None,
    keep: Annotated[
        int | None,
        typer.Option("--keep", min=0, help="Keep the N newest runs, delete the others.", show_default=False),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would be deleted; delete nothing.")] = False,
    json_output: JsonOption = False,
    store: StateOption = None,
) -> None:
    """Delete old runs with their steps, events, stored texts, thread turns and sub-workflow runs, and give
    the space back. A run being executed right now is never deleted. Both options: both must hold."""
    from flujo_cli.commands.lens import prune_runs

    raise SystemExit(
        prune_runs(
            older_than=older_than,
            keep=keep,
            dry_run=dry_run,
            json_output=json_output,
            state=store,
            debug=state.debug,
        )
    )


store_app = typer.Typer(
    name="store",
    cls=Group,
    help="The run store as a whole: move it between SQLite and PostgreSQL (docs/scale.md).",
    no_args_is_help=True,
)
app.add_typer(store_app)


@store_app.command("copy", cls=Command)
def store_copy(
    from_uri: Annotated[
        str, typer.Argument(help="The store to copy: a SQLite file path or a postgresql:// URI.", show_default=False)
    ],
    to_uri: Annotated[
        str,
        typer.Argument(
            help="An empty (or new) store to copy into: a file path or a postgresql:// URI.", show_default=False
        ),
    ],
    json_output: JsonOption = False,
) -> None:
    """Copy every run (steps, events, stored texts, thread turns, child runs) from one store into another,
    then check by counts that both hold the same. FROM is only read; TO must hold no runs yet."""
    from flujo_cli.commands.store import copy_store

    raise SystemExit(copy_store(from_uri, to_uri, json_output=json_output, debug=state.debug))


@app.command(cls=Command)
def schema(
    kind: Annotated[
        str,
        typer.Argument(
            help="Which file: blueprint (a blueprint YAML), ensemble (an ensemble file) or config (flujo.toml,"
            " ~/.config/flujo/config.toml).",
            metavar="KIND",
        ),
    ] = "blueprint",
) -> None:
    """Print the JSON Schema of a file format, for editors: save it, then put
    # yaml-language-server: $schema=PATH on a blueprint's first line (VS Code's YAML extension, or any
    YAML language server) for completion and checks as you type. flujo validate checks the rest."""
    from flujo_cli.commands.schema import print_schema

    raise SystemExit(print_schema(kind))


config_app = typer.Typer(
    name="config",
    cls=Group,
    help="The settings: built-in defaults < ~/.config/flujo/config.toml < flujo.toml < FLUJO_* < --set.",
    no_args_is_help=True,
)
app.add_typer(config_app)


@config_app.command("show", cls=Command)
def config_show(
    json_output: JsonOption = False,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Show the settings as flujo run --set KEY=VALUE would have them (repeatable).",
            show_default=False,
        ),
    ] = None,
    store: StateOption = None,
) -> None:
    """Print every setting in effect here, with where it came from: default, the user settings file
    ($XDG_CONFIG_HOME/flujo/config.toml or ~/.config/flujo/config.toml), flujo.toml, an environment
    variable or the command line (file:line:col for a file). Secrets are masked."""
    from flujo_cli.commands.config import show_config

    raise SystemExit(show_config(json_output=json_output, settings=set_ or [], state=store, debug=state.debug))


@app.command(cls=Command)
def completion(
    shell: Annotated[
        str,
        typer.Argument(help="bash, zsh or fish.", show_default=False, autocompletion=complete.shell_names),
    ],
    install: Annotated[
        bool,
        typer.Option("--install", help="Write the script where SHELL loads it at start, instead of printing it."),
    ] = False,
) -> None:
    """Print the shell completion script of SHELL: it completes commands, options, and values from the project
    (run ids with their status, thread names, a blueprint's agents, a run's steps).

    Load it from your shell's startup file: eval "$(flujo completion bash)" in ~/.bashrc, eval "$(flujo completion
    zsh)" in ~/.zshrc, flujo completion fish | source in ~/.config/fish/config.fish; or let --install (or flujo
    --install-completion) put it where the shell finds it."""
    from flujo_cli.completion.install import install as install_script
    from flujo_cli.completion.shells import SHELLS, script
    from flujo_cli.messages import usage_error

    if shell not in SHELLS:
        usage_error(f"flujo completes {', '.join(SHELLS)}, not {shell!r}", f"flujo completion {'|'.join(SHELLS)}")
    if install:
        raise SystemExit(install_script(shell))
    typer.echo(script(shell), nl=False)


def main() -> None:
    if os.environ.get("_FLUJO_COMPLETE"):  # a completion script asks (flujo completion SHELL): answer, quickly
        from flujo_cli.completion.shells import respond

        raise SystemExit(respond(typer.main.get_command(app), os.environ["_FLUJO_COMPLETE"]))
    import flujo_cli.early_interrupt as early_interrupt

    if early_interrupt.restore():  # Ctrl-C while Python loaded the command line
        _interrupted_before_start()
    early_interrupt.redeliver_swallowed()
    import sys

    import flujo_cli.collection as collection
    from flujo_cli.one_command import command_word, narrowed

    if command_word(sys.argv[1:]) not in _LOADING:
        collection.start_up_done()
    try:
        narrowed(app, sys.argv[1:])()  # only the command asked for is built
    except KeyboardInterrupt:  # Ctrl-C while Typer builds the command line, before any command starts
        _interrupted_before_start()
    except Exception as exc:
        if _ctrl_c_inside(exc):
            _interrupted_before_start()  # Ctrl-C while a command still imported what it needs
        from flujo_cli.messages import cannot_write, fail

        if cannot_write(exc):  # output a command wrote without catching it, to a full disk (> /dev/full)
            fail(exc, debug=False)
        raise
    except BrokenPipeError:  # output that no command caught, written after its reader went away
        from flujo_cli.messages import output_closed, stdout_reader_gone

        if not stdout_reader_gone():
            raise
        output_closed()
    except SystemExit as exc:  # Typer turns a Ctrl-C no command handled into exit 130, silently
        context = exc.__context__
        if (
            exc.code == exit_codes.INTERRUPTED
            and context is not None
            and isinstance(context.__cause__, KeyboardInterrupt)
        ):
            _interrupted_before_start()
        _ignore_ctrl_c_while_exiting()
        _end_now_if_a_local_model_runs(exc.code)
        raise
    _ignore_ctrl_c_while_exiting()
    _end_now_if_a_local_model_runs(0)


def _ctrl_c_inside(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C in another form: an error raised from a ``KeyboardInterrupt``, or one that
    pydantic-core made of it (a Ctrl-C while a model's validator is built, at import, becomes a
    ``SchemaError`` whose text ends with the interrupt; it keeps no link to it)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return type(exc).__name__ == "SchemaError" and "KeyboardInterrupt" in str(exc)


def _ignore_ctrl_c_while_exiting() -> None:
    """The command has ended and its exit code is decided: a Ctrl-C now (Python restores the default
    handler as it finalizes) would end the process by SIGINT instead of with that code."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _end_now_if_a_local_model_runs(code: object) -> None:
    """End the process with ``code`` now, skipping the interpreter's and C++'s exit, if this process started
    the in-process llama.cpp server: its threads may still be generating (a Ctrl-C mid-reply), and llama.cpp's
    static objects, destroyed by a normal exit, are in use by them (SIGSEGV after the run was saved).
    The command is over: its store is closed and its output written; what is left is flushed here."""
    import sys

    server = sys.modules.get("core.agents.local_server")  # never imported: no server, nothing to do
    if server is None or not server.running():
        return
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message") prints it and exits 1, as Python would
        sys.stderr.write(f"{code}\n")
        status = 1
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            stream.flush()
    os._exit(status)


def _interrupted_before_start() -> NoReturn:
    import sys

    sys.stderr.write("error: interrupted before the command started\n")
    sys.stderr.flush()
    sys.stdout.flush()
    # Nothing is open yet. Python would end a process whose Ctrl-C landed in code run by exec() (a dataclass
    # being made as a module loads) by SIGINT even after it was handled, not with the documented code.
    os._exit(exit_codes.INTERRUPTED)


if __name__ == "__main__":
    main()
