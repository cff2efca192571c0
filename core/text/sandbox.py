"""The bounded Jinja sandbox that templates and expressions run in.

Jinja's ``ImmutableSandboxedEnvironment`` keeps templates away from Python's internals; this subclass
also keeps them from exhausting memory or time (the bounds and each render's meter are ``core.text.bounds``):

- the operators that can amplify (``*``, ``**``, ``%``, ``+``) are intercepted (``intercepted_binops`` +
  ``call_binop``) and their operands checked before the operation. Intercepting them also stops Jinja
  from folding them at compile time, which is how ``9**(9**9)`` used to hang ``flujo validate``;
- every call (function, method, macro) and every filter counts a step, has its arguments and result
  checked, and the amplifying ones (``center``, ``ljust``, ``rjust``, ``zfill``, ``indent``, ``wordwrap``,
  ``replace``, ``expandtabs``, ``join``, ``format``, ``batch``, ``slice``, ``lipsum``) have their
  arguments checked before the call; ``str.format`` widths are checked field by field;
- every loop iteration counts a step, ``~`` joins and the rendered output are checked as they grow.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sized
from typing import Any

from jinja2 import Undefined, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedFormatter
from jinja2.utils import generate_lorem_ipsum

from core.model.views import LazyView
from core.text.bounds import BoundExceeded, RenderMeter, digits_of, meter, size_of

_SEQUENCES = (str, bytes, list, tuple)
_MAX_NUMBER_TEXT = 12  # a width written with more digits than this is over any size limit


# The patterns below are compiled at a template's first formatting: compiling them at import cost every run
# 1.2 M instructions, and most templates format nothing.
@functools.cache
def _printf_spec() -> re.Pattern[str]:
    return re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?[a-zA-Z%]")


@functools.cache
def _digits() -> re.Pattern[str]:
    return re.compile(r"\d+")


def _size(value: Any, bounds_cap: int) -> int:
    return len(value) if isinstance(value, str | bytes) else size_of(value, bounds_cap)


def _number(text: str, charge: RenderMeter) -> int:
    if len(text) > _MAX_NUMBER_TEXT:
        charge.made(10**_MAX_NUMBER_TEXT)  # raises: no limit is that large
    return int(text)


def _check_printf(charge: RenderMeter, template: str, arguments: Any) -> None:
    """Before ``template % arguments``: the widths and precisions it asks for, and what it prints."""
    cap = charge.bounds.template_max_size
    wanted = len(template) + _size(arguments, cap)
    for match in _printf_spec().finditer(template):
        for part in match.groups():
            if part == "*":
                raise BoundExceeded("a '*' width or precision in % formatting is not supported", "template_max_size")
            if part is not None:
                wanted += _number(part, charge)
    charge.made(wanted)


def _check_width(charge: RenderMeter, value: Any, width: Any) -> None:
    """Before padding ``value`` to ``width`` (center, ljust, rjust, zfill)."""
    if isinstance(width, int):
        charge.made(max(width, len(value) if isinstance(value, str | bytes) else 0))


def _check_replace(charge: RenderMeter, text: Any, old: Any, new: Any, count: Any) -> None:
    if isinstance(text, bytes) and isinstance(old, bytes) and isinstance(new, bytes):
        text, old, new = text.decode("latin-1"), old.decode("latin-1"), new.decode("latin-1")
    if not (isinstance(text, str) and isinstance(old, str) and isinstance(new, str)):
        return
    times = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and count >= 0:
        times = min(times, count)
    charge.made(len(text) + times * max(0, len(new) - len(old)))


def _check_join(charge: RenderMeter, separator: Any, items: list[Any]) -> None:
    cap = charge.bounds.template_max_size
    gap = len(separator) if isinstance(separator, str | bytes) else 0
    charge.made(sum(_size(item, cap) for item in items) + gap * max(len(items) - 1, 0))


def _check_method(
    charge: RenderMeter, method: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> tuple[Any, ...]:
    """Check a ``str``/``bytes`` method that can amplify before it runs; the (possibly materialised) args."""
    owner = getattr(method, "__self__", None)
    if not isinstance(owner, str | bytes):
        return args
    name = getattr(method, "__name__", "")
    if name in ("center", "ljust", "rjust", "zfill"):
        _check_width(charge, owner, args[0] if args else kwargs.get("width"))
    elif name == "expandtabs":
        size = args[0] if args else kwargs.get("tabsize", 8)
        if isinstance(size, int):
            tabs = owner.count("\t") if isinstance(owner, str) else owner.count(b"\t")
            charge.made(len(owner) + tabs * max(size, 0))
    elif name == "replace" and len(args) >= 2:
        _check_replace(charge, owner, args[0], args[1], args[2] if len(args) > 2 else kwargs.get("count"))
    elif name == "join" and args:
        items = list(args[0])  # an iterator is read once, here, so its size is known before joining
        _check_join(charge, owner, items)
        return (items, *args[1:])
    return args


def _check_binop(charge: RenderMeter, operator: str, left: Any, right: Any) -> None:
    cap = charge.bounds.template_max_size
    if operator == "*":
        if isinstance(left, int) and isinstance(right, _SEQUENCES):
            left, right = right, left
        if isinstance(left, _SEQUENCES) and isinstance(right, int):
            charge.made(min(_size(left, cap), cap + 1) * max(right, 0))
        elif isinstance(left, int) and isinstance(right, int):
            charge.digits(digits_of(left) + digits_of(right))
    elif operator == "**":
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            charge.digits(int(abs(left).bit_length() * right * 0.30103))
    elif operator == "%":
        if isinstance(left, str | bytes):
            _check_printf(charge, left if isinstance(left, str) else left.decode("latin-1"), right)
    elif operator == "+" and isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES):
        charge.made(_size(left, cap) + _size(right, cap))


class _BoundedFormatter(SandboxedFormatter):
    """``str.format`` in the sandbox, checking each field's width and precision before formatting it."""

    def format_field(self, value: Any, format_spec: str) -> Any:
        charge = meter()
        wanted = _size(value, charge.bounds.template_max_size) if isinstance(value, str | bytes) else 0
        for digits in _digits().findall(format_spec):
            wanted = max(wanted, _number(digits, charge))
        charge.made(wanted)
        return super().format_field(value, format_spec)


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    meter().made(max_words_size(n, max))
    return generate_lorem_ipsum(n, html, min, max)


