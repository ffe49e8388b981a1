"""
Run every RL Zoo command a user runs with ``--algo a3c`` (small budgets, CartPole-v1) in a fresh folder,
and print the last line each one printed. The Hub commands go to the local Hub-compatible server of
the tests (``tests/helpers/fake_hub_server.py``), so nothing leaves the machine.

    python benchmarks/zoo_commands.py

Writes the commands and their last lines to JSON.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "helpers"))
from fake_hub_server import FakeHub

COMMANDS = [
    "python -m rl_zoo3.train --algo a3c --env CartPole-v1 --eval-freq 5000 -n 30000",
    "python -m rl_zoo3.train --algo sync_a2c --env CartPole-v1 --eval-freq 5000 -n 30000",
    "rl_zoo3 train --algo a3c --env CartPole-v1 -n 50000",
    "python -m rl_zoo3.enjoy --algo a3c --env CartPole-v1 -f logs/ --no-render -n 500",
    "python -m rl_zoo3.record_video --algo a3c --env CartPole-v1 -f logs/ -n 200",
    "python -m rl_zoo3.push_to_hub --algo a3c --env CartPole-v1 -f logs/ --repo-name a3c-CartPole-v1 -orga ORG -m msg",
    "python -m rl_zoo3.load_from_hub --algo a3c --env CartPole-v1 -orga ORG -f downloaded/",
    "python -m rl_zoo3.enjoy --algo a3c --env CartPole-v1 -f downloaded/ --no-render -n 500",
    "python -m rl_zoo3.plots.plot_train --algo a3c --env CartPole-v1 -f logs/",
    # Last: -optimize creates a run folder without a model, and push_to_hub/enjoy pick the latest one
    "python -m rl_zoo3.train --algo a3c --env CartPole-v1 -optimize --n-trials 4 -n 20000",
]


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "zoo_commands.json")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="zoo_commands_"))
    results = []
    with FakeHub() as hub:
        env = {**os.environ, **hub.client_environment(str(folder / "hf_home")), "MPLBACKEND": "Agg"}  # plot_train: plt.show()
        for command in COMMANDS:
            argv = shlex.split(command)
            if argv[0] == "python":
                argv[0] = sys.executable
            start = time.perf_counter()
            done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=900)
            output = done.stdout + ("\n" + done.stderr if done.returncode else "")
            results.append(
                {
                    "command": command,
                    "returncode": done.returncode,
                    "seconds": round(time.perf_counter() - start, 1),
                    "last_line": last_line(output),
                }
            )
            print(json.dumps(results[-1]), flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.output} (run folder {folder})")
    sys.exit(max(result["returncode"] for result in results))


if __name__ == "__main__":
    main()
