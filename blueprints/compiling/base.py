"""What every step's compiler uses: the blueprint, its agents and tools, places, templates, expressions,
callables.

``StepCompiler`` (``blueprints.compiling.compiler``) compiles one step kind after another; the loop's, the
map's and the ensemble's compilers (``loops``, ``ensembles``) are functions of a ``CompilerBase``, which
compiles their inner steps with ``steps``. They import this module, not the compiler, so the imports among
the three point one way: the compiler imports them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from blueprints.checking.callables import load_callable
from blueprints.checking.loader import Blueprint
from blueprints.compiling.agents import AgentBuilder
from blueprints.reading.positions import Path
from blueprints.schema import AnyStepModel
from core import BlueprintError, Expression, Pipeline, SourcePosition, Step, Template, TemplateSyntax

if TYPE_CHECKING:
    from blueprints.compiling.tools import ToolBuilder
    from core import ToolUse


class CompilerBase(ABC):
    """Compiles the steps of one blueprint; ``path`` arguments are data paths into the YAML."""

    def __init__(self, blueprint: Blueprint, agents: AgentBuilder, imported: Callable[[str], Pipeline]) -> None:
        self.blueprint = blueprint
        self.agents = agents
        self.imported = imported  # the Pipeline of imports.<alias>
        self._tools: ToolBuilder | None = None  # the tools each agent may call, made for the first that has some

    def tools_of(self, agent: str) -> ToolUse | None:
        """The tools agent ``agent`` may call (None when it has none). The tool code is imported by the
        blueprints whose agents have tools only."""
        if not self.blueprint.model.agents[agent].tools:
            return None
        if self._tools is None:
            from blueprints.compiling.tools import ToolBuilder

            self._tools = ToolBuilder(self.blueprint, self.imported)
        return self._tools.for_agent(agent)

    @abstractmethod
    def steps(self, models: Sequence[AnyStepModel], path: Path) -> tuple[Step, ...]:
        """The steps ``models`` describe, the first at ``(*path, 0)``."""

    def position(self, path: Path) -> SourcePosition:
        return self.blueprint.position(path)

    def template(self, source: str, path: Path) -> Template:
        try:
            return Template(source, position=self.position(path))
        except TemplateSyntax as exc:  # validation reports these; kept for blueprints built in code
            raise BlueprintError(f"template syntax error: {exc.message}", position=self.position(path)) from None

    def expression(self, source: str, path: Path) -> Expression:
        try:
            return Expression(source, position=self.position(path))
        except TemplateSyntax as exc:
            raise BlueprintError(f"expression syntax error: {exc.message}", position=self.position(path)) from None

    def function(self, spec: str, path: Path, *, role: str) -> Callable[..., Any]:
        """Import ``module:function`` for ``role`` (exit_condition, condition); it must be a plain function."""
        return load_callable(spec, position=self.position(path), search=self.blueprint.path.parent, role=role)
