"""Installing shell completion (``flujo completion SHELL --install``, ``flujo --install-completion``): the script
is written where the shell finds it at start, and the shell's startup file gets one line that loads it, once.

* bash: the script in ``$XDG_DATA_HOME/flujo/completion.bash`` (default ``~/.local/share``), sourced from
  ``~/.bashrc``;
* zsh: the script in ``$XDG_DATA_HOME/flujo/completion.zsh``, sourced from ``$ZDOTDIR/.zshrc`` (default
  ``~/.zshrc``); the script starts zsh's completion system if nothing did;
* fish: the script in ``$XDG_CONFIG_HOME/fish/completions/flujo.fish`` (default ``~/.config``), which fish
  loads by itself.

Installing again rewrites the script (a newer flujo's) and leaves the startup file as it is.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import flujo_cli.exit_codes as exit_codes
from flujo_cli.completion.shells import SHELLS, script
from flujo_cli.messages import error_line

MARK = "# flujo shell completion"


def install(shell: str | None) -> int:
    """Install completion for ``shell`` (None: the shell flujo was started from); say where, and how to use it
    now. The exit code: 2 when the shell is not one of ``SHELLS`` or cannot be told, 1 when a file cannot
    be written."""
    shell = shell or detected_shell()
    if shell not in SHELLS:
        named = f"{shell} is not a shell flujo completes" if shell else "cannot tell which shell this is"
        error_line(named, f"install it for one of them by name: flujo completion {'|'.join(SHELLS)} --install")
        return exit_codes.USAGE
    target, startup = _places(shell)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(script(shell), encoding="utf-8")
        if startup is not None:
            _load_from(startup, target)
    except OSError as exc:
        error_line(f"cannot install {shell} completion: {exc.strerror or exc} ({exc.filename})")
        return exit_codes.FAILED
    print(f"installed {shell} completion in {target}" + (f", loaded from {startup}" if startup else ""))
    print(f"open a new shell to use it, or load it in this one now: source {shlex.quote(str(target))}")
    return exit_codes.OK


def detected_shell() -> str | None:
    """The shell that started flujo (its parent processes), else the login shell (``$SHELL``)."""
    try:
        import shellingham  # type: ignore[import-untyped]  # Typer's own dependency, for this same question

        name, _ = shellingham.detect_shell()
    except (
        ImportError,
        OSError,
        RuntimeError,
    ):  # no shell among the parents (ShellDetectionFailure), or no way to tell
        name = Path(os.environ.get("SHELL", "")).name
    return str(name) or None


def _places(shell: str) -> tuple[Path, Path | None]:
    """Where the script of ``shell`` goes, and the startup file that loads it (None: the shell finds it)."""
    home = Path.home()
    data = Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    if shell == "bash":
        return data / "flujo" / "completion.bash", home / ".bashrc"
    if shell == "zsh":
        return data / "flujo" / "completion.zsh", Path(os.environ.get("ZDOTDIR") or home) / ".zshrc"
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    return config / "fish" / "completions" / "flujo.fish", None


def _load_from(startup: Path, target: Path) -> None:
    """Add the line that sources ``target`` to ``startup``, unless it is there."""
    line = f"[ -f {shlex.quote(str(target))} ] && . {shlex.quote(str(target))}  {MARK}"
    text = startup.read_text(encoding="utf-8") if startup.is_file() else ""
    if line in text:
        return
    separator = "" if not text or text.endswith("\n") else "\n"
    startup.parent.mkdir(parents=True, exist_ok=True)
    startup.write_text(f"{text}{separator}{line}\n", encoding="utf-8")
