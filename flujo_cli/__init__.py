"""The ``flujo`` command line. Start-up is kept fast: each command imports what it needs when it runs."""

from flujo_cli.early_interrupt import defer_when_started_as_command, started_as_command

__all__ = ["main"]

defer_when_started_as_command()  # Ctrl-C while the command line loads: one line, never a traceback
if started_as_command():
    from flujo_cli import collection

    collection.from_start()  # no garbage collection while the command line loads (flujo_cli/collection.py)

    from flujo_cli.method_cache import install

    install()  # before any dataclass is made: their methods' compiled code is reused


def main() -> None:
    from flujo_cli.main import main as _main

    _main()
