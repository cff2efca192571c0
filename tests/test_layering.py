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
    "core.model.errors",
    "core.model.events",
    "core.front_door",
    "core.ports",
    "core.model.records",
    "core.text.redaction",
    "core.model.usage",
    # A run's recorded calls (plain values read from its journal) and the diffs of two prompts: flujo lens diff.
    "core.replay.recording",
    "core.replay.diffs",
    # How a prompt event's why is stored and read back (ids only, plain functions): lens reads it as the
    # conversation writes it, with the same code (flujo lens trace --why).
    "core.model.provenance",
    # Stored texts as a terminal may show them (escape sequences as pictures), as a run's lines show them.
    "core.text.terminal",
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


def test_lens_knows_events_by_their_classes_not_by_strings() -> None:
    """Lens matches trace events on their ``core.model.events`` classes and reads the step kinds that run steps
    (and those of a tool loop's records) from ``core``: no string in lens spells an event kind or such a step
    kind, and none is a path convention (a history summary says what it is in its events, not by a
    ``/summarize`` path)."""
    from core import CONTAINER_STEP_KINDS, TOOL_LOOP_KINDS
    from core.model.events import EVENT_TYPES

    spelled = {*EVENT_TYPES, *CONTAINER_STEP_KINDS, *TOOL_LOOP_KINDS, "summarize"}
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


