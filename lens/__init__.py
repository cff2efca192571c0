"""Lens: reads the run store and renders runs, steps and traces (arrives with issue 6).

Imports ``core``'s store and records only; ``flujo_cli`` imports lens, never the other way round.
"""

__all__: list[str] = []
