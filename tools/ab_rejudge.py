"""Judge A/A runs as if their code had changed: how often would the statistics alone cry wolf?

    python3 tools/ab_rejudge.py [--noise baselines/nvidia-h200.ab.json] RESULTS.json...

An A/A run (`nox -s perf -- --ab HEAD` with nothing changed) has the same compiled code on both
sides, so the gate calls every case UNCHANGED CODE without looking at the ratio. This tool drops
the code hashes of the head side and judges every case on its ratio, against the tolerances of
the noise file (or the uncalibrated ceiling without one). It prints the verdict counts over all
runs and the largest |ratio - 1| / tolerance: a SLOWER or FASTER here is a false alarm the
statistics would have raised. Figures for docs/results-h200.md come from it.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tilegate.judge.ab import compare_ab, load_noise
from tilegate.judge.results import load_results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--noise", type=Path, help="A/B noise file (default: uncalibrated ceiling)")
    args = ap.parse_args(argv)
    noise = load_noise(args.noise) if args.noise else None
    counts: Counter[str] = Counter()
    worst: tuple[float, str, str] = (0.0, "", "")
    for path in args.results:
        run = load_results(path)
        blind = replace(run, rows={k: replace(r, code_hash=None) for k, r in run.rows.items()})
        ab = compare_ab(blind, noise)
        run_counts = Counter(c.verdict.value for c in ab.cases)
        counts.update(run_counts)
        for c in ab.cases:
            if c.ratio is not None and c.tolerance:
                score = abs(c.ratio - 1) / c.tolerance
                if score > worst[0]:
                    worst = (score, c.key, path.name)
        print(f"{path}: {dict(sorted(run_counts.items()))}")
    print(f"all {len(args.results)} runs: {dict(sorted(counts.items()))}")
    print(f"largest |ratio - 1| / tolerance: {worst[0]:.2f} ({worst[1]}, {worst[2]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
