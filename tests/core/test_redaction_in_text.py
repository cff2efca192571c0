"""Secrets written inside a text: the password of a URL, and the values under secret-named keys of JSON
kept as text (a turn's text, a reply that is a JSON string, JSON escaped inside a JSON string).

Unit cases on ``Redactor.text``, then every display path through the real CLI: a conversational run whose
system prompt, input, replies, answers, final output and error hold them, shown by ``lens list/show/trace``
(plain and ``--json``), ``lens show --final-output`` and ``threads show`` (plain and ``--json``). The run's
own output and ``--json`` keep them as typed (docs/configuration.md#redaction).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.text import redaction
from core.text.redaction import MASK, SENSITIVE_KEYS, Redactor
from flujo_cli import exit_codes
from tests.support.cli_helpers import flujo


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("postgresql://admin:PWsecret@db/x", f"postgresql://admin:{MASK}@db/x"),
        ("see https://user:pass@host/a?b=1 now", f"see https://user:{MASK}@host/a?b=1 now"),
        ("redis://:s3cret@cache:6379/0", f"redis://:{MASK}@cache:6379/0"),
        (
            "MONGO=mongodb+srv://app:p@ss:w0rd@cluster0.example.net",
            f"MONGO=mongodb+srv://app:{MASK}@cluster0.example.net",
        ),
        ('{"url": "amqp://guest:guest@rabbit//"}', f'{{"url": "amqp://guest:{MASK}@rabbit//"}}'),
        ('{\\"dsn\\": \\"mysql://root:toor@h/db\\"}', f'{{\\"dsn\\": \\"mysql://root:{MASK}@h/db\\"}}'),
        ("HTTPS://USER:PASS@HOST/", f"HTTPS://USER:{MASK}@HOST/"),
        ("https://me@example.com:pw-1@host/", f"https://me@example.com:{MASK}@host/"),
    ],
)
def test_the_password_of_a_url_is_masked_and_the_rest_kept(text: str, masked: str) -> None:
    assert Redactor().text(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        "https://example.com:8443/path?q=a@b",
        "git clone git@github.com:owner/repo.git",
        "mail alice@example.com about http://host/a@b",
        "ssh://git@host:22/repo and https://user@host/",
        "ratio 3:4@home",
    ],
)
def test_urls_without_a_password_are_not_mangled(text: str) -> None:
    assert Redactor().text(text) == text


SECRET_MAPPING = {
    "action": "finish",
    "token": 'tok "quoted" \\ and }',
    "refresh_token": "plain-refresh-1",
    "credentials": {"user": "u", "pass": ["cred-plain-2", "]}"]},
    "Cookie": 4711,
    "note": 'a "note" with {brackets} and password-less text \\',
    "secret": None,
    "apiKey": True,
    "client_secret": "",
    "max_tokens": 300,
}


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_secret_keys_of_json_inside_text_are_masked_at_any_escaping(level: int) -> None:
    """``json.dumps`` applied ``level`` more times (JSON inside a JSON string, and so on): every secret value
    is gone, the text still decodes to the mapping with those values masked, the rest unchanged."""
    text = json.dumps(SECRET_MAPPING)
    for _ in range(level):
        text = json.dumps(text)
    masked = Redactor().text(text)
    for secret in ("tok ", "plain-refresh-1", "cred-plain-2", "4711"):
        assert secret not in masked
    decoded = masked
    for _ in range(level):
        decoded = json.loads(decoded)
    assert json.loads(decoded) == SECRET_MAPPING | {
        "token": MASK,
        "refresh_token": MASK,
        "credentials": MASK,
        "Cookie": MASK,
    }


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("{'private_key': 'abc', 'n': 1}", f"{{'private_key': '{MASK}', 'n': 1}}"),  # a Python dict as text
        ('reply: {"password": "cut off by the cap', f'reply: {{"password": "{MASK}'),  # to the end: safe side
        ('{"authorization": {"scheme": "basic", "v": [1, 2', f'{{"authorization": "{MASK}"'),
        ('{"session_token" :\n  "abc"}', f'{{"session_token" :\n  "{MASK}"}}'),
        ('{"token_count": 12, "tokens": "abc", "max_tokens": 5}',) * 2,
    ],
)
def test_json_keys_in_text_edge_cases(text: str, masked: str) -> None:
    assert Redactor().text(text) == masked


@pytest.mark.parametrize("key", sorted(SENSITIVE_KEYS))
def test_the_quick_check_lets_every_sensitive_key_through(key: str) -> None:
    """``Redactor`` skips a text in which no pattern can match; a JSON key naming a secret is such a match,
    in every case and spelling (``Set-Cookie``, ``clientSecret``)."""
    camel = "".join(word.capitalize() if i else word for i, word in enumerate(key.split("_")))
    for spelling in (key, key.upper(), key.replace("_", "-").title(), camel):
        text = json.dumps({spelling: "plain-value"})
        assert redaction._may_match(text), spelling
        assert Redactor().text(text) == json.dumps({spelling: MASK}), spelling


CONVERSATION = """\
version: "0.1"
name: leaky
agents:
  planner:
    model: scripted
    system_prompt: "Connect with postgresql://admin:PWsystem@db/x"
    replies:
      - {action: ask, question: "Where? see https://user:PWreply@host/a", refresh_token: rt-plain-1,
         credentials: {user: u, pass: cred-plain-2}}
      - '{"action": "ask", "question": "And?", "token": "tok-plain-3", "cookie": "cookie-plain-4"}'