def max_words_size(paragraphs: int, words: int) -> int:
    return max(paragraphs, 0) * max(words, 0) * 15  # the longest lorem ipsum word is 14 letters, plus a space


def _checked_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (the filter ``name``) with a step counted, its arguments and result checked, and the
    amplifying filters' arguments checked before it runs."""
    passes_argument = hasattr(function, "jinja_pass_arg")

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        charge = meter()
        charge.step()
        if name == "join":  # an iterator (``xs | map(...)``) is read once, here, so its size is known first
            at = 1 if passes_argument else 0
            if len(args) > at and isinstance(args[at], Iterable) and not isinstance(args[at], str | Sized):
                args = (*args[:at], list(args[at]), *args[at + 1 :])
        given = args[1:] if passes_argument else args
        for value in (*given, *kwargs.values()):
            charge.check(value)
        _check_filter(charge, name, given, kwargs)
        if name == "sum":
            return _linear_sum(function, args, kwargs)
        return charge.check(function(*args, **kwargs))

    return checked


def _check_filter(charge: RenderMeter, name: str, given: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    def argument(position: int, key: str, default: Any) -> Any:
        return given[position] if len(given) > position else kwargs.get(key, default)

    value = argument(0, "value", None)
    text = value if isinstance(value, str) else str(value) if not isinstance(value, Iterable) else ""
    if name == "center":
        _check_width(charge, text, argument(1, "width", 80))
    elif name == "indent":
        width = argument(1, "width", 4)
        pad = width if isinstance(width, int) else len(str(width))
        charge.made(len(text) + max(pad, 0) * (text.count("\n") + 1))
    elif name == "wordwrap":
        width = argument(1, "width", 79)
        wrap = argument(3, "wrapstring", None) or "\n"
        breaks = len(text) // max(width, 1) + 1 if isinstance(width, int) else len(text) + 1
        charge.made(len(text) + breaks * (len(wrap) if isinstance(wrap, str) else 1))
    elif name == "replace":
        _check_replace(charge, value, argument(1, "old", None), argument(2, "new", None), argument(3, "count", None))
    elif name == "format" and isinstance(value, str):
        _check_printf(charge, value, (*given[1:], *kwargs.values()))
    elif name == "join" and isinstance(value, list | tuple):
        _check_join(charge, argument(1, "d", ""), list(value))
    elif name in ("batch", "slice"):
        count = argument(1, "linecount" if name == "batch" else "slices", 1)
        if isinstance(count, int):
            charge.made(count)


def _linear_sum(function: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """The ``sum`` filter, in linear time when it concatenates lists (Python's ``sum`` copies each time)."""
    start = kwargs.get("start", args[3] if len(args) > 3 else 0)
    if not isinstance(start, list | tuple):
        return meter().check(function(*args, **kwargs))
    attribute = kwargs.get("attribute", args[2] if len(args) > 2 else None)
    if attribute is not None:
        return meter().check(function(*args, **kwargs))
    items = list(start)
    for item in args[1]:
        items.extend(item)
        meter().made(0 if len(items) <= meter().bounds.template_max_size else len(items))
    return meter().check(type(start)(items))


class _CountingCodeGenerator(CodeGenerator):
    """Jinja's code generator, with each loop iteration counted and ``~`` joins checked."""

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        node.iter = nodes.Call(
            nodes.EnvironmentAttribute("counted"), [node.iter], [], None, None, lineno=node.iter.lineno
        )
        super().visit_For(node, frame)

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.joined((")
        for argument in node.nodes:
            self.visit(argument, frame)
            self.write(", ")
        self.write("))")


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The sandbox of templates and expressions, within the current ``core.text.bounds`` bounds."""

    intercepted_binops = frozenset({"*", "**", "%", "+"})
    code_generator_class = _CountingCodeGenerator

    def __init__(self, **options: Any) -> None:
        super().__init__(finalize=_check_output, **options)
        self.globals["lipsum"] = _lipsum
        self.filters = {name: _checked_filter(name, function) for name, function in self.filters.items()}

    def make_globals(self, d: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        """A template's globals as a plain dict, not Jinja's ``ChainMap`` over the environment's: every render
        copies them into its context, and copying a ChainMap goes key by key in Python (a third of a small
        render's time). Our globals are all set before any template is compiled, as Jinja asks, so a copy
        made at compile time holds the same."""
        return {**self.globals, **(d or {})}

    def getattr(self, obj: Any, attribute: str) -> Any:
        """``obj.attribute``. On run data (a dict, a view), a name its type does not have is the key, as in
        Jinja, found without raising and catching the AttributeError that Jinja's order (the attribute
        first) costs on every ``steps.x.output`` read; a name the type has (``items``) goes Jinja's way."""
        kind = type(obj)
        if (kind is dict or kind is LazyView) and attribute not in _TYPE_NAMES[kind]:
            try:
                return obj[attribute]
            except LookupError:
                return self.undefined(obj=obj, name=attribute)
        return super().getattr(obj, attribute)

    def unsafe_undefined(self, obj: Any, attribute: str) -> Undefined:
        """Refuse an unsafe attribute (``x.__class__``, also inside ``str.format``) at once. Jinja's way is an
        undefined value that raises only when it is used: printed by a template, but in an expression made
        with ``undefined_to_none`` it read as None, so an escape attempt in an exit or branch condition was
        silently false instead of the error the same text is in a template."""
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe.")

    def add_filter(self, name: str, function: Callable[..., Any]) -> None:
        """Install a filter of our own, checked like Jinja's."""
        self.filters[name] = _checked_filter(name, function)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _check_binop(meter(), operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        if __obj == __self.counted:  # a loop's iterable: iterating it makes nothing, each item is a step
            return __self.counted(*args)
        charge = meter()
        charge.step()
        for value in (*args, *kwargs.values()):
            charge.check(value)
        args = _check_method(charge, __obj, args, kwargs)
        return charge.check(super().call(__context, __obj, *args, **kwargs))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None or isinstance(value.__self__, str) is False:
            return wrapped
        owner: str = value.__self__
        formatter = _BoundedFormatter(self)
        is_map = value.__name__ == "format_map"

        def bounded(*args: Any, **kwargs: Any) -> str:
            if is_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one argument")
                return str(formatter.vformat(owner, (), args[0]))
            return str(formatter.vformat(owner, args, kwargs))

        return functools.update_wrapper(bounded, value)

    def counted(self, iterable: Any) -> Iterator[Any]:
        """A loop's items, one step each."""
        for item in iterable:
            meter().step()
            yield item

    def joined(self, parts: tuple[Any, ...]) -> str:
        """``a ~ b``: the parts as text, checked before they are joined."""
        charge = meter()
        for part in parts:
            _check_output(part)
        texts = [str(part) for part in parts]
        charge.made(sum(len(text) for text in texts))
        return "".join(texts)

    def concat(self, parts: Iterable[str]) -> str:  # Jinja's is "".join
        """The output of a template (or block, or macro), checked as it grows."""
        limit = meter().bounds.template_max_size
        kept: list[str] = []
        length = 0
        for part in parts:
            length += len(part)
            if length > limit:
                meter().made(length)  # raises
            kept.append(part)
        meter().made(length)
        return "".join(kept)


_TYPE_NAMES: dict[type, frozenset[str]] = {dict: frozenset(dir(dict)), LazyView: frozenset(dir(LazyView))}

UNREAD = object()
"""What ``read_keys`` returns when a name of the path is not read as a key of run data."""


def read_keys(value: Any, names: tuple[str, ...]) -> Any:
    """``value.n1.n2...`` for ``names`` as ``BoundedSandbox.getattr`` reads it when every step is a key of run
    data (a dict or a view, the name not one of its type's): the value found, else ``UNREAD`` (a missing
    key, another type, a name of the type), which only Jinja can tell the meaning of."""
    for name in names:
        kind = type(value)
        if (kind is not dict and kind is not LazyView) or name in _TYPE_NAMES[kind]:
            return UNREAD
        try:
            value = value[name]
        except LookupError:
            return UNREAD
    return value


def _check_output(value: Any) -> Any:
    """What ``{{ ... }}`` prints, checked before it is turned into text."""
    return meter().check(value)


__all__ = ["BoundExceeded", "BoundedSandbox"]
