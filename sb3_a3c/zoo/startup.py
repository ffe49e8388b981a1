"""
Imported at interpreter start-up by ``sb3_a3c_zoo.pth``: install an import hook for rl_zoo3.

Only the standard library is imported here: Python processes that never import rl_zoo3 pay for
one small module and one entry in ``sys.meta_path``. When a module listed in
``PATCHED_MODULES`` is imported, the hook runs its patch right after the module's own code.
When such a module is run with ``python -m`` (``rl_zoo3.push_to_hub``, ``rl_zoo3.load_from_hub``),
it is imported (and patched) first, then only its ``if __name__ == "__main__":`` block runs.
"""

import sys

TYPE_CHECKING = False  # importing typing at every start-up would cost milliseconds
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

# The modules sb3_a3c.zoo.registration completes, and the name of its function that does it
PATCHED_MODULES = {
    "rl_zoo3.utils": "register_algorithms",
    "rl_zoo3.exp_manager": "use_our_hyperparameter_files",
    "rl_zoo3.hyperparams_opt": "register_samplers",
    "huggingface_sb3.push_to_hub": "fix_huggingface_sb3_push_to_hub",
    "rl_zoo3.push_to_hub": "fix_rl_zoo3_push_to_hub",
    "rl_zoo3.load_from_hub": "fix_rl_zoo3_load_from_hub",
}

_RUN_AS_MAIN = """
from sb3_a3c.zoo.startup import run_main_block
run_main_block({module_name!r}, globals())
"""


def run_main_block(module_name: str, main_globals: dict) -> None:
    """
    ``python -m module_name`` for a patched module: import it (which applies the patch), then run
    its ``if __name__ == "__main__":`` block with the patched module's names.
    """
    import ast
    import importlib

    module = importlib.import_module(module_name)
    source = module.__spec__.loader.get_source(module_name)
    main_blocks = [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and "__name__" in ast.unparse(node.test)
    ]
    main_globals.update({name: value for name, value in vars(module).items() if not name.startswith("__")})
    exec(compile(ast.Module(body=main_blocks, type_ignores=[]), module.__file__, "exec"), main_globals)


class _PatchingLoader:
    """Run the real loader, then sb3-a3c's patch for the module."""

    def __init__(self, loader: "Any") -> None:
        self._loader = loader

    def create_module(self, spec: "Any") -> "ModuleType | None":
        return self._loader.create_module(spec)

    def exec_module(self, module: "ModuleType") -> None:
        self._loader.exec_module(module)
        from sb3_a3c.zoo.registration import apply_patch

        apply_patch(PATCHED_MODULES[module.__name__], module)

    def get_code(self, fullname: str) -> "Any":
        # Only runpy (``python -m``) asks a loader for code; imports go through exec_module.
        return compile(_RUN_AS_MAIN.format(module_name=fullname), f"<sb3-a3c: python -m {fullname}>", "exec")

    def __getattr__(self, name: str) -> "Any":
        # get_code, get_source, is_package, ... (used by runpy and tracebacks)
        return getattr(self._loader, name)


class RlZooImportHook:
    """A ``sys.meta_path`` finder that hands the rl_zoo3 modules to patch to ``_PatchingLoader``."""

    def find_spec(self, fullname: str, path: "Any", target: "Any" = None) -> "Any":
        if fullname not in PATCHED_MODULES:
            return None
        # Find the real module with the other finders
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader)
                return spec
        return None


def install() -> None:
    """Install the hook once (idempotent)."""
    if not any(isinstance(finder, RlZooImportHook) for finder in sys.meta_path):
        sys.meta_path.insert(0, RlZooImportHook())


install()
