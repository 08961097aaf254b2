"""Stage 4, compiling: the kernel cache (keyed by structure, on disk, compiled in a background
process) and the shared libraries that cached kernels load from."""
