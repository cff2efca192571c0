"""A conversational blueprint and answers file of N iterations, as users run them through ``flujo run``.

The loop is ``conversation: true`` (so ``stop_when: agent_finished`` is implied), a scripted clarifier
that asks a question of about 180 characters on every call, and a HITL step answered from ``--answers``
(answers of about 180 characters). ``max_loops`` ends the run after N iterations. Optionally the clarifier
calls a Python tool before each question (``write(..., tool=True)``). Used by ``benchmarks/test_flujo_run.py``,
``benchmarks/test_replay.py`` and by ``python benchmarks/conversation_run.py N DIR`` (writes the two files and
prints the ``flujo run`` command line).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

QUESTION = (
    "Which of the options we discussed matters most to you, and by when do you need it done? Tell me also who else"
)
ANSWER = (
    "The budget matters most; I need it by the end of next month, before the team offsite in the mountains, and Ana"
)


NOTES = '''def notes(topic: str) -> str:
    """What the planning notes say about a topic."""
    return (
        f"Notes on {topic}: the team prefers the mountains in early June, the budget is twelve thousand euros"
        " with flights, and Ana has the last word on dates."
    )
'''


def question(number: int) -> str:
    """A question of about 180 characters, distinct per iteration (texts are not all the same one)."""
    return f"{QUESTION} has a say ({number})?"[:180]


def answer(number: int) -> str:
    return f"{ANSWER} decides with me; this is answer number {number}."[:180]


def write(
    iterations: int, directory: Path, *, history: str | None = None, conversation: bool = True, tool: bool = False
) -> tuple[Path, Path]:
    """Write ``chat.yaml`` and ``answers.json`` for ``iterations`` iterations into ``directory`` (with
    ``conversation=False``, a plain loop of the same two steps). With ``tool``, the clarifier first calls a
    Python tool (``bench_notes.py``, written beside: it returns notes of about 180 characters) on every
    iteration, then asks; the question is then its reply's text (a tool-using agent's reply is text)."""
    directory.mkdir(parents=True, exist_ok=True)
    replies: list[dict[str, Any]] = []
    # A scripted model repeats its last reply once the list is used up: the tool is asked for every time.
    for n in range(iterations if tool else min(iterations, 50)):
        if tool:
            replies.append({"tool": "notes", "arguments": {"topic": f"the offsite, part {n}"}})
        replies.append({"action": "ask", "question": question(n)})
    history_line = f"      history_management: {history}\n" if history else ""
    tools, agent_tools = "", ""
    if tool:
        (directory / "bench_notes.py").write_text(NOTES)
        tools, agent_tools = 'tools:\n  notes: {python: "bench_notes:notes"}\n', "    tools: [notes]\n"
    asked = "{{ steps.clarify.output }}" if tool else "{{ steps.clarify.output.question }}"
    blueprint = (
        'version: "0.1"\n'
        "name: bench_chat\n"
        f"{tools}"
        "agents:\n"
        "  clarifier:\n"
        "    model: scripted\n"
        "    system_prompt: You help a person sharpen a goal. Ask one short clarifying question at a time.\n"
        f"{agent_tools}"
        f"    replies: {json.dumps(replies)}\n"
        "steps:\n"
        "  - kind: loop\n"
        "    name: chat\n"
        "    loop:\n"
        f"      conversation: {'true' if conversation else 'false'}\n"
        f"{history_line}"
        f"      max_loops: {iterations}\n"
        "      body:\n"
        "        - {kind: step, name: clarify, uses: agents.clarifier}\n"
        f'        - {{kind: hitl, name: answer, message: "{asked}"}}\n'
    )
    path = directory / "chat.yaml"
    path.write_text(blueprint)
    answers = directory / "answers.json"
    answers.write_text(json.dumps({"answer": [answer(n) for n in range(iterations)]}))
    return path, answers


def argv(blueprint: Path, answers: Path) -> list[str]:
    """The ``flujo run`` arguments (after ``flujo``) for the files ``write`` made."""
    return ["run", str(blueprint), "--input", "Plan the offsite", "--answers", str(answers), "--no-input"]


if __name__ == "__main__":
    count, where = int(sys.argv[1]), Path(sys.argv[2])
    made = write(count, where)
    print("flujo " + " ".join(argv(*made)))
