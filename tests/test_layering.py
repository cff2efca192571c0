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
    "core",
    "core.model.errors",
    "core.model.events",
    "core.ports",
    "core.model.records",
    "core.text.redaction",
    "core.model.usage",
}


def imported_core_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
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


def test_lens_knows_events_by_their_classes_not_by_strings() -> None:
    """Lens matches trace events on their ``core.model.events`` classes and reads the step kinds that run steps
    from ``core``: no string in lens spells an event kind or such a step kind, and none is a path
    convention (a history summary says what it is in its events, not by a ``/summarize`` path)."""
    from core.model.events import EVENT_TYPES
    from core.steps.kinds import CONTAINER_STEP_KINDS

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
        "import sys, core.settings.config, core.text.redaction, core.store, core.store.sqlite_backend.store, lens; "
        "heavy = [m for m in ('core.engine', 'core.policies', 'core.agents', 'core.steps.kinds') if m in sys.modules]; "
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
        if path != ROOT / "core" / "settings" / "config.py" and reads_environment(path)
    ]
    assert offenders == []


BLUEPRINTS = ROOT / "blueprints"
# blueprints' rooms, bottom to top: a module imports its own room and the rooms below, never one above.
BLUEPRINT_ROOMS = {"schema": 0, "reading": 1, "checking": 2, "compiling": 3, "explain": 4, "scaffold": 4}
CORE_FRONT_DOORS = {"core", "core.agents", "core.store", "core.front_door", "core.testing"}


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at module level, in functions or under TYPE_CHECKING; ``from pkg
    import name`` imports ``pkg``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_blueprints_rooms_import_one_way() -> None:
    """blueprints/ holds its front door and its rooms; each room imports only itself and the rooms below
    (schema, reading, checking, compiling, then explain and scaffold), never the front door."""
    loose = sorted(path.name for path in BLUEPRINTS.glob("*.py") if path.name != "__init__.py")
    assert loose == []
    rooms = {path.name for path in BLUEPRINTS.iterdir() if (path / "__init__.py").is_file()}
    assert rooms == set(BLUEPRINT_ROOMS)
    offenders = []
    for path in sorted(BLUEPRINTS.rglob("*.py")):
        if path == BLUEPRINTS / "__init__.py":
            continue
        room = path.relative_to(BLUEPRINTS).parts[0]
        for name in sorted(imported_modules(path)):
            parts = name.split(".")
            if parts[0] != "blueprints":
                continue
            other = parts[1] if len(parts) > 1 else "the front door"
            if other != room and BLUEPRINT_ROOMS.get(other, 99) >= BLUEPRINT_ROOMS[room]:
                offenders.append(f"{path.relative_to(ROOT)} ({room}) imports {name}")
    assert offenders == []


def test_blueprints_imports_core_through_its_front_doors() -> None:
    """What blueprints needs of core is exported by ``core`` (or ``core.agents``, ``core.store``): a module
    moved inside core changes core's table, not blueprints."""
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_core_modules(path) - CORE_FRONT_DOORS)
        for path in BLUEPRINTS.rglob("*.py")
        if imported_core_modules(path) - CORE_FRONT_DOORS
    }
    assert offenders == {}


def blueprint_modules() -> dict[str, Path]:
    return {
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): path
        for path in BLUEPRINTS.rglob("*.py")
    }


def blueprint_imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The blueprints modules ``path`` imports (``from pkg import name`` imports ``pkg``, and ``pkg.name``
    when that is a module), and for a package's ``__init__`` the modules its lazy table names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Constant) and path.name == "__init__.py" and isinstance(node.value, str):
            found.add(node.value.partition(":")[0])
    return found & set(modules)


def test_blueprints_modules_import_no_cycle() -> None:
    """No circle among blueprints' modules, counting imports in functions and under TYPE_CHECKING (the
    three compilers once made one that way)."""
    modules = blueprint_modules()
    graph = {name: blueprint_imports(path, modules) - {name} for name, path in modules.items()}
    state: dict[str, str] = {}
    cycles: list[list[str]] = []

    def visit(name: str, trail: list[str]) -> None:
        state[name] = "open"
        for other in sorted(graph[name]):
            if state.get(other) == "open":
                cycles.append([*trail[trail.index(other) :], other])
            elif other not in state:
                visit(other, [*trail, other])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []
