"""The redactor of a command: what the settings say to mask (``redact_patterns``, the secret values), and a
warning the first time one of the user's patterns runs out of time on a text (``core.text.redaction``:
that text is masked whole, and the command goes on)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flujo_cli.messages import warning_line

if TYPE_CHECKING:
    from core import Redactor, Settings


def command_redactor(settings: Settings) -> Redactor:
    from core import Redactor, secret_values

    return Redactor(extra_patterns=settings.redact_patterns, secret_values=secret_values(settings), on_slow=_slow)


def _slow(pattern: str) -> None:
    warning_line(
        f"the redact pattern {pattern!r} ran too long on a text, which was masked whole: it backtracks "
        "without end on some texts; write it so that it cannot (settings: redact_patterns)"
    )
