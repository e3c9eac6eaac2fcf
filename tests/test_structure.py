"""The house's walls (ARCHITECTURE.md): no import cycles among the project's modules, services that
never import the API, and visibility that comes from the models, not from a view module."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("config", "frontend", "planner", "simcore", "twin")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Project modules ``name`` imports anywhere in its file (a function-level import counts too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            candidates = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for candidate in candidates:
            while candidate and candidate not in modules:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                targets.add(candidate)
    return targets


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return components


def _within_package(module, target):
    """A package and its own submodules (an ``__init__`` re-exporting them) are not a loop."""
    return target.startswith(module + ".") or module.startswith(target + ".")


def test_no_import_cycles():
    graph = {module: {t for t in targets if not _within_package(module, t)} for module, targets in _graph().items()}
    assert _cycles(graph) == []


def test_a_cycle_is_found_when_there_is_one():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_services_never_import_the_api():
    offenders = {module: sorted(t for t in targets if t.startswith("planner.api"))
                 for module, targets in _graph().items() if module.startswith(("planner.services", "twin.services"))}
    assert {module: targets for module, targets in offenders.items() if targets} == {}


def test_only_url_modules_import_view_modules():
    """Rules (visibility among them) live in models and services; a view module is imported only
    by the URL configuration that routes to it."""
    offenders = {module: sorted(t for t in targets if t.rpartition(".")[2].endswith("views"))
                 for module, targets in _graph().items() if not module.rpartition(".")[2].endswith("urls")}
    assert {module: targets for module, targets in offenders.items() if targets} == {}


def test_the_planner_never_imports_the_twin():
    """The twin builds on the planner, never the reverse (ARCHITECTURE.md): what both need, such as
    retention, the twin registers with the planner from its AppConfig."""
    offenders = {module: sorted(t for t in targets if t.startswith("twin"))
                 for module, targets in _graph().items() if module.startswith("planner")}
    assert {module: targets for module, targets in offenders.items() if targets} == {}


def test_simcore_imports_no_other_project_package():
    for module, targets in _graph().items():
        if module.startswith("simcore"):
            assert not {t for t in targets if not t.startswith("simcore")}, module


def _engine_entry_calls(path: Path) -> bool:
    """Whether a module calls ``simcore.evaluate`` (or ``evaluate_parsed``), by attribute or by import."""
    entries = {"evaluate", "evaluate_parsed"}
    tree = ast.parse(path.read_text())
    imported = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith("simcore") for alias in node.names if alias.name in entries}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in entries and isinstance(func.value, ast.Name) \
                    and func.value.id == "simcore":
                return True
            if isinstance(func, ast.Name) and func.id in imported:
                return True
    return False


def test_one_service_module_is_the_web_projects_way_into_the_engine():
    callers = sorted(name for name, path in _modules().items()
                     if not name.startswith("simcore") and _engine_entry_calls(path))
    assert callers == ["planner.services.engine"]


def test_no_function_is_over_sixty_lines():
    long = sorted(f"{name}.{node.name}: {node.end_lineno - node.lineno + 1}" for name, path in _modules().items()
                  for node in ast.walk(ast.parse(path.read_text()))
                  if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno >= 60)
    assert long == []


def test_every_module_and_name_docs_architecture_names_exists():
    """docs/architecture.md's claims of where things live: each dotted name resolves."""
    import importlib
    import re

    text = (ROOT / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`((?:simcore|planner|twin|frontend|config)(?:\.[A-Za-z_]\w*)+)`", text))
    missing = []
    for dotted in sorted(named):
        module, _, attribute = dotted, "", ""
        while module and module not in _modules():
            module, _, tail = module.rpartition(".")
            attribute = f"{tail}.{attribute}".strip(".")
        target = importlib.import_module(module) if module else None
        for part in attribute.split(".") if attribute else ():
            target = getattr(target, part, None)
        if target is None:
            missing.append(dotted)
    assert len(named) > 10 and missing == []


def test_the_engine_rooms_import_downward_only():
    """simcore's formulas (pure functions of arrays) import no stage or tool, and the stages (the
    pipeline) no tool: what a formula computes never depends on who calls it."""
    above = {"simcore.formulas": ("simcore.stages", "simcore.tools"), "simcore.stages": ("simcore.tools",)}
    offenders = {module: sorted(t for t in targets if t.startswith(above[room]))
                 for module, targets in _graph().items() for room in above if module.startswith(room + ".")}
    assert {module: targets for module, targets in offenders.items() if targets} == {}
    assert {name.rpartition(".")[0] for name in _modules() if name.count(".") == 2 and name.startswith("simcore.")} \
        == {"simcore.formulas", "simcore.stages", "simcore.tools"}


def test_the_apps_never_import_config():
    """config/ holds settings and wiring; the apps it wires import none of it (settings come
    through django.conf)."""
    offenders = {module: sorted(t for t in targets if t == "config" or t.startswith("config."))
                 for module, targets in _graph().items() if not module.startswith("config")}
    assert {module: targets for module, targets in offenders.items() if targets} == {}
