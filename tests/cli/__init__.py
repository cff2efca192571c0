"""Tests that drive ``flujo`` commands end to end (in-process, as a subprocess or at a pseudo-terminal), and
of flujo_cli's own modules (help, progress, line writing)."""
