"""The fuzzer of tests/cli/test_fuzz.py, run as ``python -m tests.support.fuzz_input`` in a capped child process.

Hypothesis feeds generated and mutated blueprints and ``--answers`` files to ``flujo validate`` and
``flujo run`` (in this process, through the real command line) and checks, for each:

- no traceback and no "unexpected ... report this as a bug" error;
- ``validate`` exits 0 or 1 and every error it reports is located (file:line:col), except an unreadable
  file, which has no line to point at;
- ``run`` exits with a documented code; a failed run names the step that failed; a refused answers file
  is named in the error.

Exit status 0 when every example held, 1 (with the failing example printed by Hypothesis) otherwise.
Providers point at a closed port on 127.0.0.1, so nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from flujo_cli.main import app

ROOT = Path(__file__).resolve().parents[2]
SEEDS = sorted((ROOT / "blueprints" / "examples").glob("*.yaml")) + sorted((ROOT / "docs" / "examples").glob("*.yaml"))
EXAMPLES = 40  # per property; the whole run takes well under a minute
RUN_CODES = {0, 1, 2, 3, 4, 5, 6}

# Pieces a mutation inserts: YAML structure, aliases, templates, hostile amplifiers, odd characters.
TOKENS = [
    "\n", "  ", "- ", ": ", "[", "]", "{", "}", ",", "&a ", "*a", "<<: *a", "!!binary ", "!!python/object ",
    "'", '"', "\t", "\x00", "\x1b", "\ufeff", "é", "#", "---\n", "...", "|\n", ">-\n",
    "{{", "}}", "{%", "%}", "{{ previous_step }}", "{{ context }}", "{{ steps.x.output }}",
    "{{ 'a' * 3000000000 }}", "{{ 9 ** (9 ** 9) }}", "{{ 10 ** 100000 }}", "{{ '%03000000000d' % 1 }}",
    "{{ 'x'.center(3000000000) }}", "{{ lipsum(n=10000000) }}",
    "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
    "{% include 'x' %}", "{{ " + "(" * 500 + "1" + ")" * 500 + " }}", "[" * 400, "]" * 400,
    "kind: loop", "kind: hitl", "kind: map", "kind: parallel", "kind: conditional", "uses: agents.",
    "imports: {x: x.yaml}",
    "input_schema: {type: 12}", "output_schema: {properties: []}", "exit_expression: \"9**(9**9) > 0\"",
]  # fmt: skip

ANCHORED_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join(['*' + chr(97 + n)] * 10)}]\n" for n in range(8)
)


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str]) -> str:
    """A seed text with a few insertions, deletions and duplicated lines."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 6))):
        where = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "duplicate", "bomb"]))
        if action == "insert":
            text = text[:where] + draw(st.sampled_from(TOKENS)) + text[where:]
        elif action == "delete":
            text = text[:where] + text[where + draw(st.integers(1, 40)) :]
        elif action == "duplicate":
            lines = text.splitlines(keepends=True) or [""]
            line = draw(st.integers(0, len(lines) - 1))
            text = "".join(lines[: line + 1] + lines[line:])
        else:
            text = ANCHORED_BOMB + text
    return text


TEMPLATES = st.lists(
    st.sampled_from(
        ["{{ previous_step }}", "x", "{{ context.scratchpad }}", "{% for i in range(3) %}{{ i }}{% endfor %}"]
        + [token for token in TOKENS if "{" in token]
    ),
    min_size=1,
    max_size=3,
).map("".join)


def _step(number: int, kind: str, template: str) -> dict[str, Any]:
    name = f"s{number}"
    if kind == "hitl":
        return {"kind": "hitl", "name": name, "message": template}
    if kind == "loop":
        body = [{"kind": "step", "name": f"{name}b", "agent": {"id": "flujo.builtins.passthrough"}, "input": template}]
        return {
            "kind": "loop",
            "name": name,
            "loop": {"max_loops": 3, "exit_expression": "iteration > 1", "body": body},
        }
    if kind == "map":
        body = [{"kind": "step", "name": f"{name}b", "agent": {"id": "flujo.builtins.stringify"}}]
        return {"kind": "map", "name": name, "map": {"over": "[1, 2]", "body": body}}
    return {"kind": "step", "name": name, "uses": "agents.talker", "input": template}


