"""Replay the A/B budget of a pull request on measured A/A rounds: how many rounds and GPU seconds
would its changed cases take, under one noise file or another?

    python3 tools/budget_replay.py AA_FULL.json --effects EFFECTS.json --noise NOISE.json [--seed S]

AA_FULL.json is an A/A run with both sides of every case timed every round (`tilegate perf --ab
HEAD --perf-ab-full`): the real per-round noise of every head/base pair and of the reference.
EFFECTS.json maps a case id to the head/base ratio a pull request gave it (a case not in it is
UNCHANGED CODE): its head's samples are multiplied by that ratio, round by round. Each group is
then fed, sweep by sweep, through the suite's own planner (tilegate.harness.budget.GroupBudget,
with the noise file's tolerances as the suite gets them): the profile's sweeps take the A/A run's
own rounds, in order; an extension sweep takes the rounds of one of them, drawn at random (the
same rounds for every slot, so pairs stay paired).

It prints per group and in all: changed cases, how many were decided early, extended, left at
the cap, the rounds timed, and the GPU seconds those rounds' samples add up to (kernel time only:
no L2 flush, no host gaps, no compile, correctness or soak). It is an estimate of the timing
phase of one run, from measured noise; docs/results-h200.md says what it was checked against.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tilegate.cases import BASE_SUFFIX
from tilegate.harness.budget import GroupBudget, summarize, summary_line, tolerances_from_noise
from tilegate.store.files import load_noise, load_results


def replay(run_path: Path, effects: dict[str, float], noise_path: Path | None, seed: int) -> int:
    run = load_results(run_path)
    if not run.base_rows:
        raise SystemExit(f"{run_path} is not an A/B run: give an A/A run timed with --perf-ab-full")
    tol = tolerances_from_noise(load_noise(noise_path) if noise_path else None)
    # the profile's sweeps, as the run's own budget record says (every row has it)
    first = json.loads(run_path.read_text())["benchmarks"][0]["extra_info"]["tilegate"]
    sweeps = int(first["budget"]["profile_sweeps"])
    rng = random.Random(seed)
    groups: dict[str, dict[str, list[float]]] = defaultdict(dict)
    keys: dict[str, dict[str, str]] = defaultdict(dict)
    for key, row in run.rows.items():
        groups[row.group][row.variant] = [s * effects.get(key, 1.0) for s in row.samples_s]
        keys[row.group][row.variant] = key
    for row in run.base_rows.values():
        groups[row.group][row.variant + BASE_SUFFIX] = list(row.samples_s)
    unknown = set(effects) - set(run.rows)
    if unknown:
        raise SystemExit(f"--effects names cases the run does not have: {sorted(unknown)}")
    infos, seconds, lines = [], 0.0, []
    for group, slots in groups.items():
        n = len(next(iter(slots.values())))
        per_pass = n // sweeps
        heads = [v for v in slots if not v.endswith(BASE_SUFFIX)]
        pairs = {v: v + BASE_SUFFIX for v in heads if v + BASE_SUFFIX in slots}
        unchanged = {v for v in pairs if keys[group][v] not in effects}
        budget = GroupBudget(
            list(slots),
            pairs=pairs,
            unchanged=unchanged,
            keys=keys[group],
            reference=run.reference if run.reference in slots else None,
            passes=sweeps,
            tolerances=tol,
        )
        spent = 0.0
        sweep = 0
        while True:
            active = budget.active()
            if not active:
                break
            src = sweep if sweep < sweeps else rng.randrange(sweeps)
            lo, hi = src * per_pass, (src + 1) * per_pass
            timed = {name: slots[name][lo:hi] for name in active}
            spent += sum(sum(v) for v in timed.values())
            budget.record(timed, per_pass)
            sweep += 1
        got = [budget.info(name) for name in slots]
        infos += got
        seconds += spent
        changed = [i for i in got if i["role"] == "changed-base"]
        lines.append(
            f"{group:16s} {len(changed):2d} changed, {spent:6.1f} s of kernels, "
            f"{sweep} sweeps, capped {sum(i['stopped'] == 'cap' for i in changed)}"
        )
    print("\n".join(lines))
    print(summary_line(summarize(infos)))
    print(f"kernel seconds timed in all groups: {seconds:.1f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="an A/A run timed with --perf-ab-full")
    ap.add_argument("--effects", type=Path, required=True, help="JSON: case id -> head/base ratio")
    ap.add_argument("--noise", type=Path, help="A/B noise file (default: none, uncalibrated)")
    ap.add_argument("--seed", type=int, default=0, help="the extension sweeps' draw")
    args = ap.parse_args(argv)
    effects = json.loads(args.effects.read_text())
    return replay(args.run, {str(k): float(v) for k, v in effects.items()}, args.noise, args.seed)


if __name__ == "__main__":
    raise SystemExit(main())
