"""Read pipelining facts out of Triton 3.6 TTGIR text and a ptxas `-v` report.

The TTGIR is parsed as text, one op per line, with a stack for regions. That is enough for the
facts the gate needs, and it keeps the parser readable and independent of MLIR Python bindings
(Triton's bindings cannot walk def-use chains). Warp-specialize partition regions are isolated
from above: their values are renamed apart (`%x$ws<op>p<N>`) so that names repeated in two
partitions do not meet, and their arguments are the op's operands, in order, which operand
tracing follows back. What each fact is and how it is read (loops, fused, the operands'
buffering, wgmma wait, acc_select, warp specialization, ptxas): docs/fingerprint.md, "The
fingerprint of one kernel".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# Operations that are the matrix multiply in TTGIR (after Triton's accelerate-matmul pass).
MMA_OPS = (
    "ttng.warp_group_dot",
    "tt.dot",
    "ttng.tc_gen5_mma",
    "tt.dot_scaled",
    "ttng.tc_gen5_mma_scaled",
)
# Operations that write the output tile to global memory.
STORE_OPS = (
    "tt.store",
    "tt.descriptor_store",
    "ttng.async_tma_copy_local_to_global",
    "ttng.async_tma_reduce",
    "tt.atomic_rmw",
)
# Operations that only re-view or re-layout their first operand: follow them to the source.
VIEW_OPS = (
    "ttg.memdesc_index",
    "ttg.memdesc_subview",
    "ttg.memdesc_subslice",
    "ttg.memdesc_trans",
    "ttg.memdesc_reshape",
    "ttg.memdesc_reinterpret",
    "ttg.local_load",
    "ttg.convert_layout",
    "tt.trans",
    "tt.reshape",
    "tt.fp_to_fp",
    "arith.extf",
    "arith.truncf",
    "arith.sitofp",
    "tt.bitcast",
)
ASYNC_COPY_OPS = {
    "ttg.async_copy_global_to_local": "cp.async",
    "ttng.async_tma_copy_global_to_local": "tma",
    "ttng.async_tma_gather": "tma",
}
SYNC_LOAD_OPS = {
    "tt.load": "sync",
    "tt.descriptor_load": "sync-tma",
    "tt.descriptor_gather": "sync-tma",
}

_VALUE_RE = re.compile(r"%[\w.$\-]+(?:#\d+)?")
_RESULTS_RE = re.compile(r"^((?:%[\w.$\-]+(?::\d+)?)(?:\s*,\s*%[\w.$\-]+(?::\d+)?)*)\s*=\s*")
_OPNAME_RE = re.compile(r'^"?([a-z_][\w]*\.[\w.]+)"?')
_SSA_NAME_RE = re.compile(r"%([\w.$\-]+)")
_PARTITION_RE = re.compile(r"^partition(\d+)\((.*)\)\s*num_warps\((\d+)\)\s*\{$")


@dataclass
class Op:
    """One TTGIR operation: its results, name, operand values and place in the region tree."""

    index: int
    name: str
    text: str
    results: list[str]
    operands: list[str]
    parent: int | None  # index of the op whose region holds this one
    # scf.for: arg -> (init, i); ttg.warp_specialize: a partition's argument -> (operand, i)
    block_args: dict[str, tuple[str, int]] = field(default_factory=dict)
    partition_warps: list[int] = field(default_factory=list)  # ttg.warp_specialize: per partition


@dataclass
class Module:
    ops: list[Op]
    defs: dict[str, int]  # SSA value -> defining op index (block args map to their loop op)
    module_attrs: str

    def parents(self, op: Op) -> list[Op]:
        out = []
        p = op.parent
        while p is not None:
            out.append(self.ops[p])
            p = self.ops[p].parent
        return out

    def enclosing_loops(self, op: Op, below: Op | None = None) -> list[Op]:
        """The loops around `op`, innermost first (only those inside `below`, if given)."""
        out = []
        for p in self.parents(op):
            if p is below:
                break
            if p.name == "scf.for":
                out.append(p)
        return out

    def enclosing(self, op: Op, name: str) -> Op | None:
        """The innermost op called `name` whose region holds `op`."""
        return next((p for p in self.parents(op) if p.name == name), None)

    def children(self, parent: Op, name: str | None = None) -> list[Op]:
        return [
            o for o in self.ops if o.parent == parent.index and (name is None or o.name == name)
        ]


class TTGIRParseError(ValueError):
    """The text is not TTGIR this parser understands."""


def strip_locations(ir: str) -> str:
    """MLIR text without its locations (file paths, line numbers): `loc(...)` and `#loc` lines."""
    ir = re.sub(r"^#loc.*$", "", ir, flags=re.M)  # a `#loc = loc(...)` definition line
    out, i = [], 0
    while True:
        j = ir.find(" loc(", i)
        if j < 0:
            out.append(ir[i:])
            return "".join(out)
        out.append(ir[i:j])
        depth, k = 0, j + 4
        while k < len(ir):
            depth += {"(": 1, ")": -1}.get(ir[k], 0)
            k += 1
            if depth == 0:
                break
        i = k


_LOC_TAIL_RE = re.compile(r"\s+loc\((?:[^()]|\([^()]*\))*\)\s*$")  # a line's `loc(...)`


def _split_results(head: str) -> list[str]:
    out: list[str] = []
    for part in head.split(","):
        part = part.strip()
        if ":" in part:
            name, count = part.split(":")
            out.extend(f"{name}#{i}" for i in range(int(count)))
        else:
            out.append(part)
    return out


def _closing_paren(text: str) -> int:
    """Index of the ")" closing an already opened "(" at the start of text."""
    depth = 1
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            return i
    return len(text)


def _scoped(body: str, suffix: str) -> str:
    """Every SSA name in `body` renamed apart with `suffix` (values of a partition region)."""
    return _SSA_NAME_RE.sub(lambda m: f"%{m.group(1)}{suffix}", body) if suffix else body


def parse_ttgir(text: str) -> Module:
    """Parse TTGIR text into a flat op list with parent links and SSA definitions."""
    ops: list[Op] = []
    defs: dict[str, int] = {}
    # Each open region: the op index that opened it (None for func/module) and the suffix of the
    # names defined in it ("" outside warp-specialize partitions, which are isolated from above).
    stack: list[tuple[int | None, str]] = []
    module_attrs = ""
    ws_pending: int | None = None  # a ttg.warp_specialize whose "default {" region comes next
    last_closed: int | None = None  # the op whose region the last "}" closed
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", "//")):
            continue
        if line.startswith("}"):
            # "} else {", "} do {", "} {tt.num_stages = 3 : i32} loc(#x)", "} loc(#x)"
            if not stack:
                raise TTGIRParseError(f"line {lineno}: unbalanced '}}'")
            closing, scope = stack.pop()
            last_closed = closing
            rest = _LOC_TAIL_RE.sub("", line[1:].strip())
            if rest.endswith("{"):
                stack.append((closing, scope))
            continue
        body = _LOC_TAIL_RE.sub("", line)
        outer = stack[-1][1] if stack else ""
        if body.startswith("module"):
            module_attrs = body
            stack.append((None, outer))
            continue
        if body.startswith(("tt.func", "llvm.func")):
            stack.append((None, outer))
            continue
        if ws_pending is not None and re.fullmatch(r"default\s*\{", body):
            stack.append((ws_pending, outer))  # not isolated: sees the values around the op
            ws_pending = None
            continue
        part = _PARTITION_RE.match(body)
        if part and last_closed is not None and ops[last_closed].name == "ttg.warp_specialize":
            ws = ops[last_closed]
            suffix = f"{outer}$ws{ws.index}p{part.group(1)}"
            for i, arg in enumerate(
                re.findall(r"(%[\w.$\-]+)\s*:", _scoped(part.group(2), suffix))
            ):
                if i < len(ws.operands):
                    ws.block_args[arg] = (ws.operands[i], i)
                    defs[arg] = ws.index
            ws.partition_warps.append(int(part.group(3)))
            stack.append((ws.index, suffix))
            continue
        body = _scoped(body, outer)
        m = _RESULTS_RE.match(body)
        results = _split_results(m.group(1)) if m else []
        rest = body[m.end() :] if m else body
        nm = _OPNAME_RE.match(rest)
        if not nm:
            # block labels (^bb0(...):) and other region headers are not operations: keep the
            # region balance only.
            if body.endswith("{"):
                stack.append((_innermost(stack), outer))
            continue
        name = nm.group(1)
        after = rest[nm.end() :]
        op = Op(len(ops), name, body, results, [], _innermost(stack))
        if name == "scf.for":
            _for_operands(op, after, defs)
        else:
            # attribute dictionaries and types hold no SSA values, so every %token is an operand.
            op.operands = _VALUE_RE.findall(after)
        for r in results:
            defs[r] = op.index
        ops.append(op)
        if name == "ttg.warp_specialize":
            ws_pending = op.index  # its regions open on the following lines
        # a region opens here unless the brace is an attribute dict closed on this line
        if body.endswith("{") and body.count("{") > body.count("}"):
            stack.append((op.index, outer))
    if stack:
        raise TTGIRParseError("unbalanced regions: the TTGIR text is truncated")
    if not ops or not module_attrs:
        raise TTGIRParseError("no module or no operations: this is not TTGIR")
    return Module(ops=ops, defs=defs, module_attrs=module_attrs)


def _for_operands(op: Op, after: str, defs: dict[str, int]) -> None:
    """scf.for %iv = %lb to %ub step %s iter_args(%a = %x, ...) -> (...) : i32 {: its bounds and
    initial values are operands; the induction variable and the iter_args are defined by it."""
    head, _, iter_part = after.partition("iter_args(")
    vals = _VALUE_RE.findall(head)
    if vals:
        defs[vals[0]] = op.index  # the induction variable
        op.operands.extend(vals[1:])
    if iter_part:
        for i, pair in enumerate(iter_part[: _closing_paren(iter_part)].split(",")):
            arg, _, init = pair.partition("=")
            arg, init = arg.strip(), init.strip()
            op.block_args[arg] = (init, i)
            op.operands.append(init)
            defs[arg] = op.index


def _innermost(stack: list[tuple[int | None, str]]) -> int | None:
    """The innermost open region that belongs to an op (func and module regions do not)."""
    return next((op for op, _ in reversed(stack) if op is not None), None)


# ---------------------------------------------------------------------------------------------


def _yield_operand(mod: Module, region_op: Op, i: int) -> list[str]:
    """Operand i of every scf.yield directly inside region_op (a loop's next value, an if's branches)."""
    return [y.operands[i] for y in mod.children(region_op, "scf.yield") if i < len(y.operands)]


def _shape_of(text: str) -> tuple[list[int], str] | None:
    """The shape and element type of the last memdesc/tensor type in text (after "->" if present)."""
    part = text.rsplit("->", 1)[-1]
    m = re.search(r"!ttg\.memdesc<([0-9x]+)x([a-z]\w*)", part) or re.search(
        r"tensor<([0-9x]+)x([a-z]\w*)", part
    )
    if not m:
        return None
    return [int(x) for x in m.group(1).split("x")], m.group(2)


def _alloc_users(mod: Module, alloc: Op) -> set[str]:
    """Names of the ops that write into a shared buffer or any view of it."""
    names = set(alloc.results)
    kinds: set[str] = set()
    changed = True
    while changed:
        changed = False
        for o in mod.ops:
            if not names.intersection(o.operands):
                continue
            if o.name == "ttg.warp_specialize":  # into the partitions, as their arguments
                args = {a for a, (init, _) in o.block_args.items() if init in names}
                if not names.issuperset(args):
                    names.update(args)
                    changed = True
            if o.name in VIEW_OPS and o.results and not names.issuperset(o.results):
                names.update(o.results)
                changed = True
            if o.name in ASYNC_COPY_OPS or o.name in ("ttg.local_store",):
                kinds.add(o.name)
    return kinds


def trace_operand(mod: Module, value: str, operand_rank: int) -> dict[str, Any]:
    """Where an MMA operand's data comes from: buffer depth and load path (see module docstring)."""
    seen: set[str] = set()
    todo = [value]
    sources: list[dict[str, Any]] = []
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        idx = mod.defs.get(v)
        if idx is None:
            sources.append({"buffers": 1, "load": "argument"})
            continue
        op = mod.ops[idx]
        if op.name == "scf.for" and v in op.block_args:
            init, i = op.block_args[v]
            todo.append(init)
            todo.extend(_yield_operand(mod, op, i))
        elif op.name == "scf.for":
            sources.append({"buffers": 1, "load": "loop-index"})
        elif op.name == "ttg.warp_specialize" and v in op.block_args:
            todo.append(op.block_args[v][0])  # a partition's argument: the op's operand
        elif op.name in ("scf.if", "scf.index_switch"):
            i = op.results.index(v)
            todo.extend(_yield_operand(mod, op, i))
            # branches nested one level deeper (else regions) are children of the same op
        elif op.name in VIEW_OPS:
            if op.operands:
                todo.append(op.operands[0])
        elif op.name == "ttg.local_alloc":
            shape = _shape_of(op.text)
            if op.operands:  # register tensor copied into shared memory: one buffer, synchronous
                sidx = mod.defs.get(op.operands[0])
                src = mod.ops[sidx].name if sidx is not None else ""
                sources.append({"buffers": 1, "load": SYNC_LOAD_OPS.get(src, "sync")})
                continue
            rank = len(shape[0]) if shape else operand_rank
            buffers = shape[0][0] if shape and rank == operand_rank + 1 else 1
            kinds = _alloc_users(mod, op)
            paths = sorted({ASYNC_COPY_OPS[k] for k in kinds if k in ASYNC_COPY_OPS})
            # no async copy: registers stored into a (possibly multi-slot) buffer by the threads
            kind = "+".join(paths) or ("sync" if "ttg.local_store" in kinds else "unknown")
            sources.append({"buffers": buffers, "load": kind})
        elif op.name in SYNC_LOAD_OPS:
            sources.append({"buffers": 1, "load": SYNC_LOAD_OPS[op.name]})
        elif op.name in ("arith.select",):
            todo.extend(op.operands[1:3])
        else:
            sources.append({"buffers": 1, "load": f"other:{op.name}"})
    if not sources:
        return {"buffers": 0, "load": "unknown", "multi_buffered": False}
    buffers = min(s["buffers"] for s in sources)
    loads = sorted({s["load"] for s in sources})
    load = loads[0] if len(loads) == 1 else "+".join(loads)
    multi = buffers >= 2 and all(s["load"] in ("cp.async", "tma", "cp.async+tma") for s in sources)
    return {"buffers": buffers, "load": load, "multi_buffered": multi}


def warp_specialization(mod: Module, text: str, mma: Op | None = None) -> dict[str, Any]:
    """Whether the kernel asks for warp specialization and what Triton made of it.

    `ws_partitions` counts the regions that run at once (the default region and every
    partition); `ws_warps` their warps, the default region's (the kernel's num_warps) first;
    `ws_registers` the `requestedRegisters` of the partitions after the default one.
    """
    ws_ops = [o for o in mod.ops if o.name == "ttg.warp_specialize"]
    facts: dict[str, Any] = {
        "ws_requested": bool(ws_ops)
        or bool(re.search(r"(?<![\w.])tt\.warp_specialize(?![\w.])", text)),
        "warp_specialized": bool(ws_ops),
        "ws_partitions": 0,
        "ws_warps": [],
        "ws_registers": [],
    }
    if ws_ops:
        # the one holding the MMA, if any; a kernel has one in practice
        ws = (mod.enclosing(mma, "ttg.warp_specialize") if mma else None) or ws_ops[0]
        warps = re.search(r'"ttg\.num-warps"\s*=\s*(\d+)', mod.module_attrs)
        regs = re.search(r"requestedRegisters\s*=\s*array<i32:\s*([\d,\s]*)>", ws.text)
        facts["ws_partitions"] = 1 + len(ws.partition_warps)
        facts["ws_warps"] = [int(warps.group(1)) if warps else 0, *ws.partition_warps]
        facts["ws_registers"] = (
            [int(x) for x in regs.group(1).split(",") if x.strip()] if regs else []
        )
    return facts


def _fused(mod: Module, mma: Op, mma_loop: Op | None, stores: list[Op]) -> bool:
    """Whether the tile loop and the K loop became one loop (see module docstring)."""
    if mma_loop is None:
        return False
    if any(mod.enclosing_loops(s)[:1] == [mma_loop] for s in stores):
        return True
    ws = mod.enclosing(mma, "ttg.warp_specialize")
    if ws is None:
        return False
    # warp-specialized: the fused loop is split over the partitions, the store in another one
    return len(mod.enclosing_loops(mma, below=ws)) == 1 and any(
        mod.enclosing(s, "ttg.warp_specialize") is ws and mod.enclosing_loops(s, below=ws)
        for s in stores
    )


def ttgir_facts(text: str) -> dict[str, Any]:
    """The pipelining facts of one compiled kernel (see module docstring)."""
    mod = parse_ttgir(text)
    mmas = [o for o in mod.ops if o.name in MMA_OPS]
    loops = [o for o in mod.ops if o.name == "scf.for"]
    facts: dict[str, Any] = {
        "loops": len(loops),
        "max_loop_depth": max((len(mod.enclosing_loops(o)) + 1 for o in loops), default=0),
        "mma_ops": len(mmas),
    }
    if not mmas:
        facts.update(
            mma=None,
            mma_loop_depth=0,
            fused=False,
            acc_select=False,
            wgmma_wait=None,
            operands={op: {"buffers": 0, "load": "none", "multi_buffered": False} for op in "ab"},
        )
        facts.update(warp_specialization(mod, text))
        return facts
    # The main MMA: the one in the deepest loop (a fused kernel's k == 0 fallback has none).
    mma = max(mmas, key=lambda o: len(mod.enclosing_loops(o)))
    enclosing = mod.enclosing_loops(mma)
    mma_loop = enclosing[0] if enclosing else None
    if mma.name == "ttng.warp_group_dot":
        kind = "wgmma"
    elif mma.name.startswith("ttng.tc_gen5"):
        kind = "tcgen05"
    else:
        mm = re.search(r"#ttg\.nvidia_mma<\{versionMajor = (\d+)", text)
        kind = f"mma_v{mm.group(1)}" if mm else "dot"
    stores = [o for o in mod.ops if o.name in STORE_OPS]
    fused = _fused(mod, mma, mma_loop, stores)
    shape = _shape_of(mma.text)
    acc_type = None
    if shape:
        acc_type = "tensor<" + "x".join(map(str, shape[0])) + "x" + shape[1]
    acc_select = False
    wait: int | None = None
    if mma_loop is not None:
        body = mod.children(mma_loop)
        if acc_type:
            acc_select = any(o.name == "arith.select" and acc_type in o.text for o in body)
        pend = [
            int(m.group(1))
            for o in body
            if o.name == "ttng.warp_group_dot_wait"
            for m in [re.search(r"pendings\s*=\s*(\d+)", o.text)]
            if m
        ]
        wait = min(pend) if pend else (0 if kind == "wgmma" else None)
    # operand rank equals the accumulator's: 2 for a plain matmul (3 with a batch dimension)
    rank = len(shape[0]) if shape else 2
    facts.update(
        mma=kind,
        mma_loop_depth=len(enclosing),
        fused=fused,
        acc_select=acc_select,
        wgmma_wait=wait,
        operands={
            "a": trace_operand(mod, mma.operands[0], rank),
            "b": trace_operand(mod, mma.operands[1], rank),
        },
    )
    facts.update(warp_specialization(mod, text, mma))
    return facts


def ptxas_facts(log: str) -> dict[str, Any]:
    """Registers, spills and stack frame from a `ptxas -v` report (one entry function)."""
    regs = re.search(r"Used (\d+) registers", log)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    stack = re.search(r"(\d+) bytes stack frame", log)
    if not regs or not spill:
        raise ValueError(f"no register/spill line in the ptxas report: {log[:300]!r}")
    return {
        "registers": int(regs.group(1)),
        "spill_stores": int(spill.group(1)),
        "spill_loads": int(spill.group(2)),
        "stack_bytes": int(stack.group(1)) if stack else 0,
    }
