"""Lens never prints a secret, whatever the store holds (CONVENTIONS: redaction on everything shown).

The store is written directly, not by the engine, so the secrets reach it unmasked — in prompts, answers,
step inputs and outputs, errors, mapping keys, the run's input and output — as they would in a database
from elsewhere or an older flujo. Then every lens view is checked: list, show (also ``--final-output``) and
trace (collapsed, ``--expand all``, ``--expand none``), plain and ``--json``, through the real CLI; and the
interactive viewer with every node opened and every node's detail shown. The secrets: an API key, a JWT,
a bearer token, a password, a private key, the values of secret environment variables (one by its name,
one listed in ``secret_env_vars``) and a match of a configured ``redact_patterns`` entry.
"""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console

from core import Redactor, RunRecord, StepRecord, TraceEvent, load_settings, secret_values
from core.store import open_store
from lens import build_tree, load_run, walk
from lens.detail import detail
from lens.viewer import TraceViewer
from tests.support.cli_helpers import flujo
from tests.support.lens_runs import CHILD, DEMO, record_demo

API_KEY = "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
BEARER = "tok9f8e7d6c5b4a3"
PASSWORD = "Tr0ub4dor&3xyz"
KEY_BODY = "MIIEowIBAAKCAQEAxlensTESTkeyBODY"
ENV_TOKEN = "zq9-unguessable-VALUE-77"  # in MY_SERVICE_TOKEN: secret by its name
ENV_LISTED = "correct-horse-battery-staple"  # in DEPLOY_PHRASE: listed in secret_env_vars
PATTERNED = "ACME-482913"  # matches the configured redact pattern
SECRETS = (API_KEY, JWT, BEARER, PASSWORD, KEY_BODY, ENV_TOKEN, ENV_LISTED, PATTERNED)
SEEDED = (
    f"key {API_KEY} jwt {JWT} Authorization: Bearer {BEARER} password={PASSWORD} "
    f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY----- "
    f"env {ENV_TOKEN} phrase {ENV_LISTED} order {PATTERNED}"
)


@pytest.fixture
def seeded(state_db: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (state_db.parent.parent / "flujo.toml").write_text(
        'secret_env_vars = ["DEPLOY_PHRASE"]\nredact_patterns = ["ACME-[0-9]{6}"]\n', encoding="utf-8"
    )
    monkeypatch.setenv("MY_SERVICE_TOKEN", ENV_TOKEN)
    monkeypatch.setenv("DEPLOY_PHRASE", ENV_LISTED)

    async def write() -> None:
        async with await open_store(str(state_db)) as store:
            await record_demo(store, secret=SEEDED)

    asyncio.run(write())
    with sqlite3.connect(state_db) as db:  # the secrets really are in the store, unmasked
        dump = "\n".join(db.iterdump())
    assert all(secret in dump for secret in (API_KEY, PASSWORD, ENV_TOKEN, PATTERNED))
    return state_db


def assert_no_secret(text: str, where: str) -> None:
    leaked = [secret for secret in SECRETS if secret in text]
    assert not leaked, f"{where} shows {leaked}"
    assert "[REDACTED]" in text or where.startswith("list"), f"{where} shows nothing that was masked"


COMMANDS = [
    ["lens", "list"],
    ["lens", "list", "--json"],
    ["lens", "show", DEMO],
    ["lens", "show", DEMO, "--json"],
    ["lens", "show", CHILD],
    ["lens", "show", CHILD, "--final-output"],
    ["lens", "show", CHILD, "--final-output", "--json"],
    ["lens", "trace", DEMO],
    ["lens", "trace", DEMO, "--expand", "all"],
    ["lens", "trace", DEMO, "--expand", "none"],
    ["lens", "trace", DEMO, "--json"],
    ["lens", "trace", DEMO, "--step", "chat", "--expand", "chat/2/clarify"],
    ["lens", "trace", CHILD, "--json"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a[1:]).replace(DEMO, "DEMO") for a in COMMANDS])
