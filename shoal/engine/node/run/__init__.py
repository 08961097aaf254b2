"""Stage 5, running: base memory, and running one kernel program or instruction on a view-block
(compiled kernel calls, NumPy tiles, small batches directly)."""
