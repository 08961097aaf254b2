"""Stage 3, code generation: the Python source of a compiled kernel for a kernel program."""
