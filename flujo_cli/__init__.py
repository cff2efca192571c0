"""The ``flujo`` command line. Start-up is kept fast: each command imports what it needs when it runs."""

from flujo_cli.early_interrupt import defer_when_started_as_command

__all__ = ["main"]

defer_when_started_as_command()  # Ctrl-C while the command line loads: one line, never a traceback


def main() -> None:
    from flujo_cli.main import main as _main

    _main()
