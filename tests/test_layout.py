"""The package's structure: ``common`` is what both algorithms share and imports neither algorithm's package."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module, must_not_import",
    [("sb3_a3c.common", "sb3_a3c.a3c"), ("sb3_a3c.sync_a2c", "sb3_a3c.a3c"), ("sb3_a3c.a3c", "sb3_a3c.sync_a2c")],
)
def test_a_package_imports_no_module_of_another_algorithm(module, must_not_import):
    code = (
        "import importlib, pkgutil, sys;"
        f"package = importlib.import_module({module!r});"
        "[importlib.import_module(info.name) for info in pkgutil.walk_packages(package.__path__, package.__name__ + '.')];"
        f"print(sorted(m for m in sys.modules if m == {must_not_import!r} or m.startswith({must_not_import + '.'!r})))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
