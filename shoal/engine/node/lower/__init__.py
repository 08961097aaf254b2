"""Stage 2, lowering: a fusion group becomes a kernel program (operand slots, typed steps,
block geometry, deferred writes, fused stencil sweeps)."""
