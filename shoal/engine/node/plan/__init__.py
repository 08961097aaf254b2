"""Stage 1, planning: a batch becomes fusion groups, whole-view operations, copy chains and
releases, in program order (instructions reordered by iteration shape first)."""
