"""Script agents and builtins: ``python: "pkg.module:function"``, ``command: [argv...]``, and the
``flujo.builtins.passthrough`` / ``flujo.builtins.stringify`` builtins.

They are not models (``is_model`` is False): their prompt is one user message holding the input as
text, and they report no usage. Failures of the user's code become ``RunError`` naming the agent;
flujo errors and control signals raised by a Python function pass through untouched.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from core.agents.base import BaseAgent, input_text
from core.agents.child_process import missing_program, parse_output, run_command
from core.agents.detached import call_detached
from core.model.calls import AgentCall, AgentReply
from core.model.errors import ConfigError, ControlSignal, FlujoError, RunError
from core.model.views import LazyView, plain
from core.ports import Agent
from core.settings.config import child_environment, tool_environment

DEFAULT_COMMAND_TIMEOUT_S = 300.0


class _LocalAgent(BaseAgent):
    """What the non-model agents share: a label given when made; otherwise ``BaseAgent``'s defaults (the
    input as one user message, no cost). In a conversation they get the history as a text block before a
    text input, unless ``takes_history`` is False (the builtins, which only move their input along)."""

    def __init__(self, label: str) -> None:
        self._label = label

    @property
    def label(self) -> str:
        return self._label


class PythonAgent(_LocalAgent):
    """Calls a Python function with ``(input, context)`` (or just ``(input)``); sync or async.

    ``target`` is ``"package.module:function"``, resolved now (ConfigError when it cannot be), or the
    callable itself. ``context`` is a read-only view of ``call.context``. A sync function runs in a worker
    thread so it cannot stall the event loop.
    """

    def __init__(self, target: str | Callable[..., Any], *, name: str = "python") -> None:
        self.name = name
        self.path = target if isinstance(target, str) else _qualified_name(target)
        super().__init__(f"python:{self.path}")
        self.function = load_function(target, owner=f"agents.{name}") if isinstance(target, str) else target
        self._takes_context = _takes_context(self.function, owner=f"agents.{name} ({self.path})")

    async def run(self, call: AgentCall) -> AgentReply:
        facts = await run_facts(call)  # always: it records the attempt
        args: tuple[Any, ...] = (
            (call.input, script_context(call.context, facts)) if self._takes_context else (call.input,)
        )
        try:
            if inspect.iscoroutinefunction(self.function):
                result = await self.function(*args)
            else:
                result = await call_detached(self.function, *args)
                if inspect.isawaitable(result):
                    result = await result
        except (FlujoError, ControlSignal):
            raise
        except (Exception, SystemExit) as exc:  # the user's function failed (sys.exit() too): this agent's error
            raise RunError(f"agents.{self.name} ({self.path}) raised {type(exc).__name__}: {exc}") from exc
        return AgentReply(result)


def script_context(context: Mapping[str, Any], facts: dict[str, Any]) -> Mapping[str, Any]:
    """What a Python function is given as ``context``: a read-only mapping of ``context``'s entries as plain
    data, and ``run`` (``facts``). An entry is made plain only when the function reads it (then kept), so a
    function that reads ``scratchpad`` does not pay, on every call, for copying a conversation history
    that grows with the run. ``context`` is a snapshot (``RunContext.lazy_view``): reading it later gives
    what reading it now would."""
    keys = tuple(dict.fromkeys((*context, "run")))
    return MappingProxyType(_ScriptContext(keys, lambda key: facts if key == "run" else plain(context[key])))


class _ScriptContext(LazyView):
    """The mapping behind a Python function's ``context`` proxy, with what a ``MappingProxyType`` passes on
    to the mapping it wraps (``copy()``, ``|``, ``reversed``, ``repr``) giving what it gave when that was a dict."""

    __slots__ = ()

    def copy(self) -> dict[str, Any]:
        return dict(self)

    def __or__(self, other: Any) -> Any:
        return dict(self) | other if isinstance(other, dict) else NotImplemented

    def __ror__(self, other: Any) -> Any:
        return other | dict(self) if isinstance(other, dict) else NotImplemented

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._keys)

    def __repr__(self) -> str:
        return repr(dict(self))


def load_function(path: str, *, owner: str) -> Callable[..., Any]:
    """Import ``package.module:function`` (dots after the colon reach attributes); ConfigError if it fails."""
    module_name, colon, attribute = path.partition(":")
    if not colon or not module_name or not attribute:
        raise ConfigError(
            f"{owner}: python: {path!r} is not of the form 'package.module:function'",
            hint="write the module path, a colon, and the function name, e.g. my_tools.text:summarise",
        )
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # importing user code can fail in any way; each way means "cannot import"
        raise ConfigError(
            f"{owner}: cannot import {module_name!r} for python: {path}: {type(exc).__name__}: {exc}",
            hint="make sure the module is importable from the working directory (or PYTHONPATH)",
        ) from exc
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ConfigError(
                f"{owner}: {module_name!r} has no attribute {attribute!r} (python: {path})",
                hint="check the function name after the colon",
            )
        target = getattr(target, part)
    if not callable(target):
        raise ConfigError(f"{owner}: python: {path} is not callable", hint="point at a function")
    return target  # type: ignore[no-any-return]


def _takes_context(function: Callable[..., Any], *, owner: str) -> bool:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # some builtins have no signature: assume the documented (input, context)
        return True
    for args in ((None, None), (None,)):
        try:
            signature.bind(*args)
        except TypeError:
            continue
        return len(args) == 2
    raise ConfigError(
        f"{owner} must accept (input, context) or (input), but its signature is {signature}",
        hint="define it as def my_function(input, context): ...",
    )


def _qualified_name(function: Callable[..., Any]) -> str:
    module = getattr(function, "__module__", None) or "?"
    name = getattr(function, "__qualname__", None) or type(function).__name__
    return f"{module}:{name}"


async def run_facts(call: AgentCall) -> dict[str, Any]:
    """What a script needs to make its side effects idempotent: ``run_id``, ``step_path`` (the step's path
    in the run) and ``attempt`` (which execution of that step in this run this is, recorded by
    ``call.begin_attempt`` before the script starts; 1 when nothing records attempts, as for an agent called
    outside the engine). A Python function gets them as ``context["run"]``; a command as ``FLUJO_RUN_ID``,
    ``FLUJO_STEP_PATH`` and ``FLUJO_ATTEMPT`` in its environment."""
    attempt = await call.begin_attempt() if call.begin_attempt is not None else 1
    return {"run_id": call.run_id, "step_path": call.path, "attempt": attempt}


class CommandAgent(_LocalAgent):
    """Runs ``argv`` with the input on stdin (text as is, anything else as JSON).

    stdout is parsed as JSON when it is JSON, else returned as text without its trailing newline. A
    non-zero exit status, a missing program or a timeout is a RunError (``CommandFailed``, with the tail of
    stderr): ``core.agents.child_process.run_command``.
    """

    def __init__(self, argv: Sequence[str], *, name: str = "command", timeout: float | None = None) -> None:
        if not argv:
            raise ConfigError(f"agents.{name}: command is empty", hint='give an argv list, e.g. ["wc", "-w"]')
        super().__init__(f"command:{argv[0]}")
        self.name = name
        self.argv = tuple(argv)
        self.timeout = timeout if timeout is not None else DEFAULT_COMMAND_TIMEOUT_S

    async def run(self, call: AgentCall) -> AgentReply:
        env = {f"FLUJO_{key.upper()}": str(value) for key, value in (await run_facts(call)).items()}
        stdout = await run_command(
            self.argv,
            input_text(call.input).encode(),
            owner=f"agents.{self.name}",
            env=child_environment(env),
            timeout=self.timeout,
            started=call.process_started,
        )
        return AgentReply(parse_output(stdout))


class PassthroughAgent(_LocalAgent):
    """``flujo.builtins.passthrough``: returns its input unchanged."""

    takes_history = False

    def __init__(self) -> None:
        super().__init__("flujo.builtins.passthrough")

    async def run(self, call: AgentCall) -> AgentReply:
        return AgentReply(call.input)


class StringifyAgent(_LocalAgent):
    """``flujo.builtins.stringify``: returns its input as text (JSON for anything but a string)."""

    takes_history = False

    def __init__(self) -> None:
        super().__init__("flujo.builtins.stringify")

    async def run(self, call: AgentCall) -> AgentReply:
        return AgentReply(input_text(call.input))


BUILTINS: Mapping[str, Callable[[], Agent]] = {
    "flujo.builtins.passthrough": PassthroughAgent,
    "flujo.builtins.stringify": StringifyAgent,
}


def program_problem(
    program: str, *, tool: bool, env: Mapping[str, str] | None = None, cwd: str | None = None
) -> tuple[str, str] | None:
    """Why a command whose first item is ``program`` cannot start on this machine, as (what, hint), or None:
    looked for as a run starts it (``missing_program``), on the PATH of a tool's environment (``tool``: a
    ``command:`` tool or an MCP server, ``env`` on top; the Python running flujo's folder first) or of a
    ``command:`` agent's, from ``cwd``. ``flujo validate`` warns of it."""
    environment = tool_environment(dict(env or {})) if tool else child_environment({})
    return missing_program(program, env=environment, cwd=cwd)
