"""What the GPU is: name, slug, SMs, capability, memory, L2, driver, CUDA, and the software.

`tilegate gpu [--slug]` (tilegate.commands.gpu) prints it, or says there is no GPU (exit 2).
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
from dataclasses import asdict, dataclass
from typing import Any


def slugify(name: str) -> str:
    """'NVIDIA H200' -> 'nvidia-h200': the baseline file name for a GPU model."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not slug:
        raise ValueError(f"GPU name {name!r} gives an empty slug")
    return slug


@dataclass(frozen=True)
class GpuInfo:
    name: str
    slug: str
    sm_count: int
    capability: tuple[int, int]
    memory_gib: float
    l2_bytes: int
    driver: str
    cuda: str
    serial: str | None = None  # the board's serial (NVML), else the device's UUID: which GPU

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["capability"] = list(self.capability)
        return data


def software_versions() -> dict[str, str]:
    import torch
    import triton

    return {
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
    }


def nvml() -> Any | None:
    """The initialised `pynvml` module (nvidia-ml-py), or None where it is missing or fails."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # not installed, or no driver
        return None
    return pynvml


def gpu_info(device_index: int = 0) -> GpuInfo:
    """Facts about the CUDA device; raises RuntimeError when there is none."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError(
            f"no CUDA GPU visible to torch {torch.__version__} (torch.version.cuda={torch.version.cuda})"
        )
    props = torch.cuda.get_device_properties(device_index)
    nv = nvml()
    driver = _text(nv.nvmlSystemGetDriverVersion()) if nv is not None else None
    return GpuInfo(
        name=props.name,
        slug=slugify(props.name),
        sm_count=props.multi_processor_count,
        capability=(props.major, props.minor),
        memory_gib=round(props.total_memory / 2**30, 1),
        l2_bytes=int(getattr(props, "L2_cache_size", 0) or 0),
        driver=driver or "unknown",
        cuda=str(torch.version.cuda),
        serial=_serial(device_index, getattr(props, "uuid", None)),
    )


def _serial(device_index: int, uuid: Any) -> str | None:
    """NVML's board serial of the device, else its UUID (both name one physical GPU)."""
    nv = nvml()
    if nv is not None:
        try:
            handle = nv.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}") if uuid else None
            handle = handle or nv.nvmlDeviceGetHandleByIndex(device_index)
            return _text(nv.nvmlDeviceGetSerial(handle))
        except Exception:
            pass
    return f"GPU-{uuid}" if uuid else None


def nvml_slug() -> str | None:
    """The GPU's slug from NVML, without starting CUDA (seconds saved); None where NVML cannot say
    it for certain: no GPU visible, GPUs of several models (CUDA's order may differ from NVML's)
    or one in MIG mode (torch names the instance, not the board)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return None
    nv = nvml()
    if nv is None:
        return None
    try:
        names = set()
        for i in range(nv.nvmlDeviceGetCount()):
            handle = nv.nvmlDeviceGetHandleByIndex(i)
            with contextlib.suppress(nv.NVMLError_NotSupported):
                if nv.nvmlDeviceGetMigMode(handle)[0]:
                    return None
            names.add(_text(nv.nvmlDeviceGetName(handle)))
    except Exception:
        return None
    return slugify(names.pop()) if len(names) == 1 else None


def _text(value: Any) -> str:
    """An NVML string (bytes in older nvidia-ml-py)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def gpu_count() -> int:
    """How many CUDA GPUs torch sees (CUDA_VISIBLE_DEVICES applies)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


NO_GPU_HINT = (
    "  `tilegate perf` needs a CUDA GPU and the runner's CUDA build of torch and Triton.\n"
    "  Without a GPU: `tilegate perf --profile smoke --report-only` (the CPU interpreter),\n"
    "  `tilegate compare RESULTS BASELINE` (judge results measured elsewhere)."
)
