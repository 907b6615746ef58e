#!/usr/bin/env python3
"""The Liger-Kernel commits a GPU machine needs, as one small git bundle (no history).

    python examples/liger-repo/tools/make-bundle.py LIGER_GIT_DIR OUT.bundle [--pr N=COMMIT ...]

LIGER_GIT_DIR is a clone of github.com/linkedin/Liger-Kernel (its .git directory, or a bare
one). For each replayed pull request N (PRS below, or each --pr N=COMMIT: its merge commit,
a squash merge of one parent), two commits of fresh history:

    pr-N-base   the tree of the PR's parent commit + graft.py's files (one commit, no parent):
                the repository as it would be once a maintainer's first tilegate PR is merged
    pr-N-head   pr-N-base + the PR's own diff (`git diff PARENT PR`, applied), the PR's title

and `aa`, the first PR's head tree again as its child (pr-945-head's: `--base pr-945-head` on a
checkout of `aa` is an A/A, the same code on both sides). HEAD is `aa`.

With `--range N` (a bisect's range, `tilegate bisect range-good range-bad`), also a chain of N + 1
commits: `range-good`, the tree of the commit N first-parent steps before the first PR's parent
(or `--range-end`), then each of the N real commits after it up to that parent, each tree + the
graft, each the child of the one before. From the `--seed-at K`-th of them on (default N * 5 / 8,
at least 1), SEED slows rms_norm's forward (one more kernel over 1/128 of its rows, as a pull
request that adds a small op would): `range-seeded` is that commit, the culprit a bisect must
name, and `range-bad` the last. Files whose blobs the
clone lacks (a partial clone's large test data) are left out and listed. The bundle is a few MB
(the limit a device call carries is 64 MiB; this refuses over 20 MiB). Standard library and the
git command line only.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]  # examples/liger-repo
# PR number -> its merge commit on Liger-Kernel's main (squash merges: one parent)
PRS = {945: "540575bc", 1266: "8832b2e7"}
LIMIT = 20 * 1024 * 1024
# the bisect range's seeded slowdown: (file, the line it goes before, the line)
SEED = (
    "src/liger_kernel/ops/rms_norm.py",
    "    return Y.view(*shape), X, RSTD, BLOCK_SIZE, num_warps, casting_mode\n",
    "    Y[: n_rows // 128].mul_(1.0)  # seeded: one more kernel, over 1/128 of the rows\n",
)
# fresh history, the same bytes from one build to the next
IDENTITY = {
    "GIT_AUTHOR_NAME": "tilegate liger-repo",
    "GIT_AUTHOR_EMAIL": "liger-repo@tilegate.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_NAME": "tilegate liger-repo",
    "GIT_COMMITTER_EMAIL": "liger-repo@tilegate.invalid",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}


class Refused(Exception):
    pass


def git(
    *args: str,
    git_dir: Path,
    env: dict[str, str] | None = None,
    data: bytes | None = None,
    cwd: Path | None = None,
) -> bytes:
    full = {**os.environ, **(env or {}), "GIT_DIR": str(git_dir)}
    done = subprocess.run(
        ["git", *args], input=data, capture_output=True, env=full, cwd=cwd, check=False
    )
    if done.returncode != 0:
        raise Refused(
            f"git {' '.join(args[:4])} (in {git_dir}) failed: {done.stderr.decode().strip()}"
        )
    return done.stdout


def export_tree(liger: Path, commit: str, dest: Path) -> list[str]:
    """Write COMMIT's files under dest (no .git); the paths left out: blobs the clone lacks."""
    listing = git("ls-tree", "-r", "-z", "--full-tree", commit, git_dir=liger).split(b"\0")
    entries = []
    for line in filter(None, listing):
        meta, path = line.split(b"\t", 1)
        mode, kind, sha = meta.decode().split()
        if kind == "blob":
            entries.append((mode, sha, path.decode()))
    batch = "".join(f"{sha}\n" for _, sha, _ in entries).encode()
    out = git("cat-file", "--batch", git_dir=liger, data=batch)
    missing, pos = [], 0
    for mode, sha, path in entries:
        end = out.index(b"\n", pos)
        header = out[pos:end].decode().split()
        pos = end + 1
        if header[0] != sha:
            raise Refused(f"git cat-file --batch answered {header} for {sha} ({path})")
        if header[-1] == "missing":
            missing.append(path)
            continue
        size = int(header[2])
        body, pos = out[pos : pos + size], pos + size + 1
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            target.symlink_to(body.decode())
        else:
            target.write_bytes(body)
            if mode == "100755":
                target.chmod(0o755)
    return missing


