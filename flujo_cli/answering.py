"""Who answers a run's questions, from the command line: ``--answer``/``--answers`` (given answers),
``--replay-answers RUN_ID``, ``--simulate-user agents.NAME``, then the terminal or piped stdin, else the run
pauses (the order is ``core.answering.order``'s, documented in docs/cli.md). After the run: what was replayed,
which questions were new, and who answered each question in ``--json``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rich.markup import escape

if TYPE_CHECKING:  # the engine's modules load only for a run (flujo_cli.commands.run imports this module)
    from rich.console import Console

    from core import Answering, Journal, Redactor, Replay, RunRecord, RunStore, SimulatedPerson
    from flujo_cli.human import TerminalHuman


@dataclass(frozen=True)
class AnswerFlags:
    """``--simulate-user`` and ``--replay-answers`` as given (None when not).

    They are recorded with the run (``RunRecord.options``, keys ``simulate_user`` and ``replay_answers``,
    the replayed run by its full id) and apply again when it is resumed, unless ``flujo resume`` is given
    the same flag: a resumed run keeps answering as it started."""

    simulate_user: str | None = None
    replay_answers: str | None = None
    # ``--replay RUN_ID`` (the whole run: models, tools and answers; core.replay) and ``--on-divergence``;
    # recorded as ``replay`` and ``on_divergence``.
    replay: str | None = None
    on_divergence: str = "stop"

    def over(self, recorded: Mapping[str, Any] | None) -> AnswerFlags:
        """These flags on top of those a run recorded: a flag given now wins. Values of the wrong type are
        ignored."""
        recorded = recorded or {}
        person, replay = recorded.get("simulate_user"), recorded.get("replay_answers")
        whole, mode = recorded.get("replay"), recorded.get("on_divergence")
        return AnswerFlags(
            simulate_user=self.simulate_user or (person if isinstance(person, str) else None),
            replay_answers=self.replay_answers or (replay if isinstance(replay, str) else None),
            replay=self.replay or (whole if isinstance(whole, str) else None),
            on_divergence=mode if self.replay is None and mode in ("stop", "live") else self.on_divergence,
        )

    def to_options(self, answering: Answering) -> dict[str, Any]:
        """These flags as the run records them (the replayed run by the full id ``answering`` found)."""
        options: dict[str, Any] = {}
        if self.simulate_user:
            options["simulate_user"] = self.simulate_user
        if answering.replay is not None and self.replay is None:
            options["replay_answers"] = answering.replay.run_id
        if self.replay is not None and answering.replay is not None:
            options["replay"] = answering.replay.run_id
            options["on_divergence"] = self.on_divergence
        return options


NO_ANSWER_FLAGS = AnswerFlags()


async def answering_for(
    flags: AnswerFlags,
    store: RunStore,
    given: TerminalHuman,
    person: SimulatedPerson | None,
    replay: Replay | None = None,
) -> Answering:
    """The answer sources of this run (RunError when the replayed run does not exist). With a ``replay`` of
    the whole run, its recording's answers."""
    from core import Answering

    if replay is not None:
        return Answering(given=given, replay=replay.recording.replayed_answers(), simulated_user=person)
    answers = None
    if flags.replay_answers:  # the replayed answers' module, imported by the runs that replay them only
        from core import recorded_answers

        answers = await recorded_answers(store, flags.replay_answers)
    return Answering(given=given, replay=answers, simulated_user=person)


async def replay_for(flags: AnswerFlags, store: RunStore, redactor: Redactor) -> tuple[Replay | None, RunRecord | None]:
    """The recording ``--replay RUN_ID`` names, to serve this run from, and that run's record (RunError when
    no run matches)."""
    if flags.replay is None:
        return None, None
    from core import Replay, load_recording

    recording = await load_recording(store, flags.replay, redactor)
    record = await store.get_run(recording.run_id)
    mode: Literal["stop", "live"] = "live" if flags.on_divergence == "live" else "stop"
    return Replay(recording, mode), record