steps:
  - kind: loop
    name: chat
    loop:
      conversation: true
      max_loops: 2
      body:
        - {kind: step, name: plan, uses: agents.planner}
        - {kind: hitl, name: answer, message: "{{ steps.plan.output }}"}
  - kind: step
    name: final
    agent: {id: flujo.builtins.passthrough}
    input: "done: {{ previous_step }} sftp://me:PWfinal@files"
"""
FAILING = """\
version: "0.1"
name: broken
steps:
  - {kind: step, name: boom, agent: {id: flujo.builtins.passthrough}, input: "{{ previous_step.nope }} https://u:PWerror@h"}
"""
SECRETS = ("PWsystem", "PWreply", "PWinput", "PWanswer", "PWfinal", "PWerror", "rt-plain-1", "cred-plain-2",
           "tok-plain-3", "cookie-plain-4", "pw-plain-5")  # fmt: skip


@pytest.fixture
def leaky_runs(state_db: Path, tmp_path: Path) -> tuple[str, str]:
    """Two runs through the real CLI: a conversation in thread ``t1`` (completed) and a failed run."""
    (tmp_path / "leaky.yaml").write_text(CONVERSATION, encoding="utf-8")
    (tmp_path / "broken.yaml").write_text(FAILING, encoding="utf-8")
    answers = ["--answer", "answer redis://:PWanswer@cache", "--answer", 'again {"password": "pw-plain-5"}']
    code, out, err = flujo(
        ["run", "leaky.yaml", "--thread", "t1", "--input", "input mysql://root:PWinput@h/db", *answers, "--json"]
    )
    assert code == exit_codes.OK, err
    result = json.loads(out)
    assert "sftp://me:PWfinal@files" in result["output"] and "pw-plain-5" in result["output"]  # kept as typed
    code, out, err = flujo(["run", "broken.yaml", "--input", "x", "--json"])
    assert code == exit_codes.FAILED, err
    assert "PWerror" in json.loads(out)["error"]
    return result["run_id"], json.loads(out)["run_id"]


def test_no_display_path_shows_a_url_password_or_a_secret_key_in_text(leaky_runs: tuple[str, str]) -> None:
    talk, broken = leaky_runs
    views = [
        ["lens", "list"],
        ["lens", "list", "--json"],
        ["lens", "show", talk],
        ["lens", "show", talk, "--json"],
        ["lens", "show", broken, "--json"],
        ["lens", "show", talk, "--final-output"],
        ["lens", "show", talk, "--final-output", "--json"],
        ["lens", "trace", talk],
        ["lens", "trace", talk, "--expand", "all"],
        ["lens", "trace", talk, "--json"],
        ["lens", "trace", broken, "--json"],
        ["threads", "show", "t1"],
        ["threads", "show", "t1", "--json"],
    ]
    seen = ""
    for args in views:
        code, out, err = flujo(args)
        assert code == exit_codes.OK, (args, err)
        leaked = [secret for secret in SECRETS if secret in out + err]
        assert not leaked, f"{' '.join(args)} shows {leaked}"
        seen += out
    for kept in ("postgresql://admin:[REDACTED]@db/x", "mysql://root:[REDACTED]@h/db", "https://u:[REDACTED]@h",
                 "redis://:[REDACTED]@cache", "sftp://me:[REDACTED]@files"):  # fmt: skip
        assert kept in seen or json.dumps(kept)[1:-1] in seen, kept
    code, out, _ = flujo(["threads", "show", "t1"])
    assert "Assistant: And?" in out  # a structured reply reads as its question (its keys are masked in --json)
    assert 'User: again {"password": "[REDACTED]"}' in out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "has_secret"),
    [
        ("token " + "a-" * 100_000, False),  # a scheme tried from each word: its square, unbounded
        ("token " + "\\" * 200_000, False),  # a key's escaping tried from each backslash: its square
        ("token " + "a://b:c" * 30_000, False),
        ('{"token": [' * 50_000, True),
        ('\\"token\\": \\"x' * 50_000, True),
    ],
    ids=["dashes", "backslashes", "schemes", "unclosed", "escaped"],
)
def test_hostile_texts_are_masked_in_one_pass(text: str, has_secret: bool) -> None:
    """Texts built to make the URL and JSON-key expressions backtrack: each is masked (a quadratic scan of
    these 200 kB would not end within the test run)."""
    masked = Redactor().text(text)
    assert (masked != text) is has_secret and (MASK in masked) is has_secret
