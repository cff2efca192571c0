"""Options whose value may be left out: ``flujo lens export RUN --otlp [ENDPOINT]``.

Typer's parser gives every option that takes a value the next word. Here such an option takes the next word
only when it can be its value (an endpoint: a word with ``:`` or ``/`` in it, not an option); otherwise the
option is given the empty text, which the command reads as "the configured one". So ``--otlp`` may end the
command line or stand before the run id or another option (``flujo lens export --otlp 3f2a``), and
``--otlp http://host:4318`` or ``--otlp=http://host:4318`` name the endpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from flujo_cli.help_style import Command

if TYPE_CHECKING:
    from typer._click import Context


def with_values(args: Sequence[str], options: frozenset[str]) -> list[str]:
    """``args`` with an empty value after each of ``options`` given without one."""
    given: list[str] = []
    for index, arg in enumerate(args):
        given.append(arg)
        if arg in options:
            following = args[index + 1] if index + 1 < len(args) else None
            if following is None or following.startswith("-") or not any(c in following for c in ":/"):
                given.append("")
    return given


class OptionalValueCommand(Command):
    """A command whose options in ``optional`` may be given without their value (module docstring)."""

    optional: ClassVar[frozenset[str]] = frozenset({"--otlp"})

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, with_values(args, self.optional))
