"""Shell completion's protocol: the scripts ``flujo completion SHELL`` prints for bash, zsh and fish, and what
``flujo`` answers when one of them runs it to ask for completions.

The protocol is click 8's (its shell_completion docs), which Typer's own scripts change: a script runs ``flujo``
with ``_FLUJO_COMPLETE=SHELL_complete`` and the words typed so far (``COMP_WORDS``, ``COMP_CWORD``: the index
of the word being completed); ``flujo`` prints one completion per line, ``TYPE,VALUE`` for bash,
``TYPE⏎VALUE⏎HELP`` for zsh (``_`` for no help), ``TYPE,VALUE<tab>HELP`` for fish, where ``TYPE`` is ``plain``
(a value to offer) or ``file`` / ``dir`` (let the shell complete a path, as for a blueprint FILE). Click
resolves which command, option or argument the word belongs to; the values come from the commands, their
options, and ``flujo_cli.completion.values`` for what the project holds. ``SHELL_source`` prints the script.

bash splits a word at ``:``, ``=`` and ``@`` (``COMP_WORDBREAKS``) and replaces only what follows the last of them,
so its script also sends the line itself (``COMP_LINE``, ``COMP_POINT``): the word is read whole (a thread
``support:42``) and each value is given from where bash will put it.

Nothing here may print an error or a traceback to the terminal while a person presses TAB: a failure is no
completions (with ``FLUJO_DEBUG=1``, its traceback on stderr, which the scripts discard).
"""

from __future__ import annotations

import os
import re
import signal
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from typer._click import Context
from typer._click.shell_completion import (
    CompletionItem,
    ShellComplete,
    _resolve_context,
    _resolve_incomplete,
    split_arg_string,
)
from typer._coercion import RuntimeParam
from typer.core import TyperArgument, TyperGroup, TyperOption

import flujo_cli.exit_codes as exit_codes

if TYPE_CHECKING:
    from typer._click import Command

PROG = "flujo"
COMPLETE_VAR = "_FLUJO_COMPLETE"
SHELLS = ("bash", "zsh", "fish")
MAX_HELP = 72  # characters of an option's help shown beside it (zsh, fish): its first sentence, shortened
DEFAULT_WORDBREAKS = " \t\n\"'@><=;|&(:"
PATH_OPTIONS = {"--state"}  # options typed as text whose values are mostly file paths

BASH_SCRIPT = r"""# flujo completion for bash: source this file from ~/.bashrc (flujo completion bash --install does)
_flujo_completion() {
    local IFS=$'\n'
    local response completion
    response=$(env COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD="$COMP_CWORD" COMP_LINE="$COMP_LINE" \
        COMP_POINT="$COMP_POINT" COMP_WORDBREAKS="$COMP_WORDBREAKS" _FLUJO_COMPLETE=bash_complete "$1" 2>/dev/null)
    COMPREPLY=()
    for completion in $response; do
        case ${completion%%,*} in
            plain) COMPREPLY+=("${completion#*,}") ;;
            file) COMPREPLY=(); compopt -o default 2>/dev/null; return 0 ;;
            dir) COMPREPLY=(); compopt -o dirnames 2>/dev/null; return 0 ;;
        esac
    done
    return 0
}
complete -o nosort -F _flujo_completion flujo 2>/dev/null || complete -F _flujo_completion flujo
"""

ZSH_SCRIPT = r"""#compdef flujo
# flujo completion for zsh: put this file on $fpath as _flujo, or source it from ~/.zshrc
# (flujo completion zsh --install does the latter)
_flujo_completion() {
    local -a response described plain
    local type value help
    response=("${(@f)$(env COMP_WORDS="${words[*]}" COMP_CWORD=$((CURRENT - 1)) \
        _FLUJO_COMPLETE=zsh_complete flujo 2>/dev/null)}")
    for type value help in "${response[@]}"; do
        case $type in
            plain)
                if [[ $help == _ ]]; then
                    plain+=("$value")
                else
                    described+=("${value//:/\\:}:$help")
                fi
                ;;
            file) _path_files -f ;;
            dir) _path_files -/ ;;
        esac
    done
    (( ${#described} )) && _describe -V unsorted described -U
    (( ${#plain} )) && compadd -U -V unsorted -a plain
    return 0
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _flujo_completion "$@"
else
    (( $+functions[compdef] )) || { autoload -Uz compinit && compinit }
    compdef _flujo_completion flujo
fi
"""

