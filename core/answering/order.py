"""Who answers the questions a run asks a person, besides the person: given answers, an earlier run's
recorded answers, a simulated person. The engine takes one ``Answering`` (``Engine(answering=...)``);
``core.policies.person`` applies it to every question, in this order:

1. ``given`` — answers supplied up front (the CLI's ``--answer`` / ``--answers``);
2. ``replay`` — the answer an earlier run recorded for the same question path (``--replay-answers``);
3. the simulated person — the step's own ``answered_by``, else ``simulated_user`` (``--simulate-user``);
4. the person (``Engine(human=...)``: the terminal, piped stdin), who may have no answer now: the run pauses.

``log`` is written as the run goes (shared with sub-workflows' child runs), so the caller can say how
many answers were replayed and which questions were new.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from core.ports import HumanInput

if TYPE_CHECKING:  # only types here: a replay's and a simulated person's code loads when one is used
    from core.answering.replay import RecordedAnswers
    from core.answering.simulated_person import SimulatedPerson

AnswerSource = Literal["person", "given", "replayed", "simulated"]


@dataclass(frozen=True)
class AnswerNote:
    """One question answered: its path in the run (sub-workflow questions under their step's path), its
    step, who answered (``by``: the simulated person, or the run a replayed answer came from)."""

    path: str
    step: str
    source: AnswerSource
    by: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"path": self.path, "step": self.step, "source": self.source, "by": self.by}


@dataclass
class AnswerLog:
    """The questions a run answered so far, and those a replay had no recorded answer for."""

    notes: list[AnswerNote] = field(default_factory=list)
    new_questions: list[str] = field(default_factory=list)

    @property
    def replayed(self) -> int:
        return sum(1 for note in self.notes if note.source == "replayed")

    @property
    def simulated(self) -> int:
        return sum(1 for note in self.notes if note.source == "simulated")


@dataclass(frozen=True)
class Answering:
    """The answer sources tried before the person (see the module docstring)."""

    given: HumanInput | None = None
    replay: RecordedAnswers | None = None
    simulated_user: SimulatedPerson | None = None
    log: AnswerLog = field(default_factory=AnswerLog)
    prefix: str = ""  # inside a sub-workflow: the path of the step that started it, and "/"

    def within(self, path: str) -> Answering:
        """These sources for the child run the step at ``path`` starts (its question paths are its own)."""
        return replace(self, prefix=f"{self.prefix}{path}/")
