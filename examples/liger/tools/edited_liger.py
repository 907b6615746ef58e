"""A copy of a Liger-Kernel release with two config changes and a kernel-loop change, for an
upgrade A/B that shows how tilegate explains each (tools/h200.sh, step e):

    python tools/edited_liger.py /tmp/liger-0.8.5 /tmp/liger-edited

SRC holds `liger_kernel/` and its `*.dist-info` (pip install --no-deps --target SRC ...); DST
gets the same with three edits, each in one kernel the quick profile times, so each kernel's
verdict has one cause, and its version marked `+tilegate.edit` (the upgrade report names what
changed by version):

* config: rms_norm's backward launches with num_warps 2 (the release passes the forward's, 8 at
  4096 columns; its grid is one program per SM, so this leaves each SM 2 warps);
* config: swiglu's forward launches with num_warps 4 (the release picks 8 at 4096 columns);
* loop: layer_norm's backward row loop software-pipelined (`tl.range(..., num_stages=3)`).

rms_norm / layer_norm forward and swiglu backward are left as they are: their verdicts must
read SAME with their compiled code the same. An edit whose text is not in the release (another
Liger version) stops the script, naming the file: nothing is half-written.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

MARK = "+tilegate.edit"
# (file under liger_kernel/ops, the text as released, what replaces it, the function it is in)
EDITS = (
    (
        "swiglu.py",
        "    BLOCK_SIZE, num_warps = calculate_settings(n_cols)\n",
        "    BLOCK_SIZE, num_warps = calculate_settings(n_cols)\n"
        "    num_warps = 4  # tilegate edit: a config change\n",
        "def swiglu_forward(",
    ),
    (
        "rms_norm.py",
        "                num_warps=num_warps,\n",
        "                num_warps=2,  # tilegate edit: a config change\n",
        "def rms_norm_backward(",
    ),
    (
        "layer_norm.py",
        "    for row_idx in range(row_start, row_end):\n",
        "    for row_idx in tl.range(row_start, row_end, num_stages=3):  # tilegate edit\n",
        "def _layer_norm_backward_kernel(",
    ),
)


def edited(text: str, old: str, new: str, where: str, name: str) -> str:
    """`text` with the first `old` after `where` replaced by `new`; ValueError naming `name`."""
    start = text.find(where)
    at = text.find(old, start) if start >= 0 else -1
    if at < 0:
        raise ValueError(
            f"{name}: no {old.strip()!r} in {where.rstrip('(')}: this is not the Liger release "
            "the edits were written for (0.8.5)"
        )
    return text[:at] + new + text[at + len(old) :]


def main(src: Path, dst: Path) -> int:
    ops = src / "liger_kernel" / "ops"
    infos = sorted(src.glob("liger_kernel-*.dist-info"))
    if not ops.is_dir() or len(infos) != 1:
        print(
            f"edited_liger.py: {src} must hold liger_kernel/ops and one liger_kernel-*.dist-info: "
            f"pip install --no-deps --target {src} liger-kernel==0.8.5",
            file=sys.stderr,
        )
        return 2
    try:
        texts = {}
        for name, old, new, where in EDITS:
            texts[name] = edited(texts.get(name) or (ops / name).read_text(), old, new, where, name)
    except ValueError as err:
        print(f"edited_liger.py: {ops}/{err}", file=sys.stderr)
        return 2
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp)
    for name, text in texts.items():
        (tmp / "liger_kernel" / "ops" / name).write_text(text)
    meta = tmp / infos[0].name / "METADATA"
    lines = meta.read_text().splitlines(keepends=True)
    meta.write_text(
        "".join(
            f"{line.rstrip()}{MARK}\n" if line.startswith("Version: ") else line for line in lines
        )
    )
    shutil.rmtree(dst, ignore_errors=True)
    tmp.rename(dst)
    print(f"{dst}: liger_kernel with {len(EDITS)} edits ({', '.join(n for n, *_ in EDITS)})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