@st.composite
def generated(draw: st.DrawFn) -> str:
    """A blueprint built from parts: scripted agents, steps of several kinds, templates with hostile pieces."""
    kinds = draw(st.lists(st.sampled_from(["step", "hitl", "loop", "map"]), min_size=1, max_size=4))
    steps = [_step(number, kind, draw(TEMPLATES)) for number, kind in enumerate(kinds)]
    blueprint = {
        "version": "0.1",
        "agents": {
            "talker": {"model": "scripted", "replies": draw(st.lists(st.text(max_size=20), min_size=1, max_size=3))}
        },
        "steps": steps,
    }
    return yaml.safe_dump(blueprint, allow_unicode=True)


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
ANSWERS = st.one_of(
    JSONISH.map(lambda data: yaml.safe_dump(data, allow_unicode=True)),
    st.sampled_from(["get_goal: one\nget_goal: two\n", "a: &a [*a]\n", "[" * 3000 + "]" * 3000, ANCHORED_BOMB]),
    st.binary(max_size=200).map(lambda raw: raw.decode("latin-1")),
    mutated(["get_goal: plan a trip\nanswer: [yes, done]\n", '["first", "second"]\n']),
)
HITL = 'version: "0.1"\nsteps:\n  - kind: hitl\n    name: get_goal\n    message: "Goal?"\n'


class Checker:
    """Runs the command line on one example at a time, in its own folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0

    def invoke(self, args: list[str]) -> tuple[int, str, str]:
        result = CliRunner().invoke(app, args)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"flujo {' '.join(args)} raised {result.exception!r}")
        for stream in (result.stdout, result.stderr):
            # A command: agent that fails is reported with the tail of its own stderr, which may hold its own
            # (the script's, not flujo's) traceback: that part is the user's program speaking.
            stream = re.sub(r"exited with status -?\d+: .*", "", stream, flags=re.S)
            # "error: unexpected <Exception>: ..." is how the CLI reports a crash (the hint says "report this")
            assert "Traceback (most recent call last)" not in stream and "report this as a bug" not in stream, stream[
                -2000:
            ]
        return result.exit_code, result.stdout, result.stderr

    def blueprint(self, text: str) -> None:
        self.count += 1
        path = self.folder / f"bp{self.count}.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        code, out, _ = self.invoke(["validate", str(path), "--json"])
        assert code in (0, 1), code
        report = json.loads(out)
        for finding in report["findings"]:
            if finding["severity"] == "error" and finding["code"] != "file-unreadable":
                assert finding.get("line") is not None, finding
        if code == 0:
            code, out, err = self.invoke(["run", str(path), "--no-input", "--json", "--input", "hello"])
            assert code in RUN_CODES, (code, err[-2000:])
            if code == 1 and out.strip():
                result = json.loads(out)
                assert result["error"] and result["failed_step"], result

    def answers(self, text: str) -> None:
        self.count += 1
        bp = self.folder / "hitl.yaml"
        bp.write_text(HITL, encoding="utf-8")
        path = self.folder / f"answers{self.count}.yaml"
        path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
        code, _, err = self.invoke(["run", str(bp), "--no-input", "--answers", str(path)])
        assert code in RUN_CODES, (code, err[-2000:])
        if code == 6:
            assert f"answers file {path}" in err, err[-2000:]


def main() -> int:
    folder = Path(tempfile.mkdtemp(prefix="flujo-fuzz-"))
    os.chdir(folder)
    os.environ.update(
        {
            "FLUJO_STATE_URI": str(folder / "state.db"),
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "OPENAI_API_KEY": "sk-fuzz",
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
            "ANTHROPIC_API_KEY": "fuzz",
            "OLLAMA_HOST": "127.0.0.1:9",
            "FLUJO_OPENAI__MAX_RETRIES": "0",
            "FLUJO_ANTHROPIC__MAX_RETRIES": "0",
            "FLUJO_OLLAMA__MAX_RETRIES": "0",
        }
    )
    checker = Checker(folder)
    seeds = [path.read_text(encoding="utf-8") for path in SEEDS]
    options = settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,  # the same examples on every machine: a failure is reproducible
        database=None,
        suppress_health_check=list(HealthCheck),
    )

    @options
    @given(text=mutated(seeds))
    def mutated_blueprints(text: str) -> None:
        checker.blueprint(text)

    @options
    @given(text=generated())
    def generated_blueprints(text: str) -> None:
        checker.blueprint(text)

    @options
    @given(text=ANSWERS)
    def answers_files(text: str) -> None:
        checker.answers(text)

    failed = 0
    try:
        for prop in (mutated_blueprints, generated_blueprints, answers_files):
            try:
                prop()
            except Exception as exc:  # Hypothesis has printed the falsifying example; report and go on
                failed += 1
                print(f"{prop.__name__}: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        os.chdir(ROOT)
        shutil.rmtree(folder, ignore_errors=True)
    print(f"{checker.count} examples checked, {failed} properties failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
