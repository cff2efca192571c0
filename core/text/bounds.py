"""The bounds in force (``BoundsSettings``, the ``[bounds]`` section of the settings), and what one template
render or expression evaluation may cost and make.

The bounds are set for the current context with ``use_bounds`` (the CLI does it once it has read the
settings; otherwise the documented defaults apply) and read with ``current_bounds``: agents read the
size of output they accept there too. Each render or
evaluation gets a fresh ``RenderMeter`` (``rendering()``); the sandbox (``core.text.sandbox``) charges it:

- ``step()`` for every loop iteration and every call (a filter, a function, a macro): at most
  ``template_max_steps``;
- ``made(size)`` for every value it makes, checked *before* an amplifying operation allocates it
  wherever the size can be known in advance: no value over ``template_max_size`` (characters of a text,
  items of a list or mapping counted with their contents), no integer over ``template_max_digits`` digits,
  and at most ``template_max_total`` made in all.

Bounds are checked by counting, never by signals or timers, so a refusal is exact and repeatable. A
passed bound raises ``BoundExceeded`` (not a FlujoError: the template layer turns it into a
TemplateError naming the template and the setting).

Words, as the code uses them (each names one thing):

- *bounds*: what hostile or broken input may cost (this module; ``BoundsSettings``, the ``[bounds]``
  settings). A render's ``RenderMeter`` counts against them; ``BoundExceeded`` refuses what passes one.
- *limits*: what a run may spend, in tokens and dollars (``core.steps.kinds.Limits``, the blueprint's ``limits:``
  and ``flujo run --max-tokens/--max-cost-usd``, defaulted by ``core.settings.config.LimitSettings``, the
  ``[limits]`` settings). Passing one stops the run with ``LimitReached``.
- *reservation*: the share of the limits a call in flight holds until its usage is known
  (``core.policies.frame.Reservation``).
- the history's *bound*: the newest turns of a conversation that fit its ``history`` settings and the
  agent's ``prompt_budget`` (``core.conversation.history.bound``), what a prompt sends of the history.
- *prompt budget*: the most tokens a prompt to an agent may hold, its context window minus the reply
  reserve (``Agent.prompt_budget``).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

if TYPE_CHECKING:
    from pydantic import Field  # put in this module's namespace when settings are checked (core.settings.validating)


@dataclass(kw_only=True)
class BoundsSettings:
    """How much hostile or broken input may cost: nesting and size of YAML files (blueprints, imports,
    answers files), how many iterations a loop may ask for, the values templates and expressions make and
    the work they do, and the size of what an agent replies. Past a bound, the input is refused with an
    error that names the bound; nothing hangs or runs out of memory. See docs/blueprints.md#limits. Not the
    run's usage limits (``LimitSettings``): the words are in this module's docstring."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid", "allow_inf_nan": False}

    yaml_max_depth: Annotated[int, Field(gt=0, le=300)] = 100  # deeper recursion would exhaust Python's stack
    yaml_max_values: Annotated[int, Field(gt=0)] = 100_000
    blueprint_max_bytes: Annotated[int, Field(gt=0)] = 5_000_000  # refused before it is parsed
    loop_max_iterations: Annotated[int, Field(gt=0)] = 1_000_000  # the largest max_loops a loop may set
    import_max_depth: Annotated[int, Field(gt=0, le=200)] = 32
    template_max_size: Annotated[int, Field(gt=0)] = 10_000_000
    template_max_total: Annotated[int, Field(gt=0)] = 50_000_000
    template_max_steps: Annotated[int, Field(gt=0)] = 100_000
    template_max_digits: Annotated[int, Field(gt=0, le=4300)] = 4300  # Python prints no longer integer
    template_max_nesting: Annotated[int, Field(gt=0, le=500)] = 100
    agent_output_max_bytes: Annotated[int, Field(gt=0)] = 10_000_000


_DEFAULT_BOUNDS = BoundsSettings()
_BOUNDS: ContextVar[BoundsSettings | None] = ContextVar("flujo_bounds", default=None)
_CURRENT: ContextVar[RenderMeter | None] = ContextVar("flujo_render_meter", default=None)

_DIGITS_PER_BIT = 0.30103  # log10(2)


class BoundExceeded(Exception):
    """A template or expression passed one of its bounds; ``setting`` names it (``template_max_size``)."""

    def __init__(self, message: str, setting: str) -> None:
        super().__init__(message)
        self.message = message
        self.setting = setting


def use_bounds(bounds: BoundsSettings) -> None:
    """Apply ``bounds`` to every render and evaluation in the current context (and the tasks it starts)."""
    _BOUNDS.set(bounds)


def current_bounds() -> BoundsSettings:
    """The bounds set by ``use_bounds`` in this context, else the defaults."""
    return _BOUNDS.get() or _DEFAULT_BOUNDS


