"""Two Liger-Kernel releases in one process: the second imported under another package name.

    PYTHONPATH=/tmp/liger-0.8.4:. python tools/two_versions.py /tmp/liger-0.8.5

The first release is plain `liger_kernel` (from PYTHONPATH); the second, DIR/liger_kernel, is
served as `liger_kernel_b` by an import hook that rewrites the word `liger_kernel` in its source
as it loads, so its absolute imports (`from liger_kernel.ops.utils import ...`) and its string
module paths stay inside the copy. Nothing is copied or written to disk. With TRITON_INTERPRET=1
both copies run their kernels on the same inputs; without it the script prints each Triton
kernel's cache key (source + line + callees; the module name is not part of it), no GPU needed.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import re
import sys
from pathlib import Path

NAME = "liger_kernel"
WORD = re.compile(rb"\bliger_kernel\b")


class AliasFinder(importlib.abc.MetaPathFinder):
    """Serve `alias` and `alias.*` from `root/liger_kernel`, imports rewritten to `alias`."""

    def __init__(self, root: Path, alias: str) -> None:
        self.root, self.alias = root / NAME, alias

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname != self.alias and not fullname.startswith(self.alias + "."):
            return None
        rel = Path(*fullname.split(".")[1:])
        for file, pkg in (
            (self.root / rel / "__init__.py", True),
            (self.root / f"{rel}.py", False),
        ):
            if file.is_file():
                loader = _Rewriting(fullname, str(file), self.alias)
                spec = importlib.util.spec_from_file_location(
                    fullname,
                    file,
                    loader=loader,
                    submodule_search_locations=[str(file.parent)] if pkg else None,
                )
                return spec
        return None


class _Rewriting(importlib.machinery.SourceFileLoader):
    def __init__(self, fullname: str, path: str, alias: str) -> None:
        super().__init__(fullname, path)
        self.alias = alias.encode()

    def get_data(self, path):  # type: ignore[no-untyped-def]
        data = super().get_data(path)
        return WORD.sub(self.alias, data) if path.endswith(".py") else data

    def path_stats(self, path):  # type: ignore[no-untyped-def]
        raise OSError  # no bytecode cache: the .pyc beside the file is the unrewritten module's


def load_alias(root: Path, alias: str = "liger_kernel_b"):  # type: ignore[no-untyped-def]
    """Import the Liger copy under `root` as `alias` (its transformers.functional)."""
    sys.meta_path.insert(0, AliasFinder(root, alias))
    return importlib.import_module(f"{alias}.transformers.functional")


def _kernels(module) -> dict[str, object]:  # type: ignore[no-untyped-def]
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITCallable

    kinds = (JITCallable, InterpretedFunction)
    return {k: v for k, v in vars(module).items() if isinstance(v, kinds)}


def main(other: str) -> None:
    interpret = os.environ.get("TRITON_INTERPRET") == "1"
    if interpret:
        from liger_bench import interpreter

        interpreter.install()
    from importlib.metadata import version

    import liger_kernel.transformers.functional  # noqa: F401

    load_alias(Path(other))
    a, b = sys.modules[NAME], sys.modules["liger_kernel_b"]
    print(f"a: {a.__file__} ({version(NAME)})\nb: {b.__file__}")
    # A module of one copy loaded from the other's files would be a silent mix.
    mixed = [
        n
        for n, m in sys.modules.items()
        if n.split(".")[0] in (NAME, "liger_kernel_b")
        and (
            str(Path(other))
            in str(getattr(m, "__file__", None) or list(getattr(m, "__path__", [])))
        )
        != n.startswith("liger_kernel_b")
    ]
    count = sum(n.split(".")[0] == "liger_kernel_b" for n in sys.modules)
    print(f"modules of b: {count}; loaded from the other copy's files: {mixed or 'none'}")
    for mod in ("ops.rms_norm", "ops.layer_norm", "ops.swiglu", "ops.geglu"):
        ka = _kernels(sys.modules[f"{NAME}.{mod}"])
        kb = _kernels(sys.modules[f"liger_kernel_b.{mod}"])
        for name in sorted(ka):
            fa, fb = ka[name], kb[name]
            same_obj = fa is fb
            if interpret:
                print(f"{mod}.{name}: distinct objects {not same_obj}, module {fb.fn.__module__}")
            else:
                print(
                    f"{mod}.{name}: {fb.__module__}, key equal {fa.cache_key == fb.cache_key}, "
                    f"source equal {fa.src == fb.src}"
                )
    if interpret:
        _run_both()


def _run_both() -> None:
    """Each op x pass through both copies on the same inputs, both against the reference."""
    from liger_bench import ops
    from triton.runtime.interpreter import InterpretedFunction

    launched: list[str] = []
    run = InterpretedFunction.run

    def counting(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        launched.append(self.fn.__module__.split(".")[0])
        return run(self, *args, **kwargs)

    InterpretedFunction.run = counting  # type: ignore[method-assign]
    for p in ops.PROFILES["smoke"]:
        x = ops.inputs(p, "cpu", seed=1)
        ref = ops.reference_output(p, x)
        line = []
        for pkg in (NAME, "liger_kernel_b"):
            timed = ops.liger_impl(pkg)(p, ops.inputs(p, "cpu", seed=1))
            launched.clear()
            err = ops.rel_error(timed(), ref)
            line.append(f"{pkg}: err {err:.1e}, kernels of {sorted(set(launched))}")
        print(f"{p['op']}-{p['pass']}: " + "; ".join(line))


if __name__ == "__main__":
    main(sys.argv[1])
