"""``flujo schema [blueprint|ensemble|config]``: the JSON Schema of a file format on stdout, for editors
(``# yaml-language-server: $schema=...``; docs/cli.md). Made from the models that validate the files."""

from __future__ import annotations

import difflib
import json
import sys

import flujo_cli.exit_codes as exit_codes
from flujo_cli.messages import usage_error


def print_schema(kind: str) -> int:
    from blueprints import SCHEMA_KINDS, file_schema

    for known in SCHEMA_KINDS:
        if kind == known:
            sys.stdout.write(json.dumps(file_schema(known), indent=2, ensure_ascii=False) + "\n")
            return exit_codes.OK
    close = difflib.get_close_matches(kind.lower(), SCHEMA_KINDS, n=1, cutoff=0.6)
    guess = f" — did you mean {close[0]!r}?" if close else ""
    usage_error(f"there is no schema {kind!r}{guess}", "give blueprint, ensemble or config (flujo schema --help)")
