"""Python source for a kernel that runs several sweeps of a stencil per view-block (see ``sweeps``).

The kernel takes the single sweep's arguments (``kernel_source.generate``) and then the view-block's
first row and the view's row count. Sweep ``s`` computes row ``i`` into ring ``s`` once sweep
``s - 1`` has computed row ``i + ahead``: one loop over ``t`` runs sweep 1 on row ``lo + t``,
sweep 2 on row ``lo + t - ahead`` and so on. Rings of sweeps before the last hold whole rows
with ``halo`` columns on each side copied from the base (elements no sweep writes); a read
outside the view's rows reads the base. The last sweep's ring is stored to the base (or the held
rows' buffer) a row at a time, once sweep 1 no longer reads the row's old value. In a shrinking
chain (``Stencil.top``/``bottom``) sweep ``s`` computes only the rows it writes, and each row is
stored from the ring of the last sweep that computes it. Each element
goes through the same operations in the same order as in one sweep: results are bit-identical.
"""

from __future__ import annotations

from shoal.engine.node.codegen.templates import (
    KERNEL_DECORATOR,
    MODULE_HEADER,
    element_wise_lines,
    ring_params,
    store_function,
)
from shoal.engine.node.lower.program import ARRAY, CONST, DEFERRED, KernelProgram, Stencil


def generate_sweeps(program: KernelProgram, name: str) -> str:
    """Source of a module defining kernel function ``name`` for a fused ``program``."""
    stencil = program.stencil
    assert stencil is not None and len(program.partition.shape) == 2
    sweeps, target = program.sweeps, stencil.target
    behind, ahead, halo = stencil.behind, stencil.ahead, stencil.halo
    ring_rows = behind + ahead + 1
    slots = program.slots
    params = ["n0", "n1"]
    for i, slot in enumerate(slots):
        if slot.kind in (ARRAY, DEFERRED):
            params += [f"a{i}", f"o{i}", f"s{i}_0", f"s{i}_1"]
        elif slot.kind == CONST:
            params.append(f"c{i}")
        if i == target:
            params += ring_params(i, 2)
    params += ["first", "total"]
    ring = f"a{target}"
    lines = [
        *MODULE_HEADER,
        "",
        "",
        *store_function(target, 2),
        "",
        KERNEL_DECORATOR,
        f"def {name}({', '.join(params)}):",
        "    if n0 <= 0:",
        "        return 0",
        f"    width = s{target}_0",
        f"    lo = max({-(sweeps - 1) * behind}, -first)",
        f"    hi = min(n0 + {(sweeps - 1) * ahead}, total - first)",
        *(f"    ring{s} = {ring}[{(s - 1) * ring_rows} * width + {halo}:]" for s in _stored_sweeps(stencil, sweeps)),
        "    stored = 0",
        f"    for t in range(n0 + {(sweeps - 1) * ahead} - lo):",
    ]
    for sweep in range(1, sweeps + 1):
        lines += [f"        {line}" for line in _sweep_lines(program, sweep, ring_rows)]
    ready = [
        f"if lo + t < stored + (last - 1) * {ahead}:  # its last sweep has not computed it yet",
        "    break",
        f"if lo + t + 1 < hi and lo + t < stored + {behind}:  # sweep 1 still reads its old value",
        "    break",
    ]
    last, store = _last_sweep(stencil, sweeps), _store_from_last(program, sweeps)
    lines += [
        "        while stored < n0:",
        *(f"            {line}" for line in [*last, *ready, *store]),
        "            stored += 1",
        "    while stored < n0:",
        *(f"        {line}" for line in [*last, *store]),
        "        stored += 1",
    ]
    lines += [
        "    return 0",
        "",
        "",
        "def _warmup():",
        f"    return {name}({', '.join(_dummy_arguments(program))})",
    ]
    return "\n".join(lines) + "\n"


def _store_from(program: KernelProgram, sweep: int) -> str:
    """Store view-block row ``stored`` from sweep ``sweep``'s ring (the last sweep's holds
    ``behind + 1`` rows, the others' ``behind + ahead + 1`` rows from ``lo``)."""
    stencil = program.stencil
    assert stencil is not None
    target = stencil.target
    if sweep == program.sweeps:
        row, rows = "stored", stencil.behind + 1
    else:
        row, rows = "stored - lo", stencil.behind + stencil.ahead + 1
    return (
        f"_store{target}(stored, {row}, n0, n1, ring{sweep}, width, 1, {rows}, bb{target}, bo{target}, bs{target}_0, bs{target}_1, "
        f"hh{target}, hf{target}, hb{target})"
    )


