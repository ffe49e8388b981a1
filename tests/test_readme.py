"""
Every code block of the README runs as written, with small budgets, so that a README that stops working fails.

Substitutions (budgets only): in Python blocks ``.learn(N`` becomes ``.learn(512``; in shell blocks
``python`` is this interpreter, ``rl_zoo3.train`` runs 1000 steps (``-n 1000``) and ``-optimize`` 2 trials.
A block preceded by ``<!-- readme-test: skip (reason) -->`` is not run (installs, the test suite itself,
the real Hub); the reason is in the README next to it.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
SKIP_MARK = "<!-- readme-test: skip"


def code_blocks(language: str) -> list[tuple[int, str]]:
    """(line number, code) of each ```language block of the README not marked to skip."""
    lines = README.read_text().splitlines()
    blocks, index = [], 0
    while index < len(lines):
        if lines[index].strip() == f"```{language}":
            start = index + 1
            end = next(i for i in range(start, len(lines)) if lines[i].strip() == "```")
            previous = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
            if not previous.startswith(SKIP_MARK):
                blocks.append((start, "\n".join(lines[start:end])))
            index = end
        index += 1
    return blocks


def small_budget_python(code: str) -> str:
    return re.sub(r"\.learn\(\s*[\d_]+", ".learn(512", code)


def small_budget_shell(line: str) -> list[str]:
    words = shlex.split(line)
    if words[0] == "python":
        words[0] = sys.executable
    if "rl_zoo3.train" in words:
        if "-n" in words:
            words[words.index("-n") + 1] = "1000"
        else:
            words += ["-n", "1000"]
    if "--n-trials" in words:
        words[words.index("--n-trials") + 1] = "2"
    return words


def run(args: list[str], cwd: Path) -> None:
    environment = {**os.environ, "MPLBACKEND": "Agg", "SDL_VIDEODRIVER": "dummy"}
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, env=environment)
    assert result.returncode == 0, f"{shlex.join(args)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"


def block_id(value: object) -> str:
    return f"line{value}" if isinstance(value, int) else ""


def test_readme_has_runnable_blocks():
    assert len(code_blocks("python")) >= 2
    assert len(code_blocks("bash")) >= 1


@pytest.mark.parametrize(
    "line, code", code_blocks("python"), ids=lambda value: f"line{value}" if isinstance(value, int) else ""
)
def test_readme_python_block_runs(tmp_path, line, code):
    run([sys.executable, "-c", small_budget_python(code)], cwd=tmp_path)


@pytest.mark.parametrize("line, code", code_blocks("bash"), ids=block_id)
def test_readme_shell_block_runs(tmp_path, line, code):
    for command in code.splitlines():
        if command.strip() and not command.lstrip().startswith("#"):
            run(small_budget_shell(command), cwd=tmp_path)
