"""One line per perf run for the proof runs' summary: what the gate said, and the numbers behind it.

    python3 tools/proof_summary.py .perf            # after `nox -s perf` (stored or A/B mode)

Reads .perf/results.json (and the confirmation runs beside it) and the baselines the gate used,
and prints: the exit headline, the stored-baseline verdict counts, and for an A/B run every case
whose code changed (verdict, ratio, interval, tolerance) and the largest |ratio - 1| of the cases
whose code is the base's (the A/B noise). Figures for docs/results-h200.md come from these lines.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tilegate.judge.abcompare import compare_ab
from tilegate.judge.baseline import baseline_path
from tilegate.judge.verdict import compare
from tilegate.store.files import load_baseline, load_noise, load_results, noise_path


def main(perf: Path, baselines: Path = Path("baselines")) -> int:
    results = perf / "results.json"
    if not results.exists():
        print("no results.json")
        return 0
    run = load_results(results)
    confirms = [load_results(p) for p in sorted(perf.glob("confirm-*.json"))]
    head = (perf / "report.md").read_text().splitlines()[0] if (perf / "report.md").exists() else ""
    print(f"  {head}  (confirmations: {len(confirms)})")
    b = baseline_path(run.env.gpu.slug, baselines)
    if b.is_file():
        cmp = compare(run, load_baseline(b), confirms, allow_missing=True)
        counts = Counter(r.verdict.value for r in cmp.rows)
        print(
            "  stored:",
            dict(counts),
            "broken:",
            [f"{c.expectation.faster}@K{c.K}" for c in cmp.broken],
        )
        for r in cmp.rows:
            if r.verdict.value in ("REGRESSED", "SHIFTED", "UNSURE"):
                rel = f" rel {r.rel_delta:+.2%}" if r.rel_delta is not None else ""
                print(f"    {r.verdict.value:9} {r.key} {r.delta:+.2%}{rel}")
    if run.env.ab is not None:
        n = noise_path(run.env.gpu.slug, baselines)
        ab = compare_ab(run, load_noise(n) if n.is_file() else None, confirms)
        print(
            "  A/B:", dict(Counter(c.verdict.value for c in ab.cases)), "changed:", ab.changed_code
        )
        for c in ab.cases:
            if c.code_changed is not False and c.ratio is not None and c.ci and c.tolerance:
                print(
                    f"    {c.verdict.value:9} {c.key} {c.ratio - 1:+.2%} "
                    f"[{c.ci[0] - 1:+.2%}, {c.ci[1] - 1:+.2%}] tol {c.tolerance:.2%} runs "
                    + " ".join(f"{r - 1:+.2%}" for r in c.run_ratios)
                )
        same = [c for c in ab.cases if c.code_changed is False and c.ratio is not None]
        if same:
            worst = max(same, key=lambda c: abs(c.ratio - 1))  # type: ignore[operator]
            print(
                f"    unchanged code: {len(same)} cases, largest |ratio-1| {abs(worst.ratio - 1):.2%} ({worst.key})"
            )  # type: ignore[operator]
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1] if len(sys.argv) > 1 else ".perf")))