def _last_sweep(stencil: Stencil, sweeps: int) -> list[str]:
    """``last``: the last sweep of a shrinking chain that computes view-block row ``stored``."""
    lines = [f"last = {sweeps}"]
    if stencil.top:
        lines.append(f"last = min(last, (first + stored) // {stencil.top} + 1)")
    if stencil.bottom:
        lines.append(f"last = min(last, (total - 1 - first - stored) // {stencil.bottom} + 1)")
    return lines


def _stored_sweeps(stencil: Stencil, sweeps: int) -> range:
    """The sweeps whose rings rows are stored from: the last, and in a shrinking chain every one."""
    return range(1 if stencil.top or stencil.bottom else sweeps, sweeps + 1)


def _store_from_last(program: KernelProgram, sweeps: int) -> list[str]:
    """Store row ``stored`` from the ring of sweep ``last``."""
    assert program.stencil is not None
    stored = _stored_sweeps(program.stencil, sweeps)
    if len(stored) == 1:
        return [_store_from(program, sweeps)]
    lines = []
    for sweep in stored:
        lines += [f"{'if' if sweep == 1 else 'elif'} last == {sweep}:", f"    {_store_from(program, sweep)}"]
    return lines


def _sweep_lines(program: KernelProgram, sweep: int, ring_rows: int) -> list[str]:
    """Sweep ``sweep`` (from 1) of one row, if the row is among those it computes."""
    stencil = program.stencil
    assert stencil is not None
    sweeps, target = program.sweeps, stencil.target
    behind, ahead, halo = stencil.behind, stencil.ahead, stencil.halo
    ring, base, base_offset, base_row = f"a{target}", f"bb{target}", f"bo{target}", f"bs{target}_0"
    lines = [
        f"i = lo + t - {(sweep - 1) * ahead}",
        f"if i >= max({-(sweeps - sweep) * behind}, {(sweep - 1) * stencil.top} - first) and i < min(n0 + {(sweeps - sweep) * ahead}, total - first - {(sweep - 1) * stencil.bottom}):",
    ]
    body = []
    for slot, dr, dc in stencil.shifts:
        row = f"r{slot}_{sweep}"
        from_base = f"{row} = a{slot}[o{slot} + i * s{slot}_0:o{slot} + i * s{slot}_0 + n1]"
        if sweep == 1:
            body.append(from_base)
            continue
        previous = (sweep - 2) * ring_rows
        body += [
            f"g = i + {dr}",
            "if g >= -first and g < total - first:  # a row of the view: the previous sweep computed it",
            f"    p = ({previous} + (g - lo) % {ring_rows}) * width + {halo + dc}",
            f"    {row} = {ring}[p:p + n1]",
            "else:",
            f"    {from_base}",
        ]
    if sweep < sweeps:
        body += [f"p = ({(sweep - 1) * ring_rows} + (i - lo) % {ring_rows}) * width + {halo}"]
    else:
        body += [f"p = ({(sweeps - 1) * ring_rows} + i % {behind + 1}) * width + {halo}"]
    body += [f"w = {ring}[p:p + n1]", "for j in range(n1):"]
    body += [f"    {line}" for line in _element_lines(program, sweep)]
    if sweep < sweeps and halo:
        body += [
            f"h = {base_offset} + i * {base_row}",
            f"for c in range({halo}):",
            f"    {ring}[p - {halo} + c] = {base}[h - {halo} + c]",
            f"    {ring}[p + n1 + c] = {base}[h + n1 + c]",
        ]
    return lines + [f"    {line}" for line in body]


def _element_lines(program: KernelProgram, sweep: int) -> list[str]:
    """One element of one sweep: the single sweep's steps, reading rows ``r{slot}_{sweep}``."""
    slots = program.slots
    values: dict[int, tuple[str, object]] = {}
    for i, slot in enumerate(slots):
        if slot.kind == ARRAY:
            values[i] = (f"r{i}_{sweep}[j]", slot.dtype)
        elif slot.kind == CONST:
            values[i] = (f"c{i}", slot.dtype)
    lines = []
    for k, step in enumerate(program.steps):
        lines += element_wise_lines(k, step, program, values, read=values.__getitem__, target=lambda out: "w[j]")
    return lines


def _dummy_arguments(program: KernelProgram) -> list[str]:
    """Arguments with the kernel's types that run no row (to compile it)."""
    args = ["0", "0"]
    for slot in program.slots:
        zeros = f"np.zeros(1, np.dtype({slot.dtype.str!r}))"
        if slot.kind in (ARRAY, DEFERRED):
            args += [zeros, "0", "0", "0"]
        elif slot.kind == CONST:
            args.append(f"np.dtype({slot.dtype.str!r}).type(0)")
        if slot.kind == DEFERRED:
            args += ["1", zeros, "0", "0", "0", zeros, "0", "0"]
    return [*args, "0", "0"]
