"""The ``flujo`` command line. Start-up is kept fast: each command imports what it needs when it runs."""

__all__ = ["main"]


def main() -> None:
    from flujo_cli.main import main as _main

    _main()
