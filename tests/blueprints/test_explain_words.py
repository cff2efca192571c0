"""``blueprints.explain.words``: expressions, templates and schemas in plain words; what the words do not
cover is quoted, never guessed."""

from __future__ import annotations

import pytest

from blueprints.explain.words import condition_words, schema_words, sentence, template_words, value_words


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("steps.write.output.score >= 8", "the score of write's output is at least 8"),
        ("previous_step.done", "the done of the last output is true"),
        (
            "iteration >= 3 or previous_step == 'stop'",
            "the iteration number is at least 3, or the last output is 'stop'",
        ),
        ("not context.scratchpad.items", "scratchpad.items is false or empty"),
        (
            "context.scratchpad.cmd is defined and iteration < 4",
            "scratchpad.cmd is set and the iteration number is less than 4",
        ),
        ("initial_prompt.startswith('URGENT')", "the run's input starts with 'URGENT'"),
        ("steps.per_item.output | length > 2", "the number of items in per_item's output is more than 2"),
        ("context.scratchpad.last_agent_command.action == 'finish'", 'an agent replied {"action": "finish"}'),
        ("previous_step.label in ['bug', 'crash']", "the label of the last output is in ['bug', 'crash']"),
        ("steps['a'].output.x != none", "the x of a's output is not nothing"),
        ("true", "always"),
    ],
)
def test_conditions_in_words(expression: str, words: str) -> None:
    assert condition_words(expression) == words


@pytest.mark.parametrize(
    "expression", ["steps.a.output.x + 1 > 2", "previous_step.items() | list", "x if y else z", "previous_step >"]
)
def test_what_the_words_do_not_cover_is_left_to_the_caller(expression: str) -> None:
    assert condition_words(expression) is None


def test_previous_step_is_named_by_the_caller() -> None:
    assert value_words("previous_step.question", previous="clarify's output") == "the question of clarify's output"
    assert template_words("{{ steps.ask.output.question }}") == "the question of ask's output"
    assert template_words("Hello {{ name }}") == '"Hello {{ name }}"'
    assert template_words("x" * 100).endswith('xxx..."') and len(template_words("x" * 100)) == 82


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "integer", "minimum": 1, "maximum": 8}, "a whole number from 1 to 8"),
        ({"type": "number", "minimum": 0}, "a number of at least 0"),
        ({"type": "boolean"}, "yes or no"),
        ({"enum": ["window", "bar"]}, "one of window, bar"),
        ({"type": "object", "properties": {"action": {}, "question": {}}}, "JSON with action, question"),
        ({"type": "array"}, "a JSON list"),
    ],
)
def test_schemas_in_words(schema: dict[str, object], words: str) -> None:
    assert schema_words(schema) == words


def test_sentences_end_once() -> None:
    assert sentence('asks you: "Why?"') == 'Asks you: "Why?"'
    assert sentence("done.") == "Done."
    assert sentence("a mapping") == "A mapping."
