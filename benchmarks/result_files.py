"""
What the benchmark scripts share: a result file under ``benchmarks/results/`` and rounds that alternate variants.

    from result_files import alternating_rounds, median_of_rounds, rounds_parser, write_result
"""

import argparse
import json
import statistics
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

Variant = TypeVar("Variant")


def alternating_rounds(variants: Sequence[Variant], rounds: int) -> Iterator[tuple[int, Variant]]:
    """(round, variant) for ``rounds`` rounds of ``variants``, every other round reversed so no variant always runs first."""
    for round_index in range(rounds):
        for variant in variants if round_index % 2 == 0 else reversed(variants):
            yield round_index, variant


def median_of_rounds(rates: dict[str, list[float]]) -> dict[str, float]:
    """The median of each variant's rounds."""
    return {variant: statistics.median(values) for variant, values in rates.items()}


def write_result(output: Path, result: dict[str, Any]) -> None:
    """Write ``result`` as indented JSON to ``output`` (creating its folder) and say so."""
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {output}")


def rounds_parser(description: str, result_name: str, rounds: int = 3) -> argparse.ArgumentParser:
    """A benchmark's command line: ``--rounds`` and ``--output`` (default ``results/<result_name>.json``)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / f"{result_name}.json")
    return parser