class RenderMeter:
    """The counters of one render or evaluation, charged against the bounds."""

    __slots__ = ("bounds", "steps", "total")

    def __init__(self, bounds: BoundsSettings) -> None:
        self.bounds = bounds
        self.steps = 0
        self.total = 0

    def step(self) -> None:
        self.steps += 1
        if self.steps > self.bounds.template_max_steps:
            raise BoundExceeded(
                f"it took more than {self.bounds.template_max_steps:,} steps (loop iterations and calls)",
                "template_max_steps",
            )

    def made(self, size: int) -> None:
        """Charge a value of ``size`` (characters or items); refuse it when it is too big."""
        if size > self.bounds.template_max_size:
            raise BoundExceeded(
                f"it would make a value of more than {self.bounds.template_max_size:,} characters or items",
                "template_max_size",
            )
        self.total += size
        if self.total > self.bounds.template_max_total:
            raise BoundExceeded(
                f"it made more than {self.bounds.template_max_total:,} characters or items in all",
                "template_max_total",
            )

    def digits(self, digits: int) -> None:
        """Refuse an integer of more than ``template_max_digits`` digits (checked before it is computed)."""
        if digits > self.bounds.template_max_digits:
            raise BoundExceeded(
                f"it would make a number of about {digits:,} digits (at most {self.bounds.template_max_digits:,})",
                "template_max_digits",
            )

    def check(self, value: Any) -> Any:
        """Charge ``value`` (a result or an argument) by its size, contents counted; return it."""
        kind = type(value)
        if kind is str:
            self.made(len(value))
        elif kind is bool or kind is float or value is None:
            pass
        elif isinstance(value, str | bytes):
            self.made(len(value))
        elif isinstance(value, int) and not isinstance(value, bool):
            self.digits(digits_of(value))
        elif isinstance(value, list | tuple | dict | set | frozenset | Mapping):
            self.made(size_of(value, self.bounds.template_max_size))
        return value


def meter() -> RenderMeter:
    """The meter of the render in progress; a fresh one outside a render (constant folding at compile)."""
    current = _CURRENT.get()
    return current if current is not None else RenderMeter(current_bounds())


def rendering() -> Rendering:
    """A fresh meter for one render or evaluation: ``with rendering() as meter:``."""
    return Rendering()


class Rendering:
    """The context of one render: its meter is current inside it. A class, not a ``contextmanager``
    generator: it is entered on every render, several times an iteration."""

    __slots__ = ("_token",)

    def __enter__(self) -> RenderMeter:
        fresh = RenderMeter(current_bounds())
        self._token = _CURRENT.set(fresh)
        return fresh

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)


def digits_of(number: int) -> int:
    """Decimal digits of ``number``, from its bit length (exact to within one)."""
    return int(abs(number).bit_length() * _DIGITS_PER_BIT) + 1


def size_of(value: Any, cap: int) -> int:
    """The size of ``value`` with every shared reference counted again (what printing or encoding it would
    make): characters of texts, one per item, key and value of containers. Each distinct container is
    walked once (its size is remembered), so a structure that shares itself a billion times costs what
    its distinct parts do; the answer is exact up to ``cap`` and only "more than ``cap``" beyond."""
    if not isinstance(value, _CONTAINERS):
        return _leaf_size(value)
    if type(value) is list or type(value) is dict:
        try:
            return min(_plain_size(value, 0, [_PLAIN_WORK]), cap + 1)
        except _NotPlain:
            pass
    sizes: dict[int, int] = {}
    opened: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, children_done = stack.pop()
        if id(item) in sizes:
            continue
        children = _children(item)
        if not children_done:
            if id(item) in opened:  # a container inside itself: count it once
                sizes[id(item)] = 1
                continue
            opened.add(id(item))
            stack.append((item, True))
            stack.extend(
                (child, False) for child in children if type(child) not in _SCALARS and isinstance(child, _CONTAINERS)
            )
            continue
        opened.discard(id(item))
        total = 1
        for child in children:
            kind = type(child)
            if kind is str:
                total += 1 + len(child)
            elif kind in _SCALARS:
                total += 1
            else:
                total += sizes.get(id(child), 1) if isinstance(child, _CONTAINERS) else _leaf_size(child)
        sizes[id(item)] = min(total, cap + 1)
    return sizes[id(value)]


# ``size_of`` first walks plain data (lists and dicts of texts, numbers, booleans and None: what a template
# reads of run state, such as ``context.hitl_history``) as a tree, several times faster than the walk that
# remembers every container, and gives that walk the value when it meets anything else, a depth that only a
# container inside itself reaches, or more items than ``_PLAIN_WORK`` (which a structure sharing its parts
# many times would make it visit again and again). A tree walk that ends counts what that walk counts.
_PLAIN_DEPTH = 64
_PLAIN_WORK = 100_000


class _NotPlain(Exception):
    """Raised inside ``_plain_size`` on what only ``size_of``'s full walk may size."""


def _plain_size(value: list[Any] | dict[Any, Any], depth: int, work: list[int]) -> int:
    """``size_of(value)`` uncapped when ``value`` is a tree of plain data; else ``_NotPlain``."""
    if depth > _PLAIN_DEPTH:
        raise _NotPlain
    work[0] -= len(value) + 1
    if work[0] < 0:
        raise _NotPlain
    total = 1
    # A dict's keys, then its values: a key is never a list or a dict (they are not hashable).
    parts: Any = itertools.chain(value, value.values()) if type(value) is dict else value
    for item in parts:
        kind = type(item)
        if kind is str:
            total += 1 + len(item)
        elif kind in _SCALARS:
            total += 1
        elif kind is list or kind is dict:
            total += _plain_size(item, depth + 1, work)
        else:
            raise _NotPlain
    return total


_CONTAINERS = (list, tuple, dict, set, frozenset, Mapping)
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _leaf_size(value: Any) -> int:
    return 1 + len(value) if isinstance(value, str | bytes) else 1


def _children(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return [part for key in value for part in (key, value[key])]
    return list(value)
