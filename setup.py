"""
Installs ``sb3_a3c_zoo.pth`` next to the package, for both ``pip install .`` and ``pip install -e .``.

The ``.pth`` file makes Python import ``sb3_a3c.zoo.startup`` at start-up, which registers A3C and
SyncA2C with the RL Zoo when (and only when) rl_zoo3 is imported. setup.cfg cannot install a file
into site-packages itself: data_files land under sys.prefix, and PEP 660 editable builds discard
``build_lib``, so the file is written where each kind of build collects the wheel's contents.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH_NAME = "sb3_a3c_zoo.pth"  # sorts after setuptools' "__editable__.*.pth", which must run first
PTH_CONTENT = "import sb3_a3c.zoo.startup\n"


class BuildPyWithZooHook(build_py):
    """``build_py`` that also writes the start-up ``.pth`` file at the root of the wheel."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            # Editable wheel: what setuptools' `install` writes to install_lib goes into the wheel as is
            wheel_root = Path(self.get_finalized_command("install").install_lib)
        else:
            wheel_root = Path(self.build_lib)
        wheel_root.mkdir(parents=True, exist_ok=True)
        (wheel_root / PTH_NAME).write_text(PTH_CONTENT)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / PTH_NAME)]


setup(cmdclass={"build_py": BuildPyWithZooHook})
