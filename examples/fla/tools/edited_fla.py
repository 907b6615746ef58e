"""A copy of an fla-core release with one autotuned kernel's picked config removed from its
config list, for an upgrade A/B that shows how tilegate explains it (tools/h200.sh, step e):

    python tools/edited_fla.py SRC DST --results RESULTS --case CASE [--kernel NAME]

SRC holds `fla/` and its `*.dist-info` (pip install --no-deps --target SRC ...). RESULTS is a
tilegate results file of SRC's release (an A/A run: its rows carry each autotuner pick,
extra_info.tilegate.autotune); the pick of CASE's head row for NAME (default: its first tuned
kernel whose decorator is in SRC's source) is the config removed. The kernel's decorator
`configs=X` becomes `configs=[c for c in X if not <that config>]`: its config space changes, so
the case's identity does, and the tuner picks among the others (the upgrade report names both
picks). DST's version is marked `+tilegate.edit`. Nothing is half-written: a kernel or pick not
found stops the script, naming it.
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import sys
from pathlib import Path
from typing import Any

MARK = "+tilegate.edit"


def pick_of(results: Path, case: str, kernel: str | None) -> list[dict[str, Any]]:
    """The head row's picks of `case` (one kernel's where `kernel` names it)."""
    data = json.loads(results.read_text(encoding="utf-8"))
    for bench in data.get("benchmarks") or []:
        tg = (bench.get("extra_info") or {}).get("tilegate") or {}
        if tg.get("key") == case and tg.get("side", "head") == "head":
            picks = [p for p in tg.get("autotune") or [] if p.get("configs", 0) > 1]
            return [p for p in picks if kernel in (None, p.get("kernel"))]
    raise SystemExit(f"edited_fla: no head row {case} in {results}")


def _decorated(tree: ast.AST, name: str) -> ast.Call | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and any(k.arg == "configs" for k in deco.keywords):
                    return deco
    return None


def _matches(config: dict[str, Any]) -> str:
    """A Python condition true of the triton.Config `c` equal to the picked config."""
    terms = [f"c.kwargs == {config.get('kwargs') or {}!r}"]
    terms += [
        f"c.{k} == {config[k]!r}" for k in ("num_warps", "num_stages", "num_ctas") if k in config
    ]
    return " and ".join(terms)


def edit(src: Path, dst: Path, picks: list[dict[str, Any]]) -> str:
    """DST = SRC with the first pick's config removed from its kernel's configs; what was done."""
    pkg = src / "fla"
    for pick in picks:
        for path in sorted(pkg.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if f"def {pick['kernel']}(" not in text:
                continue
            deco = _decorated(ast.parse(text), pick["kernel"])
            configs = (
                next((k.value for k in deco.keywords if k.arg == "configs"), None) if deco else None
            )
            segment = ast.get_source_segment(text, configs) if configs is not None else None
            if not segment:
                continue
            new = f"[c for c in ({segment}) if not ({_matches(pick['config'])})]"
            edited = text.replace(segment, new, 1)
            if dst.exists():
                shutil.rmtree(dst)
            shutil.copytree(src, dst)
            (dst / path.relative_to(src)).write_text(edited, encoding="utf-8")
            for meta in dst.glob("fla_core-*.dist-info/METADATA"):
                lines = meta.read_text(encoding="utf-8").splitlines(keepends=True)
                meta.write_text(
                    "".join(
                        line.rstrip("\n") + MARK + "\n" if line.startswith("Version: ") else line
                        for line in lines
                    ),
                    encoding="utf-8",
                )
            return (
                f"{pick['kernel']} ({path.relative_to(src)}): removed its picked config "
                f"{json.dumps(pick['config'], sort_keys=True)} from its configs"
            )
    names = ", ".join(p["kernel"] for p in picks) or "no tuned kernel"
    raise SystemExit(f"edited_fla: {names}: no autotune decorator with configs= found in {pkg}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--case", required=True)
    ap.add_argument("--kernel")
    args = ap.parse_args(argv)
    print(edit(args.src, args.dst, pick_of(args.results, args.case, args.kernel)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
