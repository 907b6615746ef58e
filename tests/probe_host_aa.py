"""A probe, not a test of the suite: three A/As of a 60 us pure-Python wrapper over 6 host-worker
pairs a side (smoke, the interpreter), each host verdict printed (docs/measuring.md, round 19):
`python -m pytest -q -s -n 0 tests/probe_host_aa.py`."""

import sys
from pathlib import Path

from tests.test_installed import ONE, _env, _git, _self_importing, _sh

PURE = """

def _host_a(params, x):
    def call():  # about 60 us of Python per call, nothing else
        d = {}
        for i in range(400):
            d[str(i)] = i
        return x * 2

    return call


VARIANTS = VARIANTS + (Variant("host_a", _host_a),)
"""


def test_demo(site: Path, tmp_path: Path) -> None:
    from tilegate.judge.abcompare import compare_ab
    from tilegate.store.files import load_results

    repo = _self_importing(site, tmp_path, "hostbench", src=False)
    protocol = next((repo / "perf_tests").glob("test_*.py"))
    protocol.write_text(
        protocol.read_text().replace("interpreter=True,", "interpreter=True, host_procs=6,", 1)
    )
    kernels = repo / "hostbench" / "kernels.py"
    kernels.write_text(kernels.read_text() + PURE)
    _git(repo, "commit", "-qam", "pure-Python host variant, 6 workers")
    (repo / "NOTES.md").write_text("a docs change\n")
    _git(repo, "add", "NOTES.md")
    _git(repo, "commit", "-qm", "docs")
    for run in range(3):
        out = repo / ".perf" / f"ab{run}"
        done = _sh(
            [
                sys.executable,
                "-m",
                "tilegate",
                "perf",
                "--ab",
                "HEAD~1",
                *ONE,
                "--out-dir",
                str(out),
            ],
            repo,
            _env(site),
        )
        cases = {c.variant: c for c in compare_ab(load_results(out / "results.json"), None).cases}
        c = cases["host_a"]
        line = f"run {run} exit {done.returncode}: {c.verdict.value} {c.note[c.note.find('host time over') :]}"
        print(line)
