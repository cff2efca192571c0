"""The interactive viewer driven headless with Textual's pilot: opening and closing nodes with
Enter, Space and the arrow keys, ``e`` / ``c``, searching with ``/`` then ``n`` / ``N``, the detail pane, and
``q``. The run is tests/support/lens_runs.py's demo run."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rich.console import Console, RenderableType
from textual.pilot import Pilot
from textual.widgets import Input, Static, Tree
from textual.widgets.tree import TreeNode

from core import Redactor
from core.store import MemoryStore
from lens import CallNode, MessageNode, Node, RunNode, StepNode, build_tree, focus, load_run, walk
from lens.viewer import TraceViewer
from tests.core.test_conversation_runs import compile_text, run
from tests.support.lens_runs import DEMO, SYSTEM_PROMPT, record_demo

SIZE = (120, 40)


def text_of(renderable: RenderableType) -> str:
    console = Console(file=io.StringIO(), width=SIZE[0], color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined,no-any-return]


@pytest.fixture
async def demo() -> RunNode:
    store = MemoryStore()
    await record_demo(store)
    return build_tree(await load_run(store, DEMO, redactor=Redactor()))


@pytest.fixture
async def viewer(demo: RunNode) -> AsyncIterator[tuple[TraceViewer, Pilot[None]]]:
    app = TraceViewer(demo)
    app.animation_level = "none"  # scrolling to the cursor is animated: the pilot would wait for each frame
    async with app.run_test(size=SIZE) as pilot:
        yield app, pilot


def tree_of(app: TraceViewer) -> Tree[Node]:
    return app.query_one("#tree", Tree)


def shown(app: TraceViewer) -> str:
    return text_of(app.query_one("#detail", Static).content)  # type: ignore[arg-type]


def cursor(app: TraceViewer) -> Node:
    node = tree_of(app).cursor_node
    assert node is not None and node.data is not None
    return node.data


async def search(app: TraceViewer, pilot: Pilot[None], words: str) -> None:
    """``/``, the words (set at once: typing each key with the pilot costs ~0.1 s), Enter."""
    await pilot.press("slash")
    app.query_one("#search", Input).value = words
    await pilot.press("enter")


def labels_of(widget: TreeNode[Node]) -> list[str]:
    return [str(child.label) for child in widget.children]


async def test_it_opens_on_the_run_with_its_steps_and_the_run_in_the_detail(
    viewer: tuple[TraceViewer, Pilot[None]],
) -> None:
    app, _ = viewer
    root = tree_of(app).root
    assert root.is_expanded
    assert [label.split("  ")[0] for label in labels_of(root)] == [
        "✓ get_goal", "✓ chat", "✓ reviews", "✓ publish", "✓ route", "✗ report",
    ]  # fmt: skip
    assert all(not child.is_expanded for child in root.children)
    assert DEMO in shown(app) and "template failed" in shown(app)


async def test_enter_space_and_arrows_open_and_close(viewer: tuple[TraceViewer, Pilot[None]]) -> None:
    app, pilot = viewer
    tree = tree_of(app)
    chat = tree.root.children[1]
    await pilot.press("down", "down")  # the root is line 0
    assert cursor(app) is chat.data
    await pilot.press("enter")
    assert chat.is_expanded and labels_of(chat)[:2] == ["iteration 1", "iteration 2"]
    await pilot.press("enter")
    assert not chat.is_expanded
    await pilot.press("space")
    assert chat.is_expanded
    await pilot.press("space")
    assert not chat.is_expanded
    await pilot.press("right")  # opens a closed node ...
    assert chat.is_expanded and cursor(app) is chat.data
    await pilot.press("right")  # ... then goes to its first child
    assert cursor(app) is chat.children[0].data
    await pilot.press("left")  # on a closed node: to the parent
    assert cursor(app) is chat.data
    await pilot.press("left")  # on an open node: closes it
    assert not chat.is_expanded and cursor(app) is chat.data


async def test_e_opens_everything_and_c_closes_everything(
    viewer: tuple[TraceViewer, Pilot[None]], demo: RunNode
) -> None:
    app, pilot = viewer
    await pilot.press("e")
    tree = tree_of(app)
    created = list(_all(tree.root))
    assert len(created) == sum(1 for _ in walk(demo))  # every node of the model, messages included
    assert all(node.is_expanded for node in created if node.allow_expand)
    await pilot.press("c")
    assert not any(node.is_expanded for node in _all(tree.root) if node is not tree.root)
    assert tree.root.is_expanded and cursor(app) is demo


def _all(widget: TreeNode[Node]) -> list[TreeNode[Node]]:
    found = [widget]
    for child in widget.children:
        found.extend(_all(child))
    return found


async def test_search_opens_the_way_to_each_match_and_escape_closes_it(viewer: tuple[TraceViewer, Pilot[None]]) -> None:
    app, pilot = viewer
    await pilot.press("slash")
    box = app.query_one("#search", Input)
    assert box.has_focus
    await pilot.press("3")  # typed ...
    box.value += "000 EUROS"  # ... (the rest set at once: the pilot takes ~0.05 s a key); case does not matter
    await pilot.press("enter")
    first = cursor(app)
    status = text_of(app.query_one("#status", Static).content)  # type: ignore[arg-type]
    assert "match 1 of 2 for '3000 EUROS'" in status
    assert isinstance(first, StepNode) and first.path == "chat/2/clarify"  # its input is that answer
    assert tree_of(app).has_focus and not box.has_class("open")
    assert "About 3000 euros" in shown(app)
    await pilot.press("n")  # then the message that said it, inside the step's (closed) agent call
    second = cursor(app)
    assert isinstance(second, MessageNode) and second.content == "About 3000 euros"
    assert second.path == "chat/2/clarify" and tree_of(app).cursor_node.parent.is_expanded  # type: ignore[union-attr]
    await pilot.press("n")
    assert cursor(app) is first  # wraps around
    await pilot.press("N")
    assert cursor(app) is second
    await search(app, pilot, "no such words")
    assert "no match for 'no such words'" in text_of(app.query_one("#status", Static).content)  # type: ignore[arg-type]
    await pilot.press("slash", "escape")  # Esc closes the box and gives the tree back the keys
    assert not box.has_class("open") and tree_of(app).has_focus


async def test_the_detail_of_a_call_holds_every_message_whole(viewer: tuple[TraceViewer, Pilot[None]]) -> None:
    app, pilot = viewer
    await search(app, pilot, "output repaired")
    call = cursor(app)
    assert isinstance(call, CallNode) and call.path == "chat/2/clarify"
    detail = shown(app)
    for line in SYSTEM_PROMPT.splitlines():
        assert line in detail  # collapsed in the tree and in plain output; whole here
    assert "Summary of the earlier conversation" in detail and "not valid JSON" in detail


async def test_q_quits(viewer: tuple[TraceViewer, Pilot[None]]) -> None:
    app, pilot = viewer
    await pilot.press("q")
    await pilot.pause()
    assert not app.is_running


WHY_CHAT = """\
version: "0.1"
name: chat
agents:
  bot: {model: scripted, system_prompt: "You plan trips.", replies: [q1, q2, q3]}
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 3
      history_management: {strategy: truncate_turns, max_turns: 2}
      body:
        - {kind: step, name: talk, uses: agents.bot}
        - {kind: hitl, name: answer, message: "{{ steps.talk.output }}"}
