"""What the documentation shows is what flujo does: docs/ examples and outputs, docs/loops.md's line
savings, and the specification documents' loop examples."""
