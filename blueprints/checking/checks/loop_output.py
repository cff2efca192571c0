"""Fields of a loop's (or map's, or ensemble's) ``output`` that can only come out empty (``empty-output``).

``output`` takes two words for values (docs/loops.md): ``initial_prompt``, the loop's input (else the run's
input), which is empty only when the run is given none; and ``conversation_history``, the conversation the
loop runs in as lines. Outside a conversation (no ``conversation: true`` on the loop or around it) that is
the ``context.scratchpad.history`` list, which only ``init`` (``history.start_with``, a ``set``/``append`` to
it), a ``sink_to``, a step that updates the context, or the turns a conversational loop leaves behind can
fill; when nothing in the blueprint can, the field is always ``""``, and validate says so where it is
written. (An ensemble's own turns are not that history: they are ``previous_step.history`` in its
``output``.)

``init.history.start_with.from_step`` reads that step's output when the loop starts: a step that has not
run by then (it comes later, or inside the loop) leaves the history without its first line (in a
conversation, without its first turn), which validate says too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from blueprints.checking.checks.checker import Checker
from blueprints.checking.checks.sites import StepSite
from blueprints.reading.positions import Path
from blueprints.schema import (
    EnsembleStepModel,
    FieldsOutputModel,
    InitPresetsModel,
    LoopStepModel,
    MapStepModel,
    TextOutputModel,
)

_HINT = (
    "add conversation: true to the loop to record its turns, or fill the list: "
    "init: {history: {start_with: {from_step: <step>}}}, or sink_to: scratchpad.history"
)
_ENSEMBLE_HINT = 'the ensemble\'s own turns are "{{ previous_step.history }}" (each {turn, participant, output})'


def _words(output: TextOutputModel | FieldsOutputModel | dict[str, object] | None, path: Path) -> Iterator[Path]:
    """The paths of the ``conversation_history`` words in ``output`` (at ``path``)."""
    if output is None:
        return
    if isinstance(output, TextOutputModel):
        if output.text == "conversation_history":
            yield (*path, "text")
        return
    fields, base = (output.fields, (*path, "fields")) if isinstance(output, FieldsOutputModel) else (output, path)
    for key, value in fields.items():
        if value == "conversation_history":
            yield (*base, key)


def check_seed_steps(checker: Checker, sites: Sequence[StepSite]) -> None:
    """Warn where a loop's ``init.history.start_with.from_step`` names a step that has not run when the loop
    starts (no step of that name comes before the loop, outside it)."""
    for number, site in enumerate(sites):
        step = site.step
        if not isinstance(step, LoopStepModel) or not isinstance(step.loop.init, InitPresetsModel):
            continue
        history = step.loop.init.history
        name = history.start_with.from_step if history is not None else None
        named = [(index, other) for index, other in enumerate(sites) if other.step.name == name]
        if name is None or not named:
            continue  # no seed step, or one that does not exist (an error of its own)
        if any(index < number for index, _ in named):
            continue
        inside = all(other.path[: len(site.path)] == site.path for _, other in named)
        where = "inside" if inside else "after"
        filled = "its first turn" if step.loop.conversation else "context.scratchpad.history"
        checker.warning(
            "empty-output",
            f"from_step names {name!r}, a step {where} loop {step.name!r}: it has no output when the loop starts,"
            f" so init.history adds nothing to {filled}",
            checker.at((*site.path, "loop", "init", "history", "start_with", "from_step")),
            "name a step that comes before the loop",
        )


def check_empty_outputs(checker: Checker, sites: Sequence[StepSite]) -> None:
    """Warn at each ``conversation_history`` in a loop's, map's or ensemble's ``output`` that nothing can fill."""
    check_seed_steps(checker, sites)
    writes = checker.writes
    if writes is None or writes.any_key or "history" in writes.keys:
        return  # something can fill it (a conversational loop anywhere counts: its turns are the history)
    for site in sites:
        step = site.step
        if isinstance(step, LoopStepModel):
            words = _words(step.loop.output, (*site.path, "loop", "output"))
            what = "loop"
        elif isinstance(step, MapStepModel) and step.map.finalize is not None:
            words = _words(step.map.finalize.output, (*site.path, "map", "finalize", "output"))
            what = "map"
        elif isinstance(step, EnsembleStepModel):  # its own turns are previous_step.history, not this
            words = _words(step.ensemble.output, (*site.path, "ensemble", "output"))
            what = "ensemble"
        else:
            continue
        hint = _ENSEMBLE_HINT if what == "ensemble" else _HINT
        for path in words:
            checker.warning(
                "empty-output",
                f"conversation_history is always empty here: {what} {step.name!r} is not in a conversation "
                "(conversation: true) and nothing in this blueprint writes context.scratchpad.history",
                checker.at(path),
                hint,
            )
