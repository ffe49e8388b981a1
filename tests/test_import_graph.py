"""Imports inside ``sb3_a3c`` run one way: no module imports, directly or through others, a module that imports it."""

import ast
import itertools
from pathlib import Path

import pytest

import sb3_a3c

PACKAGE_ROOT = Path(sb3_a3c.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE_ROOT.rglob("*.py")}


def imported_modules(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``path`` imports anywhere (at the top or inside a function), by name."""
    imported = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            imported.add(node.module)
            # `from package import module` imports the module
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in imported if name in modules}


def import_graph() -> dict[str, set[str]]:
    modules = package_modules()
    return {name: imported_modules(path, modules) - {name} for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of imports, as the list of its modules, or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module], _ = "visiting", path.append(module)
        for imported in sorted(graph[module]):
            if state.get(imported) == "visiting":
                return [*path[path.index(imported) :], imported]
            if imported not in state and (cycle := visit(imported)) is not None:
                return cycle
        state[module], _ = "done", path.pop()
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)) is not None:
            return cycle
    return None


def test_the_import_graph_finds_a_cycle_when_there_is_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_module_of_the_package_imports_itself_through_others():
    graph = import_graph()
    assert "sb3_a3c.a3c.runner.ray_machines" in graph["sb3_a3c.a3c.a3c"]  # lazy imports count too
    assert find_cycle(graph) is None


def test_a3c_modules_import_one_way_from_the_algorithm_to_the_update():
    graph = import_graph()
    chain = [
        "sb3_a3c.a3c.a3c",
        "sb3_a3c.a3c.runner.backends",
        "sb3_a3c.a3c.worker.actor_learner",
        "sb3_a3c.a3c.worker.updates",
        "sb3_a3c.common.update",
    ]
    for importer, imported in itertools.pairwise(chain):
        assert imported in graph[importer]
    assert "sb3_a3c.a3c.a3c" not in graph["sb3_a3c.a3c.runner.ray_machines"]


def a3c_modules(side: str) -> set[str]:
    return {name for name in import_graph() if name.startswith(f"sb3_a3c.a3c.{side}.")}


def test_a3c_worker_modules_import_no_runner_module():
    graph = import_graph()
    for module in a3c_modules("worker"):
        assert not {imported for imported in graph[module] if imported.startswith("sb3_a3c.a3c.runner")}, module


def test_a3c_runner_imports_only_the_workers_entry_point():
    graph = import_graph()
    imported_from_worker = {
        imported
        for module in a3c_modules("runner")
        for imported in graph[module]
        if imported.startswith("sb3_a3c.a3c.worker.")
    }
    assert imported_from_worker == {"sb3_a3c.a3c.worker.actor_learner"}


@pytest.mark.parametrize("module", ["config", "job", "messages", "worker_envs"])
def test_what_crosses_between_runner_and_workers_imports_neither_side(module):
    imported = import_graph()[f"sb3_a3c.a3c.{module}"]
    assert not {name for name in imported if name.startswith(("sb3_a3c.a3c.worker.", "sb3_a3c.a3c.runner."))}
