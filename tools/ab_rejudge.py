"""Judge A/A runs as if their code had changed: how often would the statistics alone cry wolf,
and how often would they catch a slowdown of a given size?

    python3 tools/ab_rejudge.py [--noise baselines/nvidia-h200.ab.json] RESULTS.json...
    python3 tools/ab_rejudge.py --leave-one-out RESULTS.json...            # false alarms
    python3 tools/ab_rejudge.py --leave-one-out --slowdown 0.01 RESULTS.json...   # power at 1 %
    python3 tools/ab_rejudge.py --noise NOISE --same-code-only AB_RUN.json...      # false alarms

An A/A run (`nox -s perf -- --ab HEAD` with nothing changed) has the same compiled code on both
sides, so the gate calls every case UNCHANGED CODE without looking at the ratio. This tool drops
the code hashes of the head side and judges every case on its ratio (tilegate.judge.abcompare.compare_ab,
the gate's own rule), against the tolerances of the noise file, or the uncalibrated ceiling
without one. With `--leave-one-out` each run is judged against a noise file built from the other
runs (tilegate.judge.abnoise.build_noise), never from itself: an out-of-sample false-alarm count.
Runs with both sides timed every round (`--perf-ab-full`, `tilegate ab-noise --measure`) are
what it needs; a budgeted A/A run has almost no base rounds.

`--same-code-only` judges only the cases whose compiled code is the base's, in any A/B run: in
a real pull request's run (budgeted) those are the sentinels, the base timed beside the head for
30-155 rounds to check the identity; judged on their ratio alone they are A/A measurements taken
in the very runs that caught a change, free of extra GPU time. Fewer rounds than a full A/A
run: wider intervals, so more AMBIGUOUS, and a SLOWER or FASTER among them is a false alarm.

`--slowdown S` multiplies every head sample by 1 + S before judging: a uniform slowdown of that
size injected into real per-round noise. Each case is judged on its own pair, so injecting into
all at once is the same as injecting into each alone; the table then says, per case, in how many
runs the gate would have called it SLOWER. This is the decision rule's power on measured noise,
not a measured code change (docs/results-h200.md says which is which).

It prints the verdict counts of every run (UNSTABLE among them: tilegate.judge.modes), how many
SLOWER cases would be beyond doubt and spared the confirmation (tilegate.judge.confirm; an A/A
run must have none), the largest |ratio - 1| / tolerance, and with
`--slowdown` the cases that were not caught every time. Figures for docs/results-h200.md come
from it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tilegate.judge.abcompare import compare_ab
from tilegate.judge.abnoise import Noise, build_noise
from tilegate.judge.confirm import beyond_doubt
from tilegate.judge.results import Run
from tilegate.store.files import load_noise, load_results


def blind(run: Run, slowdown: float = 0.0) -> Run:
    """`run` with no head code hashes (every case judged on its ratio), head samples x (1 + S)."""
    rows = {
        k: replace(
            r,
            code_hash=None,
            samples_s=tuple(s * (1 + slowdown) for s in r.samples_s),
            median_s=r.median_s * (1 + slowdown),
        )
        for k, r in run.rows.items()
    }
    return replace(run, rows=rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--noise", type=Path, help="A/B noise file (default: uncalibrated ceiling)")
    ap.add_argument(
        "--leave-one-out",
        action="store_true",
        help="judge each run against a noise file of the other runs (needs 4 runs or more)",
    )
    ap.add_argument(
        "--slowdown", type=float, default=0.0, help="inject this slowdown (0.01 = 1 %%) first"
    )
    ap.add_argument(
        "--same-code-only",
        action="store_true",
        help="judge only the cases whose compiled code is the base's (a real A/B run's sentinels)",
    )
    args = ap.parse_args(argv)
    if args.leave_one_out and args.noise:
        ap.error("--leave-one-out builds its own noise files: give no --noise")
    if not -0.5 < args.slowdown < 1:
        ap.error(f"--slowdown {args.slowdown} is not a fraction such as 0.01")
    runs = [load_results(p) for p in args.results]
    fixed = load_noise(args.noise) if args.noise else None
    counts: Counter[str] = Counter()
    per_case: dict[str, Counter[str]] = defaultdict(Counter)
    worst: tuple[float, str, str] = (0.0, "", "")
    with tempfile.TemporaryDirectory() as tmp:
        for i, run in enumerate(runs):
            noise: Noise | None = fixed
            if args.leave_one_out:
                others = runs[:i] + runs[i + 1 :]
                noise = build_noise(others, Path(tmp) / f"noise-{i}.json")
            ab = compare_ab(blind(run, args.slowdown), noise)
            cases = ab.cases
            if args.same_code_only:
                same = compare_ab(run, noise).same_code
                cases = tuple(c for c in cases if c.key in same)
            run_counts = Counter(c.verdict.value for c in cases)
            # the hashes are blinded (identity unknown): beyond doubt as if the code had changed
            spared = sum(beyond_doubt(replace(c, code_changed=True)) for c in cases)
            if spared:
                run_counts["SLOWER beyond doubt"] = spared
            counts.update(run_counts)
            for c in cases:
                per_case[c.key][c.verdict.value] += 1
                if c.ratio is not None and c.tolerance:
                    score = abs(c.ratio / (1 + args.slowdown) - 1) / c.tolerance
                    if score > worst[0]:
                        worst = (score, c.key, run.path.name)
            print(f"{run.path}: {dict(sorted(run_counts.items()))}")
    print(f"all {len(runs)} runs: {dict(sorted(counts.items()))}")
    print(f"largest |A/A ratio - 1| / tolerance: {worst[0]:.2f} ({worst[1]}, {worst[2]})")
    if args.slowdown:
        # the cases judged in every run, one line each; the others (a profile only some runs
        # measured) in one line
        every = {k: v for k, v in per_case.items() if sum(v.values()) == len(runs)}
        rest = Counter[str]()
        for k, v in per_case.items():
            if k not in every:
                rest.update(v)
        caught = sum(v["SLOWER"] for v in every.values())
        print(
            f"+{args.slowdown:.1%} injected, the {len(every)} cases of every run: SLOWER in "
            f"{caught} of {len(every) * len(runs)} case-runs"
        )
        for key, v in sorted(every.items()):
            print(f"  {key}: SLOWER in {v['SLOWER']} of {len(runs)}  {dict(sorted(v.items()))}")
        if rest:
            print(f"  the cases of some runs only: {dict(sorted(rest.items()))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
