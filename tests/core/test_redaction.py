"""Redaction: secrets never reach a trace event, and ordinary text reaches it unchanged."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from pathlib import Path

import pytest

from core import AgentStep, ChatMessage, Engine, HitlStep, Pipeline, Template
from core.model.tools import ToolCall
from core.settings.config import ProviderSettings, Settings, secret_values
from core.settings.secret import Secret
from core.store import MemoryStore, open_store
from core.testing import FuncAgent, ScriptedHuman
from core.text import redaction
from core.text.redaction import MASK, Redactor, normalized_key, sensitive_key
from tests.support.cli_helpers import flujo

OPENAI = "sk-" + "Ab1" * 16
PROJECT = "sk-proj-" + "Xy9_" * 10
ANTHROPIC = "sk-ant-api03-" + "Qw3-" * 12
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAzrx1\nq2Vb8mGQ==\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"key {OPENAI} here", OPENAI),
        (f"export OPENAI_API_KEY={PROJECT}", PROJECT),
        (f"x-api-key: {ANTHROPIC}", ANTHROPIC),
        ("Authorization: Bearer abc.def-ghi_jkl0123", "abc.def-ghi_jkl0123"),
        ("password=hunter22", "hunter22"),
        ("password: x", "x"),
        ("PASSWORD: Tr0ub4dor&3", "Tr0ub4dor&3"),
        ("my password is hunter2", "hunter2"),
        ("the api key is 3f9a1c7e55d0", "3f9a1c7e55d0"),
        (f"token {JWT}", JWT),
        (f"here:\n{PEM}\nend", "MIIEowIBAAKCAQEAzrx1"),
        ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
        ("curl -H 'authorization: basic YWxpY2U6czNjcjN0'", "YWxpY2U6czNjcjN0"),
        (f"AWS key {AWS_SECRET} in the config", AWS_SECRET),
        (f"AKIAIOSFODNN7EXAMPLE {AWS_SECRET}", AWS_SECRET),
        (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
        (f"SECRET_KEY={AWS_SECRET[:20]}", AWS_SECRET[:20]),
    ],
)
def test_secrets_are_masked(text: str, secret: str) -> None:
    masked = Redactor().text(text)
    assert secret not in masked
    assert MASK in masked


@pytest.mark.parametrize(
    ("text", "leaked"),
    [
        ('{"password": "my secret pass"}', "my secret pass"),
        ('password = "correct horse battery staple"', "horse battery staple"),
        ("api_key: 'abc def ghi'", "def ghi"),
    ],
)
def test_quoted_values_are_masked_whole(text: str, leaked: str) -> None:
    masked = Redactor().text(text)
    assert leaked not in masked
    assert masked.count(MASK) == 1


def test_values_of_secret_env_vars_are_masked_by_name() -> None:
    env = {
        "MY_VENDOR_API_KEY": "zzz-unknown-vendor-key",
        "GH_TOKEN": "tok_abcdef",
        "APP_SECRET": "s3cr3t-value",
        "HOME": "/home/alice",
        "LANG": "en_US.UTF-8",
    }
    redactor = Redactor(secret_values=secret_values(Settings(secret_env_vars=["CUSTOM"]), env=env))
    text = "zzz-unknown-vendor-key tok_abcdef s3cr3t-value /home/alice en_US.UTF-8"
    assert redactor.text(text) == f"{MASK} {MASK} {MASK} /home/alice en_US.UTF-8"
    configured = secret_values(Settings(secret_env_vars=["CUSTOM"]), env={"CUSTOM": "named-in-config"})
    assert Redactor(secret_values=configured).text("x named-in-config") == f"x {MASK}"


def test_provider_api_keys_are_secret_values_even_when_no_variable_holds_them() -> None:
    settings = Settings(openai=ProviderSettings(base_url="http://x/v1", api_key=Secret("toml-only-key-4711")))
    assert secret_values(settings, env={}) == ["toml-only-key-4711"]


def test_secrets_named_in_config_are_masked_in_the_trace_of_a_cli_run(
    state_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "flujo.toml").write_text(
        '[openai]\nbase_url = "http://127.0.0.1:9/v1"\napi_key = "toml-only-key-4711"\n', encoding="utf-8"
    )
    (tmp_path / "echo.yaml").write_text(
        'version: "0.1"\nagents:\n  bot: {model: echo}\nsteps:\n  - {kind: step, name: say, uses: agents.bot}\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("FLUJO_SECRET_ENV_VARS", "MY_CREDENTIAL,OTHER")  # a list setting from the environment
    monkeypatch.setenv("MY_CREDENTIAL", "plain-looking-value")
    monkeypatch.setenv("DEPLOY_TOKEN", "deploy-value-99")
    said = "plain-looking-value deploy-value-99 toml-only-key-4711 stays"
    code, out, err = flujo(["run", "echo.yaml", "--input", said, "--json"])
    assert code == 0, err
    run_id = json.loads(out)["run_id"]

    async def trace() -> str:
        store = await open_store(str(state_db))
        try:
            return repr([event.payload for event in await store.events(run_id)])
        finally:
            await store.close()

    dumped = asyncio.run(trace())
    assert f"{MASK} {MASK} {MASK} stays" in dumped
    for secret in ("plain-looking-value", "deploy-value-99", "toml-only-key-4711"):
        assert secret not in dumped


@pytest.mark.parametrize(
    "text",
    [
        "The task-force met the skeleton crew at the kiosk.",
        "Each token is counted once, and the token limit is 400.",
        "The secret is out: we ship on Friday.",
        "Use max_tokens: 400 and total_tokens from the usage block.",
        'Ask one question at a time; when clear reply {"action": "finish"}',
        "risk-assessment-for-the-whole-quarter",
        "The basic principles hold; basic dXNlcm5hbWVvbmx5 is not a credential without a colon.",
        "Deployed to AWS from commit 0123456789abcdef0123456789abcdef01234567.",
        "On AWS the bucket is my-bucket-name-for-the-whole-company-data.",
    ],
)
def test_ordinary_text_is_not_mangled(text: str) -> None:
    assert Redactor().text(text) == text


def test_nested_values_are_masked_and_non_strings_kept() -> None:
    value = {"messages": [{"role": "user", "content": f"use {OPENAI}"}], "n": 3, "ok": True, "none": None}
    assert Redactor().value(value) == {
        "messages": [{"role": "user", "content": f"use {MASK}"}],
        "n": 3,
        "ok": True,
        "none": None,
    }


def test_values_under_sensitive_keys_are_masked_whatever_they_look_like() -> None:
    """An exact list of key names, normalised (case, separators, camelCase); never a substring match."""
    value = {
        "token": "plain-looking-1",
        "Access-Token": "plain-looking-2",
        "password": 12345,
        "nested": [{"apiKey": "plain-looking-3", "X-API-KEY": "plain-looking-4", "clientSecret": {"v": "x"}}],
        "Authorization": "Basic-looking",
        "aws_secret_access_key": "plain-looking-5",
        "max_tokens": 400,
        "prompt_tokens": 12,
        "tokens": 3,
        "secret_santa": "Alice",
        "token_count": 7,
        "secret": None,
        "passwd": "",
        "api_key": True,
    }
    assert Redactor().value(value) == {
        "token": MASK,
        "Access-Token": MASK,
        "password": MASK,
        "nested": [{"apiKey": MASK, "X-API-KEY": MASK, "clientSecret": MASK}],
        "Authorization": MASK,
        "aws_secret_access_key": MASK,
        "max_tokens": 400,
        "prompt_tokens": 12,
        "tokens": 3,
        "secret_santa": "Alice",
        "token_count": 7,
        "secret": None,  # nothing to hide
        "passwd": "",
        "api_key": True,
    }
    assert normalized_key("clientSecret") == "client_secret" and normalized_key("X-Api-Key") == "x_api_key"
    assert sensitive_key("APIKey") and not sensitive_key("max_tokens") and not sensitive_key(3)


def test_a_tool_loops_messages_keep_their_calls_and_call_ids_masked() -> None:
    """What a turn of a tool loop sent shows in its agent.prompt event: the calls asked for, the call a result
    answers (core.policies.tool_loop), masked like any value."""
    asked = ToolCall("call_1", "login", {"password": "hunter2", "user": "ada", "note": f"key {OPENAI}"})
    sent = [
        ChatMessage("user", "Log in"),
        ChatMessage("assistant", "Logging in.", tool_calls=(asked,)),
        ChatMessage("tool", "ok", tool_call_id="call_1", name="login"),
    ]
    masked = Redactor().messages(sent)
    masked[1]["tool_calls"] = json.loads(masked[1]["tool_calls"])  # kept as one JSON text, as sent
    assert masked == [
        {"role": "user", "content": "Log in"},
        {
            "role": "assistant",
            "content": "Logging in.",
            "tool_calls": [
                {"id": "call_1", "name": "login", "arguments": {"password": MASK, "user": "ada", "note": f"key {MASK}"}}
            ],
        },
        {"role": "tool", "content": "ok", "tool_call_id": "call_1"},
    ]


async def test_trace_events_of_a_run_hold_no_secret_but_the_run_data_does() -> None:
    pipeline = Pipeline(
        steps=(
            HitlStep(name="creds", message=Template("Your password?")),
            AgentStep(name="call", agent=FuncAgent(lambda x: {"echo": f'login with password: "{x}"', "key": OPENAI})),
        )
    )
    store = MemoryStore()
    outcome = await Engine(store=store, human=ScriptedHuman([f"use {OPENAI}"]), redactor=Redactor()).run(pipeline)
    assert outcome.status == "completed"
    assert outcome.output == {"echo": f'login with password: "use {OPENAI}"', "key": OPENAI}  # data untouched
    events = await store.events(outcome.run_id)
    assert {e.kind for e in events} >= {"hitl.answer", "agent.prompt", "agent.reply"}
    dumped = repr([e.payload for e in events])
    assert OPENAI not in dumped
    assert "login with password: " in dumped and "Your password?" in dumped  # the prose stays readable


def _every_substitution(redactor: Redactor, value: str) -> str:
    """``Redactor._mask`` without its check of whether any pattern can match: every substitution, always."""
    from core.text import redaction

    patterns = redaction._patterns()
    aws = patterns.aws_context.search(value) is not None
    for pattern in patterns.builtin:
        value = pattern.sub(MASK, value)
    for extra in redactor._extra:
        value = extra.sub(MASK, value)
    if aws:
        value = patterns.aws_secret.sub(redaction._mask_aws_secret, value)
    value = patterns.basic.sub(redaction._mask_basic, value)
    value = patterns.bearer.sub(lambda m: m.group(1) + MASK, value)
    value = patterns.prose_password.sub(lambda m: m.group(1) + MASK, value)
    value = patterns.prose_credential.sub(lambda m: m.group(1) + MASK, value)
    value = patterns.url_password.sub(lambda m: m.group(1) + MASK + "@", value)  # also without "://" in it
    value = redaction.mask_keyed_values(value, sensitive=redaction._sensitive_name, mask=MASK)
    return patterns.assignment.sub(redaction._mask_assignment, value)


@pytest.mark.parametrize("extra", [(), (r"acct-\d{6}",)])
def test_skipping_texts_no_pattern_can_match_changes_nothing(extra: tuple[str, ...]) -> None:
    """The quick check before the substitutions (most texts have no secret) never skips a text that one of
    them would change: the secrets above, in every case of their keywords, in ASCII and not."""
    redactor = Redactor(extra_patterns=extra)
    samples = [f"key {OPENAI} here", f"x {PROJECT}", f"x-api-key: {ANTHROPIC}", f"token {JWT}", f"a\n{PEM}\n",
        "AKIA" + "A1" * 8, "AIza" + "b" * 35, "my password is hunter2", "the api key is 3f9a1c7e55d0",
        "Turn 3: somewhere warm in June, near the sea.", "PASSWORD: hunter22", "Api-Key = abcdef123456",
        "BEARER abcdefgh12345678", "my Secret Is abcdefgh1", "Token=xyz", "PwD=1234", "acct-123456 is mine",
        "ghp_" + "a" * 36, "xoxb-1234567890ab", "the paſſword is hunter2", "\u212aey: api_\u212aey=abc",
        "café password hunter2", "passphrase: 'a b c'", "ACCESS_TOKEN: abc", "client-secret=s3cr3t",
        "Authorization: Basic dXNlcjpwYXNzd29yZA==", f"aws {AWS_SECRET}", f"AKIAIOSFODNN7EXAMPLE {AWS_SECRET}",
        "postgresql://admin:PWsecret@db/x", "see https://u:p@host/", '{"Cookie": "abc"}', '{\\"credentials\\": 1}',
        "{'Private-Key': 'k'}", '{"proxy_authorization": ["a"]}',
    ]  # fmt: skip
    for text in samples:
        for variant in (text, text.upper(), text.lower(), text.swapcase()):
            assert redactor._mask(variant) == _every_substitution(redactor, variant), variant


def test_a_redactor_remembers_texts_up_to_a_number_of_characters() -> None:
    """It remembers what it masked, so a turn sent again is not masked again; but a remembered text is held,
    and ``lens list --search`` masks every run's input and output (40 MB each, say) with one redactor."""
    redactor = Redactor()
    size = 4_000_000
    tracemalloc.start()
    try:
        for number in range(10):  # 40 MB of texts, each let go once masked
            assert redactor.text(f"{number}" * size) == f"{number}" * size
        assert tracemalloc.get_traced_memory()[0] < 5 * size  # at most 16,777,216 characters of long texts
        alone = "y" * (redaction._MEMO_CHARS + 1)
        assert redactor.text(alone) is alone
        del alone
        assert tracemalloc.get_traced_memory()[0] < 5 * size  # over the bound: masked, not remembered
    finally:
        tracemalloc.stop()


