# docs/examples/shipping_tools.py — a tool that asks for its call's context, to ship an order once.
from core import ToolCallContext


def ship(order: str, call: ToolCallContext) -> str:
    """Ship an order and return the shipment's id."""
    if call.attempt > 1 and call.on_progress is not None:  # a resume runs the call again after a crash
        call.on_progress(f"shipping {order} again: attempt {call.attempt} of {call.path}")
    # The same key in every attempt of this call, another in any other call: the carrier ships once per key.
    return carrier_ship(order, idempotency_key=f"{call.run_id}/{call.path}")


def carrier_ship(order: str, *, idempotency_key: str) -> str:
    """Stands in for a carrier's API, which ships once per idempotency key."""
    return f"shipment {idempotency_key} of {order}"