def test_the_architecture_page_draws_every_module_of_core() -> None:
    """docs/architecture.md draws core's rooms: a module added or moved is drawn too."""
    drawn = set(re.findall(r"\b\w+\.py\b", (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")))
    modules = {path.name for path in (ROOT / "core").rglob("*.py") if path.name != "__init__.py"}
    assert any(CONVERSATION in path.parents for path in (ROOT / "core").rglob("*.py"))
    assert sorted(modules - drawn) == []


def test_the_architecture_page_draws_core_s_rooms_in_their_order() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    places = []
    for room in CORE_ROOMS[:-1]:
        leaf = room.rpartition(".")[2]
        drawn = f"── {leaf}/" if (ROOT / Path(*room.split("."))).is_dir() else f"── {leaf}.py"
        assert drawn in page, f"docs/architecture.md does not draw {room}"
        places.append(page.index(drawn))
    assert places == sorted(places)


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
# cases (case files, their expectations) reads YAML with places and nothing of blueprints themselves.
BLUEPRINT_ROOMS = {"schema": 0, "reading": 1, "cases": 2, "checking": 2, "compiling": 3, "explain": 4, "scaffold": 4}


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


# --- The import graph: every import a module makes, wherever it is written -----------------------------------
#
# A module imports another when the other runs first: `import a.b` and `from a.b import c` depend on `a.b`
# (and on `a.b.c` when that is a module); an import inside a function or under TYPE_CHECKING counts as one at
# the top; a package's `__init__` that exports lazily (core.front_door.lazy_exports) depends on every module
# its table names, since reading the name imports it.

PACKAGES = ("core", "blueprints", "lens", "flujo_cli")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")}


def known(name: str) -> str | None:
    """The module ``name`` or, for ``a.b.attr``, the nearest enclosing module that exists."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def lazy_table_modules(tree: ast.Module) -> set[str]:
    """The modules named in the literal tables a front door hands to ``lazy_exports``."""
    tables = {
        node.args[1].id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "lazy_exports"
        and len(node.args) > 1
        and isinstance(node.args[1], ast.Name)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in tables for t in node.targets):
            assert isinstance(node.value, ast.Dict), "a front door's table is a literal mapping"
            for value in node.value.values:
                assert isinstance(value, ast.Constant) and isinstance(value.value, str)
                found.add(value.value.partition(":")[0])
    return found


def imports_in(tree: ast.Module, name: str, *, front_door: bool) -> set[str]:
    """The modules of the four packages that the module ``name`` (parsed as ``tree``) imports."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{name}: a relative import"
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names if f"{node.module}.{alias.name}" in MODULES}
    found |= lazy_table_modules(tree) if front_door else set()
    return {target for target in map(known, found) if target and target != name}


def imports_of(name: str) -> set[str]:
    path = MODULES[name]
    return imports_in(ast.parse(path.read_text(encoding="utf-8")), name, front_door=path.name == "__init__.py")


GRAPH = {name: imports_of(name) for name in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_itself_round_a_circle() -> None:
    assert cycles(GRAPH) == []


def test_the_graph_counts_imports_in_functions_under_type_checking_and_in_lazy_tables() -> None:
    """The three ways the old circle of 49 core modules hid are each an edge of the graph, and a circle
    made of such edges is found."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from core.front_door import lazy_exports\n"
        "if TYPE_CHECKING:\n    from core.engine import Engine\n"
        "def later():\n    from core.policies import frame\n"
        "_WHERE = {'RunContext': 'core.context', 'bind': 'core.conversation.threads:bind'}\n"
        "__getattr__, __dir__ = lazy_exports(__name__, _WHERE, globals())\n"
    )
    found = imports_in(ast.parse(source), "core.example", front_door=True)
    expected = {"core.front_door", "core.engine", "core.policies", "core.policies.frame", "core.context"}
    assert found == expected | {"core.conversation.threads"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# --- The rooms of core, bottom to top ----------------------------------------------------------------------------
#
# A module may import its own room and the rooms below it, never one above. (docs/architecture.md draws them.)

CORE_ROOMS = (
    "core.front_door",
    "core.model",
    "core.text",
    "core.settings",
    "core.ports",
    "core.context",
    "core.answering",
    "core.replay",
    "core.steps",
    "core.conversation",
    "core.agents",
    "core.tools",
    "core.store",
    "core.policies",
    "core.engine",
    "core.testing",
    "core",
)


def room_of(name: str) -> int:
    for level, room in sorted(enumerate(CORE_ROOMS), key=lambda pair: -len(pair[1])):
        if name == room or name.startswith(room + "."):
            return level
    raise AssertionError(f"{name} is in no room of core: add it to one (docs/architecture.md)")


def test_every_core_module_is_in_a_room() -> None:
    loose = [name for name in MODULES if name.startswith("core.") and name.count(".") == 1]
    rooms = {room for room in CORE_ROOMS if room.count(".") == 1}
    assert sorted(set(loose) - rooms) == []


def test_core_imports_point_down_its_rooms() -> None:
    upward = [
        f"{name} ({CORE_ROOMS[room_of(name)]}) imports {target} ({CORE_ROOMS[room_of(target)]})"
        for name in sorted(MODULES)
        if name == "core" or name.startswith("core.")
        for target in sorted(GRAPH[name])
        if target.startswith("core") and room_of(target) > room_of(name)
    ]
    assert upward == []


def test_nothing_in_core_imports_core_by_name() -> None:
    """``core/__init__.py`` is the front door for the other packages; inside core, modules import modules."""
    assert [name for name in sorted(MODULES) if name.startswith("core.") and "core" in GRAPH[name]] == []


# --- Front doors -----------------------------------------------------------------------------------------------------
#
# blueprints, lens and flujo_cli use another package only through the `__init__` it offers for that.

FRONT_DOORS = {"core", "core.agents", "core.store", "core.testing", "core.front_door", "blueprints", "lens"}


@pytest.mark.parametrize("package", ["blueprints", "lens", "flujo_cli"])
def test_packages_use_each_other_through_front_doors(package: str) -> None:
    side_doors = [
        f"{name} imports {target}"
        for name in sorted(MODULES)
        if name == package or name.startswith(package + ".")
        for target in sorted(GRAPH[name])
        if target.split(".")[0] != package and target not in FRONT_DOORS
    ]
    assert side_doors == []


def test_inside_a_package_no_module_imports_its_own_front_door() -> None:
    """A module imports its siblings by their modules; a package's ``__init__`` that imports anything (a
    front door) is imported only from outside the package, so no ``__init__`` stands in a circle."""
    offenders = [
        f"{name} imports {target}"
        for name in sorted(MODULES)
        for target in sorted(GRAPH[name])
        if MODULES[target].name == "__init__.py" and name.startswith(target + ".") and GRAPH[target]
    ]
    assert offenders == []