# A user's pattern that backtracks without end on some texts: Python's re never returns from it (2**60 ways to
# split the a's between the alternatives), nor answers Ctrl-C.
_BACKTRACKS = "(a|aa)+$"


def test_a_users_pattern_that_backtracks_without_end_masks_the_text_whole_and_is_said_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(redaction, "USER_PATTERN_SECONDS", 0.05)
    said: list[str] = []
    redactor = Redactor(extra_patterns=[r"acct-\d{6}", _BACKTRACKS], on_slow=said.append)
    assert redactor.text("acct-123456 and aaa") == f"{MASK} and [REDACTED]"  # the pattern masks what it matches
    assert redactor.text("a" * 60 + "b acct-123456") == redaction.SLOW_MASK  # fails closed: nothing shown
    assert redactor.text("a" * 61 + "b") == redaction.SLOW_MASK
    assert said == [_BACKTRACKS] and redactor.slow_patterns == [_BACKTRACKS]
    assert redactor.text("no secret here") == "no secret here"


def test_a_run_whose_redact_pattern_backtracks_without_end_completes_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's texts go through the user's patterns as they are traced, and lens's as they are shown: one of
    them runs out of time, the command goes on and shows the mask, never the text."""
    monkeypatch.setenv("FLUJO_REDACT_PATTERNS", json.dumps([_BACKTRACKS]))
    monkeypatch.setattr(redaction, "USER_PATTERN_SECONDS", 0.05)  # flujo runs in this process
    blueprint = tmp_path / "echo.yaml"
    blueprint.write_text(
        'version: "0.1"\nagents:\n  e: {model: echo}\nsteps:\n  - {name: say, uses: agents.e}\n', encoding="utf-8"
    )
    text = "a" * 60 + "b"
    state = tmp_path / "flujo.db"
    code, out, err = flujo(["run", str(blueprint), "--input", text, "--json", "--state", str(state)])
    assert code == 0, err
    assert json.loads(out)["output"] == text  # the run's own output is the text as it is
    assert f"the redact pattern {_BACKTRACKS!r} ran too long on a text" in err
    assert err.count("warning:") == 1, err
    code, shown, err = flujo(["lens", "trace", json.loads(out)["run_id"], "--json", "--state", str(state)])
    assert code == 0, err
    assert err.count("warning: the redact pattern") == 1, err
    assert redaction.SLOW_MASK in shown and text not in shown
