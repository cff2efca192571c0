"""The layers import one way: flujo_cli → blueprints → core, flujo_cli → lens → core (core imports neither)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "core": {"blueprints", "lens", "flujo_cli"},
    "blueprints": {"lens", "flujo_cli"},
    "lens": {"blueprints", "flujo_cli"},
}


def imported_top_levels(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_point_one_way(package: str) -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {sorted(imported_top_levels(path) & FORBIDDEN[package])}"
        for path in (ROOT / package).rglob("*.py")
        if imported_top_levels(path) & FORBIDDEN[package]
    ]
    assert offenders == []


def test_textual_is_never_imported_at_module_level_outside_lens() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for package in ("core", "blueprints", "flujo_cli")
        for path in (ROOT / package).rglob("*.py")
        if "textual" in imported_top_levels(path)
    ]
    assert offenders == []


LENS_MAY_IMPORT = {
    "core",  # the front door, whose names count as imports of the modules they come from (core_modules_of)
    "core.errors",
    "core.events",
    "core.front_door",
    "core.ports",
    "core.records",
    "core.redaction",
    "core.usage",
}


def core_modules_of(names: list[str]) -> set[str]:
    """The modules behind ``names`` imported from ``core``'s front door (its lazy table says where each lives)."""
    import core

    table: dict[str, str] = vars(core)["_WHERE"]
    return {table[name].partition(":")[0] for name in names if name in table}


def imported_core_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "core" and node.level == 0:
            names |= core_modules_of([alias.name for alias in node.names])
    return {name for name in names if name == "core" or name.startswith("core.")}


def test_lens_reads_core_records_only() -> None:
    """Lens works on records and the redactor; the engine, policies and stores stay out of it (the CLI opens
    the store and hands it over)."""
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_core_modules(path) - LENS_MAY_IMPORT)
        for path in (ROOT / "lens").rglob("*.py")
        if imported_core_modules(path) - LENS_MAY_IMPORT
    }
    assert offenders == {}


FRONT_DOORS = {"core", "core.store", "core.agents", "core.testing", "core.front_door", "blueprints", "lens"}


@pytest.mark.parametrize("package", ["lens", "flujo_cli"])
def test_lens_and_the_cli_import_the_other_packages_through_their_front_doors(package: str) -> None:
    """``from core.records import RunRecord`` in lens or flujo_cli ties them to where core keeps a name; they
    import ``from core import RunRecord`` (or ``core.store``, ``blueprints``, ``lens``), and what they need is
    exported there."""
    own = {package}
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {name}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        for name in (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module]
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
            else []
        )
        if name.split(".")[0] in {"core", "blueprints", "lens"} - own and name not in FRONT_DOORS
    ]
    assert offenders == []


@pytest.mark.parametrize("package", ["lens", "flujo_cli"])
def test_lens_and_the_cli_import_their_own_modules_directly(package: str) -> None:
    """``from lens import figures`` in a module of lens goes through ``lens/__init__``, which imports that
    module: an import cycle through the front door. Siblings are imported by their own names
    (``import lens.figures as figures``, ``from lens.tree import RunNode``)."""
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.name != "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (isinstance(node, ast.ImportFrom) and (node.level > 0 or node.module == package))
        or (isinstance(node, ast.Import) and any(alias.name == package for alias in node.names))
    ]
    assert offenders == []


def test_lens_knows_events_by_their_classes_not_by_strings() -> None:
    """Lens matches trace events on their ``core.events`` classes and reads the step kinds that run steps
    from ``core.records``: no string in lens spells an event kind or such a step kind, and none is a path
    convention (a history summary says what it is in its events, not by a ``/summarize`` path)."""
    from core.events import EVENT_TYPES
    from core.records import CONTAINER_STEP_KINDS

    spelled = {*EVENT_TYPES, *CONTAINER_STEP_KINDS, "summarize"}
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
        for path in sorted((ROOT / "lens").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (node.value in spelled or node.value.rstrip("/").endswith("/summarize"))
    ]
    assert offenders == []


