"""Checks of sub-workflow steps (``uses: imports.<alias>``) and their ``config`` block, within one file.

``config`` acts only on a sub-workflow step; ``outputs`` read from a root of the child's final context
and write only the parent's scratchpad; keys that cannot act on a sub-workflow warn. What needs the
imported file (it exists, no cycle, ``steps.<name>`` in ``outputs``) is checked in
``blueprints.checking.import_graph``.
"""

from __future__ import annotations

from blueprints.checking.checks.checker import Checker
from blueprints.checking.checks.sites import StepSite
from blueprints.checking.checks.write_targets import check_write_target
from blueprints.reading.positions import Path
from blueprints.reading.suggestions import one_of
from blueprints.schema import AgentStepModel, ImportConfigModel
from core import CHILD_PATH_ROOTS

# Parts of the parent's context that the run maintains; outputs write only to the scratchpad.
_READ_ONLY = ("steps", "initial_prompt", "hitl_history", "conversation_history")


def check_workflow_step(checker: Checker, site: StepSite) -> None:
    step = site.step
    assert isinstance(step, AgentStepModel)
    path = site.path
    if not (step.uses or "").startswith("imports."):
        if step.config is not None:
            checker.warning(
                "ignored-key",
                f"config has no effect on step {step.name!r}; only a sub-workflow step (uses: imports.<alias>) "
                "takes config",
                checker.key_at((*path, "config")),
            )
        return
    if step.output_schema is not None:
        checker.warning(
            "ignored-key",
            f"output_schema has no effect on sub-workflow step {step.name!r}; its output is the imported "
            "blueprint's output",
            checker.key_at((*path, "output_schema")),
        )
    if step.use_history is not None and site.loop is not None and site.loop.conversation:
        checker.warning(
            "ignored-key",
            f"use_history has no effect on sub-workflow step {step.name!r}: a sub-workflow never sees the "
            "parent's conversation",
            checker.key_at((*path, "use_history")),
        )
    if step.config is not None:
        _check_config(checker, step.config, (*path, "config"))


def _check_config(checker: Checker, config: ImportConfigModel, path: Path) -> None:
    if not config.propagate_hitl:
        checker.error(
            "bad-value",
            "propagate_hitl: false is not supported: a question inside a sub-workflow always pauses the parent run",
            checker.at((*path, "propagate_hitl")),
            "remove propagate_hitl",
        )
    if "input_scratchpad_key" in config.fields_given and config.input_to == "initial_prompt":
        checker.warning(
            "ignored-key",
            "input_scratchpad_key has no effect with input_to: initial_prompt",
            checker.key_at((*path, "input_scratchpad_key")),
            "set input_to: scratchpad (or both) to place the input in the child's scratchpad",
        )
    outputs = config.outputs
    if outputs is None:
        return
    here = (*path, "outputs")
    entries: list[tuple[str, str, Path, Path]] = (
        [(m.child, m.parent, (*here, n, "child"), (*here, n, "parent")) for n, m in enumerate(outputs)]
        if isinstance(outputs, list)
        else [(child, parent, (*here, child), (*here, child)) for child, parent in outputs.items()]
    )
    for child, parent, child_at, parent_at in entries:
        child_root = child.removeprefix("context.").split(".")[0]
        if child_root not in CHILD_PATH_ROOTS:
            where = checker.key_at(child_at) if isinstance(outputs, dict) else checker.at(child_at)
            checker.error(
                "bad-value",
                f"outputs: cannot read {child!r} from the sub-workflow",
                where,
                f"start the child path with {one_of(CHILD_PATH_ROOTS)}",
            )
        parent_root = parent.removeprefix("context.").split(".")[0]
        if not check_write_target(checker, parent_at, parent, "outputs:", "scratchpad.result"):
            continue
        if parent_root in _READ_ONLY:
            checker.error(
                "bad-value",
                f"outputs can write only the parent's scratchpad, not {parent!r}",
                checker.at(parent_at),
                "write under scratchpad.<name>",
            )
