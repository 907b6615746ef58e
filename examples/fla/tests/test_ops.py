"""On the CPU, with fla-core first on PYTHONPATH (README.md): the torch references against fla's
own per-token references, the protocol, and tools/edited_fla.py on the release.

fla's Triton kernels do not run under Triton 3.6's interpreter, so their correctness against
these references is checked on the GPU, by every perf run (its correctness call)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parents[1]
FLA = importlib.util.find_spec("fla")
if FLA is None:  # a clear error, not a skip: `nox -s liger` installs it
    raise ImportError("fla (fla-core) is not importable: put fla-core==0.6.0 on PYTHONPATH")

SMALL = {"dtype": "fp32", "batch": 1, "T": 150, "heads": 2, "dim": 32}  # T: a partial chunk


@pytest.mark.parametrize("pass_", ["fwd", "bwd"])
def test_the_torch_references_agree_with_flas_recurrent_ones(pass_: str) -> None:
    from fla.ops.gated_delta_rule import naive_recurrent_gated_delta_rule
    from fla.ops.gla.naive import naive_recurrent_gla
    from fla_bench import ops

    for op in ops.OPS:
        params = {**SMALL, "op": op, "pass": pass_}
        x = ops.inputs(params, "cpu", 0)
        got = ops.make("torch", params, x)()
        leaves = [x[n] for n in ("q", "k", "v", "g", "beta") if n in x]
        if op == "gdn":
            o, _ = naive_recurrent_gated_delta_rule(x["q"], x["k"], x["v"], x["beta"], x["g"])
        else:
            o, _ = naive_recurrent_gla(x["q"], x["k"], x["v"], x["g"])
        want = o if pass_ == "fwd" else torch.autograd.grad(o, leaves, x["do"])
        assert ops.rel_error(got, want) < 1e-5, op
        # and the metric rejects a wrong answer
        wrong = got * 1.1 if pass_ == "fwd" else tuple(g * 1.1 for g in got)
        assert ops.rel_error(wrong, want) > ops.REL_TOL


def test_the_protocol_declares_both_ops_and_passes() -> None:
    from perf_tests.test_fla import BENCHMARK

    assert BENCHMARK.problems() == []
    quick = BENCHMARK.profile("quick")
    kernels = next(a for a in quick.axes if a.name == "kernel").values
    assert set(kernels) == {"gdn-fwd", "gdn-bwd", "gla-fwd", "gla-bwd"}
    assert [v.name for v in BENCHMARK.variants] == ["torch", "fla"]


def test_the_edit_removes_the_picked_config_from_its_kernels_list(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("edited_fla", HERE / "tools" / "edited_fla.py")
    assert spec and spec.loader and FLA is not None and FLA.origin
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    src = tmp_path / "src"
    src.mkdir()
    (src / "fla").symlink_to(Path(FLA.origin).parent)
    kernel = "chunk_gla_fwd_A_kernel_intra_sub_inter"
    config = {"kwargs": {"BK": 64}, "num_warps": 4, "num_stages": 3, "num_ctas": 1}
    results = tmp_path / "r.json"
    pick = {"kernel": kernel, "key": {}, "config": config, "configs": 24}
    results.write_text(json.dumps({"benchmarks": [{"extra_info": {"tilegate": {
        "key": "fla-gla-fwd-bf16-T2048", "autotune": [pick]}}}]}))  # fmt: skip
    said = tool.edit(src, tmp_path / "dst", tool.pick_of(results, "fla-gla-fwd-bf16-T2048", None))
    assert kernel in said and "removed its picked config" in said
    text = (tmp_path / "dst" / "fla" / "ops" / "gla" / "chunk.py").read_text()
    assert "if not (c.kwargs == {'BK': 64} and c.num_warps == 4 and c.num_stages == 3" in text
    # the edited list holds every config but the picked one
    import triton

    at = text.index(f"def {kernel}(")
    start = text.rindex("@fla_cache_autotune(\n    configs=", 0, at)
    listing = text[start:at].split("configs=", 1)[1].split(",\n    key=", 1)[0]
    configs = eval(listing, {"triton": triton})  # the release's own source
    assert len(configs) == 23 and all(
        not (c.kwargs == {"BK": 64} and c.num_warps == 4 and c.num_stages == 3) for c in configs
    )


def test_flas_own_refusal_is_declared_for_its_gated_backward_on_hopper_only() -> None:
    import re

    import triton
    from fla_bench.variants import VARIANTS, fla_refuses

    version = tuple(int(n) for n in re.findall(r"\d+", triton.__version__)[:3])
    refused = (3, 4, 0) <= version < (3, 7, 1) and importlib.util.find_spec("tilelang") is None
    why = fla_refuses((9, 0), {"kernel": "gdn-bwd"})
    assert (why is not None) == refused and (not why or "fla#640" in why)
    for kernel in ("gdn-fwd", "gla-fwd", "gla-bwd"):
        assert fla_refuses((9, 0), {"kernel": kernel}) is None
    assert fla_refuses((8, 0), {"kernel": "gdn-bwd"}) is None  # an A100 runs it
    assert fla_refuses(None, {"kernel": "gdn-bwd"}) is None
    # both variants carry it: the reference alone would be timed for nothing
    assert all(v.unsupported_reason((9, 0), {"kernel": "gdn-bwd"}) == why for v in VARIANTS)