FISH_SCRIPT = r"""# flujo completion for fish: put this file in ~/.config/fish/completions/flujo.fish
# (flujo completion fish --install does)
function _flujo_completion
    set -l response (env _FLUJO_COMPLETE=fish_complete COMP_WORDS=(commandline -cp) COMP_CWORD=(commandline -ct) \
        flujo 2>/dev/null)
    for completion in $response
        set -l metadata (string split -m 1 "," -- $completion)
        switch $metadata[1]
            case plain
                echo $metadata[2]
            case file
                __fish_complete_path $metadata[2]
            case dir
                __fish_complete_directories $metadata[2]
        end
    end
end
complete --command flujo --no-files --keep-order --arguments "(_flujo_completion)"
"""

SCRIPTS = {"bash": BASH_SCRIPT, "zsh": ZSH_SCRIPT, "fish": FISH_SCRIPT}


def script(shell: str) -> str:
    """The completion script of ``shell`` (one of ``SHELLS``)."""
    return SCRIPTS[shell]


def respond(cli: Command, instruction: str) -> int:
    """Answer a completion script's request ``instruction`` (``bash_complete``, ``zsh_source`` ...) on stdout;
    the exit code. Completions that cannot be found are none, never an error."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C while the shell waits for the answer: gone, silently
    shell, _, action = instruction.partition("_")
    kind = _KINDS.get(shell)
    if kind is None or action not in ("complete", "source"):
        sys.stderr.write(
            f"error: {COMPLETE_VAR}={instruction} is not a completion request flujo knows\n"
            f"hint: the scripts of flujo completion {'|'.join(SHELLS)} send {{bash,zsh,fish}}_complete\n"
        )
        return exit_codes.USAGE
    if action == "source":
        sys.stdout.write(script(shell))
        return exit_codes.OK
    try:
        _for_completion(cli)
        answer = kind(cli, {}, PROG, COMPLETE_VAR).complete()
    except Exception:  # the CLI's top level while TAB is pressed: no completions, never a traceback on the terminal
        if os.environ.get("FLUJO_DEBUG", "") not in ("", "0"):
            traceback.print_exc()
        return exit_codes.OK
    if answer:
        sys.stdout.write(answer + "\n")
    return exit_codes.OK


class _AsTyped(RuntimeParam):
    """A parameter's value as typed: Typer converts values with pydantic (a few tenths of a second to import),
    which a completion never needs."""

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        return value


def _for_completion(command: Command) -> None:
    """Make ``command`` and the commands under it parse for completion only: values kept as typed (so pydantic
    is never imported), no callback run (``--version`` would print, ``--install-completion`` install), and a
    path's value completed by the shell (a ``file`` item; Typer offers nothing for a ``Path``)."""
    help_option = command.get_help_option(Context(command))  # made when first asked for, then kept
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        param.callback = None
        if not isinstance(param, TyperArgument | TyperOption):
            continue
        described = param.type_descriptor
        param._runtime_param = _AsTyped(described.parameter_info, described.annotation)
        if param._custom_shell_complete is None and (described.is_path or PATH_OPTIONS & set(param.opts)):
            param._custom_shell_complete = _a_path
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            _for_completion(sub)


def _a_path(ctx: Context, param: Any, incomplete: str) -> list[CompletionItem]:
    return [CompletionItem(incomplete, type="file")]


def _help(item: CompletionItem) -> str:
    """The item's help on one line: its first sentence, shortened to ``MAX_HELP`` characters."""
    text = " ".join(str(item.help or "").split()).replace("...", "…")  # click shortens a command's help so
    first = re.split(r"(?<=[.;])\s", text, maxsplit=1)[0].rstrip(".;")
    return first if len(first) <= MAX_HELP else first[:MAX_HELP].rsplit(" ", 1)[0].rstrip(",:;") + "…"


