"""Example programs. Each module defines the program (a @pl.jit entry or a @pl.program
class), the shapes it is specialised for (no torch needed to build it), inputs, and
the torch reference its results are checked against."""

EXAMPLES = ["quickstart", "tile_add", "tile_add_program", "elementwise", "activations", "softmax",
            "rmsnorm", "layernorm", "row_chunks", "matmul", "matmul_acc", "ffn", "ffn_program",
            "matmul_fp16", "dynamic_rows"]
