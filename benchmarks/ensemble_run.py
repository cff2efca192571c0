"""An ensemble blueprint and answers file of N rounds, as users run them through ``flujo run`` (issue 19).

Four participants (docs/ensembles.md): a ``notes`` taker (``model: scripted``, no dependencies) speaks in
every round, and three take turns by conditions on the history and the accumulated context — the
``writer`` (``model: scripted``; it opens the conversation, then speaks after the editor), the ``critic``
(``model: scripted``, replying JSON ``{"approved": false, "note": ...}``; it speaks after the writer) and
the ``editor``, a person asked after the critic while ``not context.approved``, answered from
``--answers`` as a person would. Replies and answers are about 180 characters each. So every round has
two turns (the notes and one of writer, critic, editor, in that cycle), ``max_total_turns`` ends the
conversation after N rounds (``turn_limit``), and the editor is asked in rounds 3, 6, 9, ...: N // 3
questions. Used by ``benchmarks/test_flujo_run.py`` and by ``python benchmarks/ensemble_run.py N DIR``
(writes the two files and prints the ``flujo run`` command line).
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

DRAFT = "Day one: arrive by noon, a short walk to the lake, then the budget review before dinner. Day two: the roadmap"
NOTE = "Say who decides on the budget and when the roadmap session ends, so people can plan their trains home in time"
NOTES = "Noted so far: the budget is the priority, the offsite is in the mountains, Ana decides with the team lead"
ANSWER = "Move the budget review to the morning of day one, when everyone is fresh, and let Ana chair it; keep the walk"


def _replies(prefix: str, rounds: int) -> list[str]:
    """About 180 characters each, distinct per call for the first 50 (the last one repeats after that)."""
    return [f"{prefix} (version {n})."[:180] for n in range(min(rounds, 50))]


def answer(number: int) -> str:
    """The editor's answer number ``number``: about 180 characters."""
    return f"{ANSWER} and the lake for the afternoon; this is answer number {number}."[:180]


def questions(rounds: int) -> int:
    """How many times the editor is asked in ``rounds`` rounds: in rounds 3, 6, 9, ..."""
    return rounds // 3


def write(rounds: int, directory: Path) -> tuple[Path, Path]:
    """Write ``ensemble.yaml`` and ``answers.json`` for ``rounds`` rounds into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    critic = [json.dumps({"approved": False, "note": note}) for note in _replies(NOTE, rounds)]
    blueprint = (
        'version: "0.1"\n'
        "name: bench_ensemble\n"
        "agents:\n"
        "  notes:\n"
        "    model: scripted\n"
        "    system_prompt: You keep short notes of what was decided so far.\n"
        f"    replies: {json.dumps(_replies(NOTES, rounds))}\n"
        "  writer:\n"
        "    model: scripted\n"
        "    system_prompt: You draft the offsite's plan and revise it when the editor asks.\n"
        f"    replies: {json.dumps(_replies(DRAFT, rounds))}\n"
        "  critic:\n"
        "    model: scripted\n"
        '    system_prompt: "You critique the draft. Reply in JSON with the keys approved (true or false) and note."\n'
        f"    replies: {json.dumps(critic)}\n"
        "steps:\n"
        "  - kind: ensemble\n"
        "    name: review\n"
        "    ensemble:\n"
        "      participants:\n"
        "        - name: notes\n"
        "          uses: agents.notes\n"
        f"          max_turns: {rounds}\n"
        "        - name: writer\n"
        "          uses: agents.writer\n"
        f"          max_turns: {rounds}\n"
        "          triggers_conversation: true\n"
        "          depends_on:\n"
        "            - participant: editor\n"
        "              condition: \"history[-1].participant == 'editor'\"\n"
        "        - name: critic\n"
        "          uses: agents.critic\n"
        f"          max_turns: {rounds}\n"
        "          depends_on:\n"
        "            - participant: writer\n"
        "              condition: \"history[-1].participant == 'writer'\"\n"
        "        - name: editor\n"
        '          ask: "The critic says: {{ steps.critic.output.note }} What should the writer change?"\n'
        f"          max_turns: {rounds}\n"
        "          depends_on:\n"
        "            - participant: critic\n"
        "              condition: \"history[-1].participant == 'critic' and not context.approved\"\n"
        f"      max_total_turns: {rounds}\n"
        "      timeout_seconds: 3600\n"
        "      output:\n"
        '        rounds: "{{ previous_step.turn_count }}"\n'
        '        turns: "{{ previous_step.history | length }}"\n'
        '        ended: "{{ previous_step.completion_reason }}"\n'
    )
    path = directory / "ensemble.yaml"
    path.write_text(blueprint)
    answers = directory / "answers.json"
    answers.write_text(json.dumps({"editor": [answer(n) for n in range(questions(rounds))]}))
    return path, answers


def argv(blueprint: Path, answers: Path) -> list[str]:
    """The ``flujo run`` arguments (after ``flujo``) for the files ``write`` made."""
    return ["run", str(blueprint), "--input", "Plan the offsite", "--answers", str(answers), "--no-input", "--json"]


if __name__ == "__main__":
    count, where = int(sys.argv[1]), Path(sys.argv[2])
    made = write(count, where)
    print(shlex.join(["flujo", *argv(*made)]))
