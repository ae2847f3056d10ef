"""A package of @pl.jit kernels split across modules with relative imports (the layout of
the reference's Qwen3 decode example), for test_jit_composition."""