def test_textual_loads_only_when_the_viewer_opens() -> None:
    code = (
        "import sys, lens, flujo_cli.commands.lens; from flujo_cli.main import app; "
        "print([m for m in sys.modules if m == 'textual' or m == 'lens.viewer'])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.strip() == "[]"


def test_help_does_not_import_the_engine_or_providers() -> None:
    code = (
        "import sys; from flujo_cli.main import app; "
        "heavy = [m for m in ('core.engine', 'httpx', 'jinja2', 'aiosqlite', 'blueprints') if m in sys.modules]; "
        "print(heavy)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.strip() == "[]"


def test_loading_a_blueprint_does_not_import_the_explainer_or_the_wizard() -> None:
    """``flujo run`` imports ``blueprints``; the explainer and the wizard load when first asked for."""
    code = (
        "import sys, blueprints; "
        "loaded = [m for m in ('blueprints.explain', 'blueprints.scaffold') if m in sys.modules]; "
        "print(loaded, blueprints.explain_blueprint.__module__, blueprints.resolve_answers.__name__)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.strip() == "[] blueprints.explain.explainer resolve"


def test_reading_the_store_does_not_import_the_engine() -> None:
    """``core`` imports its names on first use: the lens commands (settings, redactor, store, lens) never
    load the engine, its policies or agents; ``core.Engine`` still works, imported when first asked for."""
    code = (
        "import sys, core.config, core.redaction, core.store, core.store.sqlite, lens; "
        "heavy = [m for m in ('core.engine', 'core.policies', 'core.agents', 'core.steps') if m in sys.modules]; "
        "import core; print(heavy, core.Engine.__module__, 'Engine' in dir(core))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.strip() == "[] core.engine True"


CONVERSATION = ROOT / "core" / "conversation"


def conversation_imports(path: Path) -> set[str]:
    """What ``path`` takes from the conversation package: modules ``core.conversation.<part>`` and names
    imported ``from core.conversation``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("core.conversation.")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("core.conversation."):
                found.add(node.module)
            elif node.module == "core.conversation":
                found |= {f"core.conversation.{alias.name}" for alias in node.names}
            elif node.module == "core":
                found |= {f"core.{alias.name}" for alias in node.names if alias.name == "conversation"}
    return found


def outside_the_conversation() -> list[Path]:
    return [
        path
        for package in ("core", "blueprints", "lens", "flujo_cli")
        for path in (ROOT / package).rglob("*.py")
        if CONVERSATION not in path.parents
    ]


def test_the_policies_call_only_the_conversation_interface() -> None:
    """The step policies (and every other module of the product) use the conversation through the names
    ``core.conversation`` exports, never its modules (``core.conversation.turns``, ``.injection``, ...)."""
    import core.conversation

    interface = {f"core.conversation.{name}" for name in core.conversation.__all__}
    policies = list((ROOT / "core" / "policies").glob("*.py"))
    assert any(conversation_imports(path) for path in policies)  # the check below has something to check
    offenders = {
        str(path.relative_to(ROOT)): sorted(conversation_imports(path) - interface)
        for path in outside_the_conversation()
        if conversation_imports(path) - interface
    }
    assert offenders == {}


def test_the_conversation_does_not_import_the_policies_or_the_engine() -> None:
    """Imports point one way: the policies call the conversation; the conversation never calls back (what it
    needs of the run's frame is the ``RunFrame`` protocol)."""
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            name for name in imported_core_modules(path) if name.startswith(("core.policies", "core.engine"))
        )
        for path in CONVERSATION.rglob("*.py")
    }
    assert {path: names for path, names in offenders.items() if names} == {}
    assert len(offenders) >= 10  # the package's modules were found


def test_the_architecture_page_draws_every_module_of_the_conversation_and_the_policies() -> None:
    """docs/architecture.md shows the conversation as one room: a module added or moved there is drawn too."""
    drawn = set(re.findall(r"\b\w+\.py\b", (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")))
    modules = {
        path.name
        for room in (CONVERSATION, ROOT / "core" / "policies")
        for path in room.rglob("*.py")
        if path.name != "__init__.py"
    }
    assert sorted(modules - drawn) == []


def reads_environment(path: Path) -> bool:
    """Whether the module touches ``os.environ`` / ``os.getenv`` (or imports them from ``os``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb"):
            return True
        imported = {alias.name for alias in node.names} if isinstance(node, ast.ImportFrom) else set()
        if isinstance(node, ast.ImportFrom) and node.module == "os" and imported & {"environ", "getenv", "environb"}:
            return True
    return False


def test_only_the_config_module_reads_the_environment() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for package in ("core", "blueprints", "lens")
        for path in (ROOT / package).rglob("*.py")
        if path != ROOT / "core" / "config.py" and reads_environment(path)
    ]
    assert offenders == []