def commit_tree(small: Path, tree_dir: Path, message: str, parent: str | None) -> str:
    """A commit of tree_dir's files in the small repository; its sha."""
    env = {**IDENTITY, "GIT_INDEX_FILE": str(small / f"index-{tree_dir.name}")}
    Path(env["GIT_INDEX_FILE"]).unlink(missing_ok=True)
    git("--work-tree", str(tree_dir), "add", "-A", "-f", ".", git_dir=small, env=env)
    tree = git("write-tree", git_dir=small, env=env).decode().strip()
    args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
    return git(*args, git_dir=small, env=env).decode().strip()


def load_graft():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("liger_repo_graft", HERE / "graft.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def grafted_tree(liger: Path, graft: Any, commit: str, tree_dir: Path) -> Path:
    """COMMIT's files written to tree_dir (a new directory), with the graft; what the clone
    lacks is listed."""
    tree_dir.mkdir()
    missing = export_tree(liger, commit, tree_dir)
    if missing:
        print(f"{tree_dir.name}: left out (blobs absent from the clone): {', '.join(missing)}")
    graft.graft(tree_dir)
    return tree_dir


def commit_range(
    liger: Path, small: Path, work: Path, graft: Any, end: str, n: int, seed_at: int
) -> dict[str, str]:
    """The bisect range's refs: END's N first-parent predecessors' and END's trees, each + the
    graft, chained; SEED in the seed_at-th after range-good and every later one."""
    listed = git("rev-list", "--first-parent", f"--max-count={n + 1}", end, git_dir=liger)
    commits = listed.decode().split()[::-1]
    if len(commits) != n + 1:
        raise Refused(f"--range {n}: {end} has only {len(commits) - 1} first-parent ancestors")
    parent: str | None = None
    refs: dict[str, str] = {}
    for i, sha in enumerate(commits):
        tree_dir = grafted_tree(liger, graft, sha, work / f"range-{i}")
        subject = git("log", "-1", "--format=%s", sha, git_dir=liger).decode().strip()
        body = f"Liger-Kernel {sha} + tilegate graft; fresh history."
        if i >= seed_at:
            path, before, line = SEED
            text = (tree_dir / path).read_text(encoding="utf-8")
            if text.count(before) != 1:
                raise Refused(f"range {i} ({sha[:8]}): {path} lacks the seed's place {before!r}")
            (tree_dir / path).write_text(text.replace(before, line + before), encoding="utf-8")
            body += f" Seeded ({path}): {line.strip()}"
        parent = commit_tree(small, tree_dir, f"{subject}\n\n{body}", parent)
        shutil.rmtree(tree_dir)
        if i == 0:
            refs["range-good"] = parent
        if i == seed_at:
            refs["range-seeded"] = parent
    refs["range-bad"] = parent
    return refs


def build(
    liger: Path,
    out: Path,
    work: Path,
    prs: dict[int, str],
    span: tuple[str | None, int, int] | None = None,
) -> dict[str, str]:
    """The small repository's refs {name: sha}; the bundle written to out. span: the bisect
    range's (end, N, seed_at), end None for the first PR's parent."""
    graft = load_graft()
    small = work / "small.git"
    subprocess.run(["git", "init", "-q", "--bare", str(small)], check=True, capture_output=True)
    refs: dict[str, str] = {}
    for number, pr in prs.items():
        pr_sha = git("rev-parse", "--verify", f"{pr}^{{commit}}", git_dir=liger).decode().strip()
        parent = git("rev-parse", "--verify", f"{pr_sha}^1", git_dir=liger).decode().strip()
        title = git("log", "-1", "--format=%s", pr_sha, git_dir=liger).decode().strip()
        tree_dir = grafted_tree(liger, graft, parent, work / f"pr-{number}")
        refs[f"pr-{number}-base"] = base = commit_tree(
            small,
            tree_dir,
            f"Liger-Kernel {parent[:8]} (#{number}'s parent) + tilegate graft\n\n"
            f"The tree of {parent} with examples/liger-repo/graft.py's files; fresh history.",
            None,
        )
        diff = git("diff", "--binary", "--no-renames", parent, pr_sha, git_dir=liger)
        done = subprocess.run(
            ["git", "apply", "--binary", "--whitespace=nowarn", "-"],
            input=diff,
            cwd=tree_dir,
            capture_output=True,
            check=False,
            # outside any repository: inside one (a temp dir under a checkout), `git apply`
            # takes paths from that repository's top and skips those outside the directory
            env={
                **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
                "GIT_CEILING_DIRECTORIES": str(tree_dir.parent),
            },
        )
        if done.returncode != 0:
            raise Refused(f"#{number}'s diff does not apply: {done.stderr.decode().strip()}")
        refs[f"pr-{number}-head"] = commit_tree(
            small,
            tree_dir,
            f"{title}\n\nReplayed: {pr_sha} (git diff {parent[:8]} {pr_sha[:8]}).",
            base,
        )
    first = next(iter(prs))
    if span:
        end = span[0] or git("rev-parse", f"{prs[first]}^1", git_dir=liger).decode().strip()
        refs.update(commit_range(liger, small, work, graft, end, span[1], span[2]))
    head = refs[f"pr-{first}-head"]
    aa_tree = git("rev-parse", f"{head}^{{tree}}", git_dir=small).decode().strip()
    refs["aa"] = (
        git(
            "commit-tree",
            aa_tree,
            "-p",
            head,
            "-m",
            f"A/A: pr-{first}-head's tree again",
            git_dir=small,
            env=IDENTITY,
        )
        .decode()
        .strip()
    )
    for name, sha in refs.items():
        git("update-ref", f"refs/heads/{name}", sha, git_dir=small)
    git("symbolic-ref", "HEAD", "refs/heads/aa", git_dir=small)
    partial = out.with_name(out.name + ".partial")
    git(
        "bundle",
        "create",
        "-q",
        str(partial),
        "HEAD",
        *(f"refs/heads/{n}" for n in refs),
        git_dir=small,
    )
    size = partial.stat().st_size
    if size > LIMIT:
        partial.unlink()
        raise Refused(f"the bundle is {size / 2**20:.1f} MiB, over {LIMIT / 2**20:.0f} MiB")
    partial.replace(out)
    return refs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="make-bundle.py", description=__doc__.split("\n\n")[0])
    p.add_argument("liger_git_dir", type=Path, help="Liger-Kernel's git directory")
    p.add_argument("out", type=Path, help="the bundle to write (e.g. .bundle/liger.bundle)")
    p.add_argument(
        "--pr",
        action="append",
        metavar="N=COMMIT",
        help=f"a pull request to replay, its number and merge commit (default: {PRS})",
    )
    p.add_argument(
        "--range",
        type=int,
        default=0,
        metavar="N",
        help="also a bisect range of N real commits after range-good, seeded (module docstring)",
    )
    p.add_argument("--range-end", metavar="COMMIT", help="the range's last commit (default: the "
                   "first PR's parent)")  # fmt: skip
    p.add_argument("--seed-at", type=int, metavar="K", help="the range's seeded commit, 1..N "
                   "(default N * 5 / 8, at least 1)")  # fmt: skip
    args = p.parse_args(argv)
    seed_at = args.seed_at if args.seed_at is not None else max(1, args.range * 5 // 8)
    if not args.range and (args.range_end or args.seed_at is not None):
        p.error("--range-end and --seed-at belong to a range: give --range N too")
    if args.range < 0 or (args.range and not 1 <= seed_at <= args.range):
        p.error(f"--range {args.range} --seed-at {seed_at}: need N >= 1 and 1 <= K <= N")
    span = (args.range_end, args.range, seed_at) if args.range else None
    prs = dict(PRS)
    if args.pr:
        try:
            prs = {int(n): c for n, _, c in (x.partition("=") for x in args.pr) if c}
        except ValueError:
            prs = {}
        if len(prs) != len(args.pr):
            p.error(f"--pr takes N=COMMIT (a number and a commit), got {args.pr}")
    out = args.out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="liger-bundle-"))
    try:
        refs = build(args.liger_git_dir.resolve(), out, work, prs, span)
    except Refused as err:
        print(f"make-bundle.py: {err}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, sha in refs.items():
        print(f"{sha[:12]} {name}")
    print(f"{out}: {out.stat().st_size / 2**20:.2f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