"""


async def test_the_detail_of_a_call_and_of_a_message_says_why_it_is_there(tmp_path: Path) -> None:
    """The viewer says what ``lens trace --why`` says: on a call, where each message came from and what was left
    out; on a message, where it came from."""
    outcome, store, _ = await run(compile_text(tmp_path, WHY_CHAT), "Plan a trip", ["a1", "a2", "a3"])
    root = build_tree(await load_run(store, outcome.run_id, redactor=Redactor()))
    app = TraceViewer(root)
    app.animation_level = "none"
    [call] = [each for each in walk(root) if isinstance(each, CallNode) and each.path == "chat/3/talk"]
    async with app.run_test(size=SIZE) as pilot:
        app.reveal(call)
        await pilot.pause()
        assert cursor(app) is call
        detail = shown(app)
        assert "why each message is there" in detail
        assert "the system prompt of agent scripted" in detail
        assert "the person's answer to the question at chat/2/answer" in detail
        assert "left out: turns 1–3 dropped by truncate_turns (max_turns 2)" in detail
        await pilot.press("right", "down")  # the call's first message: its system prompt
        assert isinstance(cursor(app), MessageNode)
        assert "why  the system prompt of agent scripted" in shown(app)


async def test_a_viewer_of_one_step_reads_the_origins_from_the_whole_run(tmp_path: Path) -> None:
    """``lens trace RUN --step PATH --tui`` shows a part of the run; the turns its call sent were made by steps
    outside that part, whose events say where they came from."""
    outcome, store, _ = await run(compile_text(tmp_path, WHY_CHAT), "Plan a trip", ["a1", "a2", "a3"])
    whole = build_tree(await load_run(store, outcome.run_id, redactor=Redactor()))
    part = focus(whole, "chat/3/talk")
    assert part is not None
    app = TraceViewer(part, whole=whole)
    app.animation_level = "none"
    [call] = [each for each in walk(part) if isinstance(each, CallNode)]
    async with app.run_test(size=SIZE) as pilot:
        app.reveal(call)
        await pilot.pause()
        detail = shown(app)
        assert "the reply of chat/2/talk (ai_turn_source: last)" in detail
        assert "the person's answer to the question at chat/2/answer" in detail