class _Completion(ShellComplete):
    """What the three shells share: the words from ``COMP_WORDS`` and ``COMP_CWORD``."""

    source_template: ClassVar[str] = ""

    def source_vars(self) -> dict[str, Any]:
        return {}

    def source(self) -> str:
        return script(self.name)

    def get_completion_args(self) -> tuple[list[str], str]:
        words = split_arg_string(os.environ.get("COMP_WORDS", ""))
        current = int(os.environ.get("COMP_CWORD", "0") or 0)
        return words[1:current], words[current] if current < len(words) else ""

    def get_completions(self, args: list[str], incomplete: str) -> list[CompletionItem]:
        """As click's, except that an option's value is completed knowing the rest of the line: click parses the
        line with the option still waiting for its value, gives up there, and leaves the arguments before it
        unread (``lens trace RUN_ID --step`` would not know RUN_ID); the line without that option is read whole."""
        ctx = _resolve_context(self.cli, self.ctx_args, self.prog_name, args)
        found, value = _resolve_incomplete(ctx, list(args), incomplete)
        if isinstance(found, TyperOption) and args and args[-1] in found.opts + found.secondary_opts:
            ctx = _resolve_context(self.cli, self.ctx_args, self.prog_name, args[:-1])
        return found.shell_complete(ctx, value)


class BashComplete(_Completion):
    name: ClassVar[str] = "bash"

    def get_completion_args(self) -> tuple[list[str], str]:
        typed = self._typed()
        if typed is None:
            return super().get_completion_args()
        words = split_arg_string(typed)
        if typed and not typed[-1].isspace() and len(words) > 1:
            return words[1:-1], words[-1]
        return words[1:], ""

    def complete(self) -> str:
        args, incomplete = self.get_completion_args()
        items = self.get_completions(args, incomplete)
        shown = self._from_the_break(incomplete)
        return "\n".join(
            f"{item.type},{shown(str(item.value)) if item.type == 'plain' else item.value}" for item in items
        )

    def format_completion(self, item: CompletionItem) -> str:
        return f"{item.type},{item.value}"

    @staticmethod
    def _typed() -> str | None:
        """The line up to the cursor (``COMP_LINE``, ``COMP_POINT``: a byte offset), when the script sends it."""
        line, point = os.environ.get("COMP_LINE"), os.environ.get("COMP_POINT")
        if line is None or not point or not point.isdigit():
            return None
        return line.encode()[: int(point)].decode(errors="ignore")

    def _from_the_break(self, incomplete: str) -> Callable[[str], str]:
        """How a value is given to bash: from where bash puts it, after the last word break (``:``, ``=``, ``@``)
        in the word typed (which ``COMP_WORDS`` splits there, and bash replaces only after)."""
        typed = self._typed()
        if typed is None:
            return lambda value: value
        raw = re.split(r"\s", typed)[-1]
        breaks = set(os.environ.get("COMP_WORDBREAKS", DEFAULT_WORDBREAKS)) - set(" \t\n\"'")
        start = max((raw.rfind(mark) for mark in breaks), default=-1) + 1
        # The part of the word that is the value (after ``--option=``), and the part of it bash keeps.
        value_typed = incomplete.partition("=")[2] if incomplete.startswith("-") and "=" in incomplete else incomplete
        kept = len(value_typed) - len(raw[start:])

        def shown(value: str) -> str:
            return value[kept:] if kept > 0 and value.startswith(value_typed) else value

        return shown


class ZshComplete(_Completion):
    name: ClassVar[str] = "zsh"

    def format_completion(self, item: CompletionItem) -> str:
        return f"{item.type}\n{item.value}\n{_help(item) or '_'}"


class FishComplete(_Completion):
    name: ClassVar[str] = "fish"

    def get_completion_args(self) -> tuple[list[str], str]:
        """fish sends the line up to the cursor (``COMP_WORDS``) and the token at the cursor (``COMP_CWORD``)."""
        words = split_arg_string(os.environ.get("COMP_WORDS", ""))
        token = os.environ.get("COMP_CWORD", "")
        incomplete = split_arg_string(token)[0] if token.strip() else ""
        args = words[1:]
        if incomplete and args and args[-1] == incomplete:
            args.pop()
        return args, incomplete

    def format_completion(self, item: CompletionItem) -> str:
        help = _help(item)
        return f"{item.type},{item.value}\t{help}" if help else f"{item.type},{item.value}"


_KINDS: dict[str, type[_Completion]] = {"bash": BashComplete, "zsh": ZshComplete, "fish": FishComplete}
