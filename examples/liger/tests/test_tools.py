"""tools/edited_liger.py on the installed release: the three edits land where tools/h200.sh
(step e) needs them, or nothing is written and the file that did not match is named."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]
LIGER = importlib.util.find_spec("liger_kernel")
pytestmark = pytest.mark.skipif(LIGER is None, reason="liger_kernel is not importable")


def _tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "edited_liger", HERE / "tools" / "edited_liger.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _release(tmp_path: Path) -> Path:
    """The installed release as `pip install --no-deps --target DIR` lays it out."""
    assert LIGER is not None and LIGER.origin
    src = tmp_path / "release"
    shutil.copytree(Path(LIGER.origin).parent, src / "liger_kernel")
    dist = importlib.metadata.distribution("liger_kernel")
    info = src / f"liger_kernel-{dist.version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(dist.read_text("METADATA") or "")
    return src


def test_the_edited_copy_differs_by_the_three_edits_and_its_version(tmp_path: Path) -> None:
    tool, src = _tool(), _release(tmp_path)
    assert tool.main(src, tmp_path / "edited") == 0
    ops, edited = src / "liger_kernel" / "ops", tmp_path / "edited" / "liger_kernel" / "ops"
    changed = {p.name for p in edited.glob("*.py") if p.read_text() != (ops / p.name).read_text()}
    assert changed == {"swiglu.py", "rms_norm.py", "layer_norm.py"}
    rms = (edited / "rms_norm.py").read_text()
    bwd = rms[rms.index("def rms_norm_backward(") :]
    assert "num_warps=2,  # tilegate edit" in bwd and rms.count("tilegate edit") == 1
    assert "num_stages=3" in (edited / "layer_norm.py").read_text()
    swiglu = (edited / "swiglu.py").read_text()
    fwd = swiglu[swiglu.index("def swiglu_forward(") : swiglu.index("def swiglu_backward(")]
    assert "num_warps = 4  # tilegate edit" in fwd and swiglu.count("tilegate edit") == 1
    (info,) = (tmp_path / "edited").glob("liger_kernel-*.dist-info")
    version = importlib.metadata.Distribution.at(info).version
    assert version.endswith("+tilegate.edit")


def test_a_release_without_the_edited_text_is_named_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tool, src = _tool(), _release(tmp_path)
    ln = src / "liger_kernel" / "ops" / "layer_norm.py"
    ln.write_text(ln.read_text().replace("for row_idx in range(", "for row in range("))
    assert tool.main(src, tmp_path / "edited") == 2
    assert (
        "layer_norm.py: no 'for row_idx in range(row_start, row_end):'" in capsys.readouterr().err
    )
    assert not (tmp_path / "edited").exists() and not (tmp_path / "edited.tmp").exists()