def test_no_plain_or_json_view_shows_a_secret(seeded: Path, args: list[str]) -> None:
    code, out, err = flujo(args)
    assert code == 0, err
    assert_no_secret(out + err, " ".join(args[1:]))


async def test_the_viewer_shows_no_secret(seeded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(seeded.parent.parent)
    settings = load_settings()
    redactor = Redactor(extra_patterns=settings.redact_patterns, secret_values=secret_values(settings))
    async with await open_store(str(seeded), mode="read") as store:
        root = build_tree(await load_run(store, DEMO, redactor=redactor))
    app = TraceViewer(root)
    async with app.run_test(size=(160, 60)) as pilot:
        await pilot.press("e")  # every node created and opened
        assert_no_secret(app.export_screenshot(), "the viewer's screen")
        console = Console(file=io.StringIO(), width=160, color_system=None)
        for node in walk(root):  # what the detail pane shows for each node, whole
            app._show(node)
            console.print(app.query_one("#detail").content)  # type: ignore[attr-defined]
            console.print(detail(node))
        assert_no_secret(console.file.getvalue(), "the viewer's details")  # type: ignore[attr-defined]


KEYED_SECRETS = ("plain-looking-token-1", "plain-looking-pass-2", "plain-looking-key-3")


@pytest.mark.parametrize(
    "args",
    [["show"], ["show", "--json"], ["trace"], ["trace", "--json"], ["trace", "--expand", "all"]],
    ids=lambda a: " ".join(a),
)
def test_values_under_sensitive_keys_are_masked_in_every_view(state_db: Path, args: list[str]) -> None:
    """A reply ``{token: ..., password: ...}`` whose values look like nothing: the keys say they are secrets.
    ``max_tokens`` and ``prompt_tokens`` are not."""
    reply = {
        "max_tokens": 4711,
        "token": KEYED_SECRETS[0],
        "password": KEYED_SECRETS[1],
        "auth": {"apiKey": KEYED_SECRETS[2]},
        "prompt_tokens": 815,
    }

    async def write() -> None:
        async with await open_store(str(state_db)) as store:
            await store.create_run(RunRecord("keyed0123456789a", "keyed", "completed", output=reply, created_at=1.0))
            await store.record_step(
                StepRecord("keyed0123456789a", "login", "login", "step", "completed", input="go", output=reply),
                [TraceEvent("agent.reply", "login", {"output": reply, "model": "m"}, 1.0)],
            )

    asyncio.run(write())
    code, out, err = flujo(["lens", *args, "keyed0123456789a"])
    assert code == 0, err
    assert not [secret for secret in KEYED_SECRETS if secret in out], out
    assert "[REDACTED]" in out and "4711" in out


def test_the_otlp_exporters_header_values_are_secrets(
    state_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OTLP collector's key travels in ``OTEL_EXPORTER_OTLP_HEADERS`` (``name=value,...``, values perhaps
    percent-encoded), whose name looks like no secret: its values are masked as the API keys are."""
    headers = "authorization=Bearer%20otlp-sekrit-1,x-team-key=otlp-sekrit-2"
    env = {"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-other=otlp-sekrit-3", "OTEL_EXPORTER_OTLP_HEADERS": headers}
    masked = secret_values(load_settings(), env=env)
    assert {"Bearer otlp-sekrit-1", "Bearer%20otlp-sekrit-1", "otlp-sekrit-2", "otlp-sekrit-3"} <= set(masked)
    blueprint = tmp_path / "echo.yaml"
    blueprint.write_text(
        'version: "0.1"\nagents:\n  parrot: {model: echo}\nsteps:\n  - {kind: step, name: say, uses: agents.parrot}\n'
    )
    told = "the collector wants Bearer otlp-sekrit-1 and otlp-sekrit-2"
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, out, err = flujo(["run", str(blueprint), "--input", told, "--json"])
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    for view in (["lens", "show", run_id, "--json"], ["lens", "trace", run_id, "--json"]):
        code, shown, err = flujo(view)
        assert code == 0, err
        assert "the collector wants" in shown and "otlp-sekrit" not in shown, view
