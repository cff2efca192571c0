"""The run store grows with the conversation, not with its square (issue 5): each turn and message is
stored once, whatever number of ``agent.prompt`` events and step records repeat it."""

from __future__ import annotations

from pathlib import Path

from tests.support.storage_growth import measure


def test_a_hundred_turn_conversation_takes_at_most_three_times_its_text(tmp_path: Path) -> None:
    growth = measure(100, tmp_path / "flujo.db")
    assert growth.raw_bytes >= 100 * 790
    assert growth.ratio <= 3.0, f"{growth.db_bytes} bytes for {growth.raw_bytes} bytes of text"


def test_twice_the_turns_takes_about_twice_the_space(tmp_path: Path) -> None:
    small = measure(100, tmp_path / "small" / "flujo.db")
    large = measure(200, tmp_path / "large" / "flujo.db")
    # Quadratic growth would make the larger database about four times the smaller one.
    assert large.db_bytes <= 2.2 * small.db_bytes, (small, large)
    assert large.ratio <= small.ratio
