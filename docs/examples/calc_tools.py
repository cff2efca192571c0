# docs/examples/calc_tools.py — the functions docs/examples/tools.yaml offers its agent as tools.
def add(a: float, b: float) -> float:
    """Add two numbers and return their sum."""
    return a + b


def multiply(a: float, b: float) -> float:
    """Multiply two numbers and return their product."""
    return a * b
