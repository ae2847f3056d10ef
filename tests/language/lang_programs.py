"""Programs used by the language tests. Each builder parses its class when called, so
a parser failure shows up in the test that asked for it, not at import."""
import pypto.language as pl

N = 64
TILE = 32
M = pl.dynamic("M")


def quickstart_tensor():
    @pl.program
    class QuickTensor:
        @pl.function(type=pl.FunctionType.Orchestration)
        def add(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(a, b)
            return out
    return QuickTensor


def quickstart_tile():
    @pl.program
    class QuickTile:
        @pl.function(type=pl.FunctionType.InCore)
        def add_kernel(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                       out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
            ta = pl.load(a, [0, 0], [128, 128])
            tb = pl.load(b, [0, 0], [128, 128], target_memory=pl.Mem.Vec)
            t = pl.add(ta, tb)
            out = pl.store(t, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                 out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
            out = self.add_kernel(a, b, out)
            return out
    return QuickTile


def softmax():
    @pl.program
    class Softmax:
        @pl.function(type=pl.FunctionType.Orchestration)
        def softmax(self, x: pl.Tensor[[N, N], pl.FP32],
                    y: pl.Out[pl.Tensor[[N, N], pl.FP32]]) -> pl.Tensor[[N, N], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [0, 0], [N, N])
                scratch = pl.create_tile([N, N], dtype=pl.FP32, target_memory=pl.Mem.Vec)
                m = pl.row_max(t, scratch)
                e = pl.exp(pl.row_expand_sub(t, m))
                s = pl.row_sum(e, scratch)
                pl.store(pl.row_expand_div(e, s), [0, 0], y)
            return y
    return Softmax


def matmul():
    @pl.program
    class Matmul:
        @pl.function(type=pl.FunctionType.InCore)
        def matmul_k(self, a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[128, 64], pl.FP32],
                     c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            ta = pl.load(a, [0, 0], [64, TILE], target_memory=pl.Mem.Mat)
            la = pl.move(ta, target_memory=pl.Mem.Left)
            tb = pl.load(b, [0, 0], [TILE, 64], target_memory=pl.Mem.Mat)
            rb = pl.move(tb, target_memory=pl.Mem.Right)
            acc = pl.matmul(la, rb)
            for k, (acc_in,) in pl.range(1, 128 // TILE, init_values=(acc,)):
                ta_k = pl.load(a, [0, k * TILE], [64, TILE], target_memory=pl.Mem.Mat)
                la_k = pl.move(ta_k, target_memory=pl.Mem.Left)
                tb_k = pl.load(b, [k * TILE, 0], [TILE, 64], target_memory=pl.Mem.Mat)
                rb_k = pl.move(tb_k, pl.Mem.Right)
                acc_next = pl.matmul_acc(acc_in, la_k, rb_k)
                acc_out = pl.yield_(acc_next)
            c = pl.store(acc_out, [0, 0], c)
            return c

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[128, 64], pl.FP32],
                 c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            c = self.matmul_k(a, b, c)
            return c
    return Matmul


def multi():
    @pl.program
    class Multi:
        @pl.function(type=pl.FunctionType.InCore)
        def add_k(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
                  out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
            t = pl.add(pl.load(a, [0, 0], [64, 64]), pl.load(b, [0, 0], [64, 64]))
            out = pl.store(t, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.InCore)
        def scale_k(self, a: pl.Tensor[[64, 64], pl.FP32],
                    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            t = pl.load(a, [0, 0], [64, 64])
            t = t * 2.0
            t = pl.exp(t) + t
            out = pl.store(t, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            tmp = pl.create_tensor([64, 64], dtype=pl.FP32)
            tmp = self.add_k(a, b, tmp, attrs={"arg_directions": [pl.adir.input, pl.adir.input, pl.adir.output]})
            out = self.scale_k(tmp, out)
            return out
    return Multi


def loops():
    @pl.program
    class Loops:
        @pl.function
        def rows(self, x: pl.Tensor[[M, 64], pl.FP32], y: pl.Out[pl.Tensor[[M, 64], pl.FP32]],
                 n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[M, 64], pl.FP32]:
            for i in pl.range(n):
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="row_block"):
                    t = pl.load(x, [i * 16, 0], [16, 64])
                    y[i * 16:i * 16 + 16, :] = pl.relu(t)
            for j in pl.parallel(0, 4, 1):
                if j == 0:
                    pass
                else:
                    pass
            for u in pl.unroll(0, 2, 1):
                pass
            with pl.scope():
                k = n + 1
                h = pl.max(k, 3)
            return y
    return Loops


def tensor_ops():
    @pl.program
    class TensorOps:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[64, 64], pl.FP16], w: pl.Tensor[[64, 32], pl.FP16],
                 out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                h = pl.matmul(a, w, out_dtype=pl.FP32)
                s = pl.row_sum(h)
                v = pl.row_expand_div(h, s)
                v = pl.cast(pl.cast(v, pl.FP16), dtype=pl.FP32)
                out[:] = -v + 1.0
            return out
    return TensorOps


ALL = [quickstart_tensor, quickstart_tile, softmax, matmul, multi, loops, tensor_ops]
