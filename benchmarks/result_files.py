"""Writing a benchmark's result file under benchmarks/results/."""

import json
import statistics
from pathlib import Path
from typing import Any


def median_of_rounds(rates: dict[str, list[float]]) -> dict[str, float]:
    """The median of each variant's rounds."""
    return {variant: statistics.median(values) for variant, values in rates.items()}


def write_result(output: Path, result: dict[str, Any]) -> None:
    """Write ``result`` as indented JSON to ``output`` (creating its folder) and say so."""
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {output}")
