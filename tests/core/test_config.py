"""Settings: the layers of ``load_settings`` and what the environment can set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core import ConfigError, Settings, load_settings


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('["MY_CREDENTIAL", "OTHER_ONE"]', ["MY_CREDENTIAL", "OTHER_ONE"]),
        ("MY_CREDENTIAL, OTHER_ONE", ["MY_CREDENTIAL", "OTHER_ONE"]),
        ("MY_CREDENTIAL", ["MY_CREDENTIAL"]),
        ("", []),
    ],
)
def test_list_settings_accept_a_json_list_or_comma_separated_values(
    tmp_path: Path, value: str, expected: list[str]
) -> None:
    settings = load_settings(cwd=tmp_path, env={"FLUJO_SECRET_ENV_VARS": value})
    assert settings.secret_env_vars == expected


def test_a_pattern_with_a_comma_needs_the_json_form(tmp_path: Path) -> None:
    json_form = load_settings(cwd=tmp_path, env={"FLUJO_REDACT_PATTERNS": '["ORDER-[0-9]{4,6}", "x+"]'})
    assert json_form.redact_patterns == ["ORDER-[0-9]{4,6}", "x+"]
    # Not JSON although it starts with a bracket: read as comma-separated text.
    plain = load_settings(cwd=tmp_path, env={"FLUJO_REDACT_PATTERNS": "[0-9]{6}"})
    assert plain.redact_patterns == ["[0-9]{6}"]


def test_scalar_settings_keep_their_text(tmp_path: Path) -> None:
    env = {"FLUJO_STATE_URI": "a,b.db", "FLUJO_OPENAI__TIMEOUT_S": "5", "FLUJO_OPENAI__BASE_URL": "http://x/v1"}
    settings = load_settings(cwd=tmp_path, env=env)
    assert settings.state_uri == "a,b.db"
    assert settings.openai.timeout_s == 5.0 and settings.openai.base_url == "http://x/v1"


def test_a_json_list_of_the_wrong_items_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"setting secret_env_vars\.0: Input should be a valid string"):
        load_settings(cwd=tmp_path, env={"FLUJO_SECRET_ENV_VARS": "[1, 2]"})


def test_environment_lists_replace_the_toml_lists(tmp_path: Path) -> None:
    (tmp_path / "flujo.toml").write_text('secret_env_vars = ["FROM_TOML"]\n', encoding="utf-8")
    assert load_settings(cwd=tmp_path, env={}).secret_env_vars == ["FROM_TOML"]
    assert load_settings(cwd=tmp_path, env={"FLUJO_SECRET_ENV_VARS": "FROM_ENV"}).secret_env_vars == ["FROM_ENV"]


def test_set_assignments_are_the_top_layer(tmp_path: Path) -> None:
    from core import overrides_from_assignments

    (tmp_path / "flujo.toml").write_text("[history]\nmax_tokens = 1000\nmax_turns = 7\n", encoding="utf-8")
    overrides = overrides_from_assignments(
        ["history.max_tokens=2000", "secret_env_vars=A, B", "limits.max_cost_usd=0.25", "state_uri=x.db"]
    )
    assert overrides == {
        "history": {"max_tokens": 2000},
        "secret_env_vars": ["A", "B"],
        "limits": {"max_cost_usd": 0.25},
        "state_uri": "x.db",
    }
    settings = load_settings(cwd=tmp_path, env={"FLUJO_HISTORY__MAX_TOKENS": "1500"}, overrides=overrides)
    assert settings.history.max_tokens == 2000  # --set beats the environment, which beats flujo.toml
    assert settings.history.max_turns == 7  # keys not set keep the lower layers
    assert settings.limits.max_cost_usd == 0.25 and settings.limits.max_tokens is None


@pytest.mark.parametrize(
    ("assignment", "message"),
    [("history.max_tokens", "is not KEY=VALUE"), ("=3", "is not KEY=VALUE"), ("nope=1", "no setting 'nope'")],
)
def test_a_malformed_set_assignment_is_a_config_error(assignment: str, message: str) -> None:
    from core import overrides_from_assignments

    with pytest.raises(ConfigError, match=message):
        overrides_from_assignments([assignment])


def test_blueprint_limits_beat_the_configured_defaults_key_by_key(tmp_path: Path) -> None:
    from blueprints import load_pipeline

    path = tmp_path / "b.yaml"
    path.write_text('version: "0.1"\nlimits: {max_tokens: 300}\nsteps:\n  - {kind: step, name: s}\n', encoding="utf-8")
    settings = load_settings(cwd=tmp_path, env={}, overrides={"limits": {"max_tokens": 50, "max_cost_usd": 1.5}})
    limits = load_pipeline(path, settings).limits
    assert (limits.max_tokens, limits.max_cost_usd) == (300, 1.5)


def test_the_default_summarizer_comes_from_every_layer(tmp_path: Path) -> None:
    from core import overrides_from_assignments

    assert load_settings(cwd=tmp_path, env={}).history.summarizer_model is None
    (tmp_path / "flujo.toml").write_text(
        '[history]\nsummarizer_model = "openai:gpt-4o-mini"\nsummarizer_prompt = "Be brief."\n', encoding="utf-8"
    )
    from_toml = load_settings(cwd=tmp_path, env={}).history
    assert (from_toml.summarizer_model, from_toml.summarizer_prompt) == ("openai:gpt-4o-mini", "Be brief.")
    env = {"FLUJO_HISTORY__SUMMARIZER_MODEL": "ollama:llama3.2"}
    from_env = load_settings(cwd=tmp_path, env=env).history
    assert (from_env.summarizer_model, from_env.summarizer_prompt) == ("ollama:llama3.2", "Be brief.")
    overrides = overrides_from_assignments(["history.summarizer_model=anthropic:claude-3-5-haiku-latest"])
    from_flag = load_settings(cwd=tmp_path, env=env, overrides=overrides).history
    assert from_flag.summarizer_model == "anthropic:claude-3-5-haiku-latest"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("gpt-4o-mini", "unknown model 'gpt-4o-mini'; did you mean openai:gpt-4o-mini"),
        ("azure:gpt-4o", "unknown provider 'azure'"),
        ("openai:", "names no model"),
        ("scripted", "a scripted summarizer needs replies"),
    ],
)
def test_a_default_summarizer_that_cannot_be_built_is_a_config_error(tmp_path: Path, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=r"setting history\.summarizer_model: ") as caught:
        load_settings(cwd=tmp_path, env={"FLUJO_HISTORY__SUMMARIZER_MODEL": value})
    assert message in caught.value.message


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("FLUJO_DEFAULT_CONTEXT_WINDOW", "0"),
        ("FLUJO_DEFAULT_CONTEXT_WINDOW", "-8192"),
        ("FLUJO_RESPONSE_RESERVE_TOKENS", "-1"),
    ],
)
def test_a_window_or_reserve_that_cannot_be_is_a_config_error(tmp_path: Path, variable: str, value: str) -> None:
    setting = variable.removeprefix("FLUJO_").lower()
    with pytest.raises(ConfigError, match=f"setting {setting}: "):
        load_settings(cwd=tmp_path, env={variable: value})


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("FLUJO_SQLITE__BUSY_TIMEOUT_S", "inf"),  # a locked store would be waited on for ever
        ("FLUJO_OPENAI__TIMEOUT_S", "Infinity"),
        ("FLUJO_LIMITS__MAX_COST_USD", "nan"),
    ],
)
def test_a_number_that_is_not_finite_is_a_config_error(tmp_path: Path, variable: str, value: str) -> None:
    setting = ".".join(variable.removeprefix("FLUJO_").lower().split("__"))
    with pytest.raises(ConfigError, match=f"setting {setting}: Input should be a finite number"):
        load_settings(cwd=tmp_path, env={variable: value})


def test_a_models_table_window_that_cannot_be_is_a_config_error(tmp_path: Path) -> None:
    # 0 would be skipped silently for the default window (the window is the first one set), so it is refused.
    (tmp_path / "flujo.toml").write_text('[models."openai:local-a"]\ncontext_window = 0\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"setting models\.openai:local-a\.context_window: "):
        load_settings(cwd=tmp_path, env={})


def test_the_user_file_is_read_from_the_environment_given(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".config" / "flujo").mkdir(parents=True)
    (home / ".config" / "flujo" / "config.toml").write_text("default_context_window = 1234\n", encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    assert load_settings(cwd=project, env={"HOME": str(home)}).default_context_window == 1234
    assert load_settings(cwd=project, env={}).default_context_window == 8192  # no HOME: nobody's file is read


def test_a_relative_model_path_given_by_the_environment_is_not_moved_by_flujo_toml(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "flujo.toml").write_text('[local]\nmodel_path = "in-conf.gguf"\n', encoding="utf-8")
    from_file = load_settings(cwd=tmp_path / "conf", env={})
    assert from_file.local.model_path == str(tmp_path / "conf" / "in-conf.gguf")
    from_env = load_settings(cwd=tmp_path / "conf", env={"FLUJO_LOCAL__MODEL_PATH": "mine.gguf"})
    assert from_env.local.model_path == "mine.gguf"  # relative to the working directory, as the variable means


def test_a_project_s_default_store_is_beside_its_flujo_toml(tmp_path: Path) -> None:
    """docs/configuration.md: with a flujo.toml, the default store is relative to its folder, so every
    subfolder of the project shares one database (the settings' layers once put it in the working folder)."""
    (tmp_path / "flujo.toml").write_text("[history]\nmax_turns = 4\n", encoding="utf-8")
    here = tmp_path / "sub" / "folder"
    here.mkdir(parents=True)
    assert load_settings(cwd=here, env={}).state_uri == str(tmp_path / ".flujo" / "flujo.db")


def test_the_otel_section_comes_from_opentelemetry_s_variables_flujo_toml_and_flujo_variables(tmp_path: Path) -> None:
    assert load_settings(cwd=tmp_path, env={}).otel.endpoint is None  # nothing configured: nothing is sent
    (tmp_path / "flujo.toml").write_text('[otel]\nendpoint = "http://collector:4318"\ntimeout_s = 3\n')
    assert load_settings(cwd=tmp_path, env={}).otel.endpoint == "http://collector:4318"
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:6006/v1/traces"}
    assert load_settings(cwd=tmp_path, env=env).otel.endpoint == "http://localhost:6006/v1/traces"
    env["FLUJO_OTEL__ENDPOINT"] = "https://otel.example.com"
    settings = load_settings(cwd=tmp_path, env=env)
    assert (settings.otel.endpoint, settings.otel.timeout_s) == ("https://otel.example.com", 3.0)
    assert (
        load_settings(cwd=tmp_path, env={"OTEL_EXPORTER_OTLP_ENDPOINT": " "}).otel.endpoint == "http://collector:4318"
    )


@pytest.mark.parametrize(
    ("value", "captured"),
    [("true", True), ("True", True), ("1", True), ("SPAN_ONLY", True), ("span_and_event", True),
     ("false", False), ("0", False), ("NO_CONTENT", False), ("", False)],
)  # fmt: skip
def test_opentelemetry_s_content_switch_says_whether_content_is_sent(
    tmp_path: Path, value: str, captured: bool
) -> None:
    env = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": value}
    assert load_settings(cwd=tmp_path, env=env).otel.capture_content is captured


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, "setting otel.endpoint: 'localhost:4318' is not an http"),
        ({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "maybe"}, "setting otel.capture_content: "),
    ],
)
def test_an_otel_setting_that_cannot_be_is_a_config_error_naming_the_variables(
    tmp_path: Path, env: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings(cwd=tmp_path, env=env)
    assert raised.value.message.startswith(message)
    assert raised.value.hint == "check FLUJO_* or OTEL_* environment"


def test_the_docs_give_the_default_wait_for_a_locked_sqlite_store() -> None:
    """Every line of docs/ that says how long a locked SQLite store is waited for says the default of
    ``sqlite.busy_timeout_s`` (docs/configuration.md said 10 seconds; the default is 300)."""
    default = Settings().sqlite.busy_timeout_s
    said = []
    for page in sorted((Path(__file__).parents[2] / "docs").glob("*.md")):
        for line in page.read_text(encoding="utf-8").splitlines():
            if "locked" in line:
                for amount, unit in re.findall(r"(\d+) (seconds|minutes)", line):
                    said.append((page.name, int(amount) * (60 if unit == "minutes" else 1)))
    assert said and all(seconds == default for _, seconds in said), said
