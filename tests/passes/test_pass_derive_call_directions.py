"""DeriveCallDirections: each kernel call records how it uses each argument."""
import pypto.language as pl
from pypto.ir.nodes import ArgDir

from pass_helpers import before, calls, fn, roundtrip, run

NAME = "DeriveCallDirections"


def derive(prog):
    return run(before(prog, NAME), NAME)


def kernel_calls(f):
    return [c for c in calls(f) if c.callee]


def test_in_and_out_params_give_input_and_output_existing():
    @pl.program
    class P:
        @pl.function
        def add(self, a: pl.Tensor[[128, 128], pl.FP32], b: pl.Tensor[[128, 128], pl.FP32],
                out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.add(a, b)
            return out

    out = derive(P)
    (c,) = kernel_calls(fn(out, "add"))
    assert c.attrs["arg_directions"] == [ArgDir.input, ArgDir.input, ArgDir.output_existing]
    assert 'attrs={"arg_directions": [pl.adir.input, pl.adir.input, pl.adir.output_existing]}' in out.as_python()
    roundtrip(out)


def test_inout_and_scalar_params_in_a_loop():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 y: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            for i in pl.range(4):
                with pl.at(level=pl.Level.CORE_GROUP):
                    t = pl.load(y, [i * 16, 0], [16, 64])
                    y[i * 16:i * 16 + 16, :] = pl.add(t, pl.load(x, [i * 16, 0], [16, 64]))
            return y

    out = derive(P)
    (c,) = kernel_calls(fn(out, "main"))
    k = fn(out, c.callee)
    assert [p.var.name for p in k.params] == ["y__iter_v0", "i", "x"]
    assert c.attrs["arg_directions"] == [ArgDir.inout, ArgDir.scalar, ArgDir.input]
    roundtrip(out)


def test_every_call_of_a_two_kernel_program_gets_directions():
    @pl.program
    class P:
        @pl.function
        def main(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            tmp = pl.create_tensor([64, 64], dtype=pl.FP32)
            with pl.at(level=pl.Level.CORE_GROUP):
                tmp[:] = pl.add(a, b)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale"):
                out[:] = pl.mul(tmp, 2.0)
            return out

    out = derive(P)
    first, second = kernel_calls(fn(out, "main"))
    assert first.attrs["arg_directions"] == [ArgDir.input, ArgDir.input, ArgDir.output_existing]
    assert second.attrs["arg_directions"] == [ArgDir.input, ArgDir.output_existing]
    # kernels call nothing, and op calls carry no directions
    assert all("arg_directions" not in c.attrs for f in out.functions if f.is_kernel for c in calls(f))


def test_directions_written_by_the_user_are_kept():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32],
              out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            out = pl.store(pl.exp(pl.load(a, [0, 0], [64, 64])), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[64, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            tmp = pl.create_tensor([64, 64], dtype=pl.FP32)
            tmp = self.k(a, tmp, attrs={"arg_directions": [pl.adir.no_dep, pl.adir.output]})
            out = self.k(tmp, out)
            return out

    out = derive(P)
    first, second = kernel_calls(fn(out, "main"))
    assert first.attrs["arg_directions"] == [ArgDir.no_dep, ArgDir.output]
    assert second.attrs["arg_directions"] == [ArgDir.input, ArgDir.output_existing]


def test_idempotent():
    @pl.program
    class P:
        @pl.function
        def add(self, a: pl.Tensor[[64, 64], pl.FP32],
                out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.exp(a)
            return out

    once = derive(P)
    assert run(once, NAME).as_python() == once.as_python()
