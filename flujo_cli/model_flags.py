"""``--model agents.NAME=provider:model`` / ``--model '*=MODEL'``: the command line's side of
``blueprints.ModelOverrides``. The values are checked before anything else is done (a malformed one, an
unknown provider or model: a usage error, exit code 2, with a did-you-mean); an agent the blueprint does not
have is found when it is loaded (``refused_at_load``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from flujo_cli.messages import error_line, usage_error

if TYPE_CHECKING:
    from blueprints import ModelOverrideError, ModelOverrides


def checked_models(values: Sequence[str]) -> list[str]:
    """``values`` as the run records them (a ``local:FILE`` path made absolute); a usage error for the first
    that is malformed or names an unknown provider or model."""
    return model_overrides(values).assignments()


def model_overrides(values: Sequence[str]) -> ModelOverrides:
    """The overrides ``values`` say; a usage error (exit 2) for one that cannot be read."""
    from blueprints import ModelOverrideError, ModelOverrides

    try:
        return ModelOverrides.parse(values)
    except ModelOverrideError as exc:
        usage_error(exc.message, exc.hint)


def refused_at_load(exc: ModelOverrideError) -> int:
    """Say that a ``--model`` value names an agent the blueprint lacks; the usage error's exit code."""
    import flujo_cli.exit_codes as exit_codes

    error_line(exc.message, exc.hint)
    return exit_codes.USAGE
