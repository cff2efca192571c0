"""``Replay``: a new run of a blueprint served from a recording (``core.replay.recording``), call by call.

Each call the run is about to make is looked up by its step path (the next recorded call there not served
yet) and compared with it, as the journal keeps both (masked):

- an agent call: its messages, exactly (a changed system prompt, a new turn in the history, another tool
  result differ); served: the recorded reply, no model called; a call that failed fails again, with the
  recorded error (RunError), so a branch a parallel ignored is ignored again;
- a tool call: its name and arguments as canonical JSON; served: the recorded outcome, the tool not run
  (no side effect), and nothing of what the recorded call did inside (a workflow tool's child run) runs;
- a question: its text; served: the recorded answer (``core.policies.person``). A simulated person's
  answers are not served as answers: its calls are, so that what it hears is compared too. A tool call's
  approval (``approve: ask``) is such a question, asked before the call is served; a recorded approval the
  run does not ask now (the tool no longer asks) diverges (``not_asked``).

The first call that differs, or that the recording does not have, is a divergence (``Divergence``, with a
unified diff). With ``mode="stop"`` it raises ``ReplayStop`` (the run ends as failed, ``ReplayDiverged``);
with ``mode="live"`` the run goes on live from there: every later call is made for real (answers are still
served where the question's path and text match, as ``--replay-answers`` serves them). When the run ends,
a recorded call it never made is a divergence too (``finish``).

A sub-workflow's child run asks the view ``within(path)`` gives (its calls are under its step's path); the
state (what was served, the divergences) is shared by the whole tree of runs. The run records that state
whenever it stops (``summary``); resumed, it goes on from there (``resumed``: the calls of the steps its
journal holds were served; ``restore``: the counts, and with ``live`` the divergence, so it stays live).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from core.model.errors import ReplayDiverged, ReplayStop, RunError
from core.replay.diffs import canonical, message_lines, messages_diff, unified, value_lines
from core.replay.recording import RecordedCall, Recording

Mode = Literal["stop", "live"]
MODES: tuple[Mode, ...] = ("stop", "live")


@dataclass(frozen=True)
class Divergence:
    """Where a replay left its recording: the step ``path``, ``reason`` (what differs) and the ``diff``."""

    path: str
    reason: str
    diff: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason, "diff": self.diff}


@dataclass
class ReplayLog:
    """What a replay did so far, shared by the run and its child runs."""

    served: int = 0  # agent and tool calls served from the recording
    answers: int = 0  # questions answered from it
    divergences: list[Divergence] = field(default_factory=list)
    live: bool = False  # diverged with mode "live": every call from there on is made for real
    used: set[int] = field(default_factory=set)  # indices of the recorded calls served, or skipped with them
    finished: bool = False


@dataclass(frozen=True)
class Replay:
    """The recording a run is served from, and how it treats a divergence (see the module docstring)."""

    recording: Recording
    mode: Mode = "stop"
    log: ReplayLog = field(default_factory=ReplayLog)
    prefix: str = ""  # inside a sub-workflow: the path of the step that started it, and "/"

    def within(self, path: str) -> Replay:
        """This replay for the child run the step at ``path`` starts."""
        return replace(self, prefix=f"{self.prefix}{path}/")

    @property
    def clean(self) -> bool:
        """Whether every call so far was served, none diverged."""
        return not self.log.divergences

    def agent_reply(
        self, path: str, messages: Sequence[Mapping[str, Any]], *, tools: Sequence[Mapping[str, Any]] | None = None
    ) -> RecordedCall | None:
        """The recorded call to serve for an agent call at ``path`` sending ``messages`` (masked) with the
        definitions of ``tools`` (a tool loop's model turn), or None when the run is live (the call is made).
        ReplayStop when it diverges with mode ``stop``; RunError, the recorded one, when the recorded call
        failed. The tools are compared when the recording kept them."""
        if self.log.live:
            return None
        full = self.prefix + path
        index = self._next(full)
        call = self.recording.calls[index] if index is not None else None
        if call is None or call.kind != "agent":
            diff = unified(_lines(call), message_lines(messages), path=full)
            return self._diverge(full, "the recording has no agent call here", diff)
        if not _same_messages(call.messages, messages):
            return self._diverge(
                full, "the prompt differs from the recorded one", messages_diff(call.messages, messages, path=full)
            )
        if call.tools is not None and canonical(list(call.tools)) != canonical(list(tools or ())):
            diff = unified(value_lines(list(call.tools)), value_lines(list(tools or ())), path=full)
            return self._diverge(full, "the tools offered differ from the recorded ones", diff)
        assert index is not None
        served = self._serve(index)
        if served.error is not None:  # it failed as it did then, without a call
            raise RunError(served.error, hint=served.hint)
        return served

    def tool_outcome(self, path: str, tool: str, arguments: Any) -> RecordedCall | None:
        """The recorded call to serve for a call of ``tool`` with ``arguments`` at ``path`` (its outcome), or
        None when the run is live (the tool runs). ReplayStop when it diverges with mode ``stop``."""
        if self.log.live:
            return None
        full = self.prefix + path
        index = self._next(full)
        call = self.recording.calls[index] if index is not None else None
        asked = {"tool": tool, "arguments": arguments}
        if call is None or call.kind != "tool":
            return self._diverge(
                full, "the recording has no tool call here", unified(_lines(call), value_lines(asked), path=full)
            )
        recorded = {"tool": call.tool, "arguments": call.arguments}
        if canonical(recorded) != canonical(asked):
            diff = unified(value_lines(recorded), value_lines(asked), path=full)
            return self._diverge(full, "the tool call differs from the recorded one", diff)
        self.log.used.update(self.recording.inside(full))  # what the call did inside does not happen now
        assert index is not None
        return self._serve(index)

    def answer_served(self, path: str, question: str, *, simulated: bool = True) -> bool:
        """Whether the recorded answer to the question at ``path`` (its text ``question``) may be served. A
        question the recording has no answer for, or asked in other words, diverges (ReplayStop with mode
        ``stop``); once live, its answer is served only when the path and the text match. A question a
        simulated person answered is not served as an answer (its call is), and does not diverge here,
        unless no simulated person answers it now (``simulated``): the person would be asked instead."""
        full = self.prefix + path
        recorded = self.recording.answer(full)
        if recorded is not None and recorded.source == "simulated":
            if not simulated and not self.log.live:
                diff = unified([f"answered by {recorded.by}"], ["asked to the person"], path=full)
                self._diverge(full, "a simulated person answered this question; none does now", diff)
            return False
        if recorded is not None and (recorded.question is None or recorded.question == question):
            return True
        if self.log.live:
            return False
        if recorded is None:
            self._diverge(full, "the recording has no answer to this question", unified([], [question], path=full))
        else:
            diff = unified((recorded.question or "").split("\n"), question.split("\n"), path=full)
            self._diverge(full, "the question differs from the recorded one", diff)
        return False

    def not_asked(self, path: str) -> None:
        """The question at ``path`` the recording answered is not asked now (a tool's approval, the tool no
        longer ``approve: ask``): a divergence (ReplayStop with mode ``stop``), unless the run is live or the
        recording has no answer there."""
        if self.log.live:
            return
        full = self.prefix + path
        recorded = self.recording.answer(full)
        if recorded is None:
            return
        diff = unified((recorded.question or "").split("\n"), [], path=full)
        self._diverge(full, "the recorded run asked this question; the run does not ask it now", diff)

    def answer_taken(self) -> None:
        """A recorded answer ``answer_served`` allowed was the one given (not an ``--answer`` given first)."""
        self.log.answers += 1

    def resumed(self, paths: Iterable[str]) -> None:
        """A resumed run replays the steps its journal holds (``paths``, of the run this replay serves):
        the recorded calls at those paths were served by the process that committed them."""
        done = {self.prefix + path for path in paths}
        for path in done:
            if path in self.recording.by_path:
                self.log.used.update(self.recording.by_path[path])
                self.log.used.update(self.recording.inside(path))

    def restore(self, report: Mapping[str, Any] | None) -> None:
        """A resumed run goes on as its earlier attempts left this replay (``report``: what they recorded, as
        ``summary`` writes it): what they served counts, and with mode ``live`` the divergence they went live
        at is kept and the run stays live. With mode ``stop`` the step that diverged runs again, and diverges
        again unless the blueprint changed back (a resume with ``--force``). A report of another recording
        is ignored."""
        if not isinstance(report, Mapping) or report.get("from") != self.recording.run_id:
            return
        served, answers = report.get("replayed_calls"), report.get("replayed_answers")
        self.log.served += served if isinstance(served, int) else 0
        self.log.answers += answers if isinstance(answers, int) else 0
        where = report.get("diverged_at")
        if self.mode == "live" and isinstance(where, str) and not self.log.divergences:
            reason, diff = report.get("reason"), report.get("diff")
            self.log.divergences.append(Divergence(where, str(reason or ""), str(diff or "")))
            self.log.live = True

    def summary(self) -> dict[str, Any]:
        """What a replayed run records of its replay (``RunRecord.options["replay_report"]``): the run it
        replayed, how, whether cleanly, how many calls and answers were served and where it diverged first
        (its reason and diff), so that a resumed run goes on from there (``restore``)."""
        first = self.log.divergences[0] if self.log.divergences else None
        return {
            "from": self.recording.run_id,
            "mode": self.mode,
            "clean": self.clean,
            "replayed_calls": self.log.served,
            "replayed_answers": self.log.answers,
            "diverged_at": first.path if first is not None else None,
            "reason": first.reason if first is not None else None,
            "diff": first.diff if first is not None else None,
        }

    def finish(self) -> Divergence | None:
        """When the run ends: the first recorded call it never made, as a divergence (logged), if the replay
        had not diverged already. Called once; later calls give None."""
        if self.log.finished or self.log.divergences:
            self.log.finished = True
            return None
        self.log.finished = True
        unused = [call for index, call in enumerate(self.recording.calls) if index not in self.log.used]
        if not unused:
            return None
        first = unused[0]
        reason = f"the run ended without making {len(unused)} recorded call(s)"
        divergence = Divergence(first.path, reason, unified(_lines(first), [], path=first.path))
        self.log.divergences.append(divergence)
        return divergence

    def report(self) -> dict[str, Any]:
        """What ``--json`` says of the replay."""
        return {
            "from": self.recording.run_id,
            "mode": self.mode,
            "clean": self.clean,
            "replayed_calls": self.log.served,
            "replayed_answers": self.log.answers,
            "recorded_calls": len(self.recording.calls),
            "diverged": [divergence.to_dict() for divergence in self.log.divergences],
        }

    def _next(self, full: str) -> int | None:
        return next((index for index in self.recording.by_path.get(full, ()) if index not in self.log.used), None)

    def _serve(self, index: int) -> RecordedCall:
        self.log.used.add(index)
        self.log.served += 1
        return self.recording.calls[index]

    def _diverge(self, path: str, reason: str, diff: str) -> RecordedCall | None:
        """Log a divergence; stop the run there (ReplayStop) or go live (None: the call is made)."""
        divergence = Divergence(path, reason, diff)
        self.log.divergences.append(divergence)
        if self.mode == "stop":
            error = ReplayDiverged(
                f"the replay of run {self.recording.run_id} diverged at {path}: {reason}",
                path=path,
                reason=reason,
                diff=diff,
                hint="see the diff above; replay with --on-divergence live to go on with real calls from there",
            )
            raise ReplayStop(error)
        self.log.live = True
        return None


def _lines(call: RecordedCall | None) -> list[str]:
    if call is None:
        return []
    if call.kind == "agent":
        return message_lines(call.messages)
    return value_lines({"tool": call.tool, "arguments": call.arguments})


def _same_messages(recorded: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> bool:
    """Whether two prompts are the same: message by message (texts compared in C, the first difference
    ends it), then as canonical JSON when a message's parts are of other types (a tuple for a list)."""
    if len(recorded) != len(new):
        return False
    if all(a == b for a, b in zip(recorded, new, strict=True)):
        return True
    return canonical(recorded) == canonical(new)