def report_replay(replay: Replay, console: Console) -> None:
    """Say what the replay served, and where it diverged (with the diff)."""
    log = replay.log
    line = f"[dim]replayed {log.served} call(s) and {log.answers} answer(s) from run {replay.recording.run_id}"
    if replay.clean:
        console.print(line + "; no divergence[/]")
        return
    console.print(line + "[/]")
    for divergence in log.divergences[:1]:
        console.print(f"[yellow]diverged[/] at [bold]{escape(divergence.path)}[/]: {escape(divergence.reason)}")
        console.print(divergence.diff, highlight=False, markup=False)
    if replay.mode == "live" and log.divergences:
        console.print("[dim]went on live from there: this run is not a clean replay[/]")


async def given_answers_taken(store: RunStore, run_id: str) -> list[tuple[str, str]]:
    """``given_answers_in`` the journal of run ``run_id`` and its sub-workflows' child runs (those in flight
    too) as the store holds them now."""
    return given_answers_in(await _journal_of(store, run_id))


async def _journal_of(store: RunStore, run_id: str) -> Journal:
    from core import Journal

    children = await store.list_runs(limit=1_000_000, parent_run_id=run_id)
    return Journal(
        steps=tuple(await store.steps(run_id)),
        events=tuple(await store.events(run_id)),
        children=tuple([(child, await _journal_of(store, child.run_id)) for child in children]),
    )


def given_answers_in(journal: Journal, prefix: str = "") -> list[tuple[str, str]]:
    """The questions a run (whose ``Journal`` is ``journal``) and its child runs answered already with answers
    given up front, one (step name, path in the top run) per question: the answered questions whose
    ``hitl.answer`` event has no ``simulated`` or ``replayed`` mark. A run executed with no terminal (a
    worker) has no other source for them, so they took the first of the answers it was given;
    ``TerminalHuman.pass_over`` drops those. ``prefix`` is a child run's place in the top run (``review/``)."""
    from core import ChildRunStarted, QuestionAnswered

    events = journal.events
    marked = {
        event.path
        for event in events
        if isinstance(event.data, QuestionAnswered) and event.data.source in ("simulated", "replayed")
    }
    started = {event.data.child_run_id: event.path for event in events if isinstance(event.data, ChildRunStarted)}
    taken = [
        (step.name, f"{prefix}{step.path}")
        for step in journal.steps
        if step.kind == "hitl" and step.status == "completed" and step.path not in marked
    ]
    for child, inner in journal.children:
        where = started.get(child.run_id)
        taken += given_answers_in(inner, f"{prefix}{where}/" if where else prefix)
    return taken


def report_answers(answering: Answering, console: Console, *, whole: bool = False) -> None:
    """Say how many answers were replayed and which questions had none recorded (with --replay-answers; with
    ``whole``, a replay of the whole run, ``report_replay`` says it)."""
    log = answering.log
    if answering.replay is not None and not whole:
        line = f"[dim]replayed {log.replayed} answer(s) from run {answering.replay.run_id}"
        if log.new_questions:
            line += f"; new question(s): {escape(', '.join(log.new_questions))}"
        console.print(line + "[/]")
    if log.simulated:
        who = sorted({note.by or "" for note in log.notes if note.source == "simulated"})
        console.print(f"[dim]{log.simulated} answer(s) simulated by {escape(', '.join(who))}[/]")


def answers_json(answering: Answering) -> dict[str, Any]:
    """The ``--json`` keys about answers: who answered each question; with a replay, what it replayed."""
    log = answering.log
    data: dict[str, Any] = {"answers": [note.to_dict() for note in log.notes]}
    if answering.replay is not None:
        data["replay"] = {
            "from": answering.replay.run_id,
            "replayed": log.replayed,
            "new_questions": list(log.new_questions),
        }
    return data
