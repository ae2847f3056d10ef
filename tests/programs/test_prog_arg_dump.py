"""The argument dump (issue 12): RunConfig(enable_dump_args=1) writes the arguments the
program tagged -- pl.dump_tag(value) (the launches that take that very value; one
rebound by a launch is another) and pl.submit(..., dumps=[...]) -- as they were when the
task was dispatched (what it reads) and when it completed (what it writes); level 2 dumps
every task's. The bytes in args_dump.bin are the tensors' values."""
import json

import numpy as np
import pytest
import torch

import pypto.errors as E
import pypto.language as pl
from pypto import ir
from pypto.runtime import ChipWorker, RunConfig

from prog_helpers import close, randn


@pl.jit.inline
def plus_one(a: pl.Tensor, c: pl.Tensor):
    pl.dump_tag(a)                                   # the caller's value, after inlining
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.add(pl.load(a, [0, 0], [64, 64]), 1.0), [0, 0], c)
    return c


@pl.jit.inline
def twice(a: pl.Tensor, c: pl.Tensor):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.mul(pl.load(a, [0, 0], [64, 64]), 2.0), [0, 0], c)
    return c


@pl.jit
def tagged(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    mid = pl.create_tensor([64, 64], dtype=pl.FP32)
    pl.dump_tag(mid)
    mid = plus_one(a, mid)          # writes mid: what twice reads is a new value, not tagged
    c = twice(mid, c)
    return c


@pl.program
class Submitted:
    @pl.function(type=pl.FunctionType.InCore)
    def stage1(self, x: pl.Tensor[[64, 64], pl.FP32],
               s: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        t = pl.add(pl.load(x, [0, 0], [64, 64]), pl.load(s, [0, 0], [64, 64]))
        s = pl.store(t, [0, 0], s)
        return s

    @pl.function(type=pl.FunctionType.InCore)
    def stage2(self, s: pl.Tensor[[64, 64], pl.FP32],
               out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        out = pl.store(pl.mul(pl.load(s, [0, 0], [64, 64]), 2.0), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], s: pl.InOut[pl.Tensor[[64, 64], pl.FP32]],
             out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.manual_scope():
            s, t1 = pl.submit(self.stage1, x, s, dumps=[x, s])
            out, _ = pl.submit(self.stage2, s, out, deps=[t1])
        return out


def manifest(d):
    m = json.loads((d / "args_dump" / "args_dump.json").read_text())
    return m["args"], (d / "args_dump" / m["bin_file"]).read_bytes()


def values(entry, blob):
    data = blob[entry["bin_offset"]:entry["bin_offset"] + entry["bin_size"]]
    return torch.from_numpy(np.frombuffer(data, dtype=np.float32).reshape(entry["shape"]).copy())


def test_dump_tag_dumps_the_launches_that_take_the_tagged_values(tmp_path):
    a, c = randn(64, 64, seed=1), torch.zeros(64, 64)
    tagged(a, c, config=RunConfig(enable_dump_args=1, dfx_output_dir=str(tmp_path)))
    close(c, (a + 1) * 2, 1e-6, 1e-6)
    entries, blob = manifest(tmp_path)
    assert {e["task_id"] for e in entries} == {"0"}                  # only plus_one's launch
    by_role = {(e["role"], e["stage"]): e for e in entries}
    assert set(by_role) == {("input", "before_dispatch"), ("output", "after_completion")}
    close(values(by_role["input", "before_dispatch"], blob), a, 0, 0)
    close(values(by_role["output", "after_completion"], blob), a + 1, 1e-6, 1e-6)
    assert all(e["dtype"] == "float32" and e["is_contiguous"] and e["strides"] == [64, 1] for e in entries)


def test_submit_dumps_and_level_two_dumps_everything(tmp_path):
    compiled = ir.compile(Submitted, output_dir=tmp_path / "out")
    x, out = randn(64, 64, seed=2), torch.zeros(64, 64)
    for level in (1, 2):
        s = torch.ones(64, 64)
        with ChipWorker() as w:
            w.run(compiled, x, s, out, config=RunConfig(enable_dump_args=level,
                                                        dfx_output_dir=str(tmp_path / f"l{level}")))
        close(out, (x + 1) * 2, 1e-6, 1e-6)
        entries, blob = manifest(tmp_path / f"l{level}")
        tasks = {e["task_id"] for e in entries}
        assert tasks == ({"0"} if level == 1 else {"0", "1"})
        first = [e for e in entries if e["task_id"] == "0"]
        # stage1's inout s: its value before (ones) and after (x + 1)
        ins = {(e["arg_index"], e["stage"]): e for e in first}
        assert ins[1, "before_dispatch"]["role"] == "inout"
        close(values(ins[1, "before_dispatch"], blob), torch.ones(64, 64), 0, 0)
        close(values(ins[1, "after_completion"], blob), x + 1, 1e-6, 1e-6)
        close(values(ins[0, "before_dispatch"], blob), x, 0, 0)


def test_dumps_names_only_the_launchs_arguments():
    with pytest.raises(E.ParserError, match="not an argument of this launch"):
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[64, 64], pl.FP32],
                  out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                out = pl.store(pl.load(x, [0, 0], [64, 64]), [0, 0], out)
                return out

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Tensor[[64, 64], pl.FP32],
                     out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                with pl.manual_scope():
                    out, _ = pl.submit(self.k, x, out, dumps=[y])
                return out


def test_a_strided_window_is_dumped_row_major():
    from pypto.runtime.arg_dump import window_bytes
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    data, contiguous = window_bytes(a.ctypes.data, 1 * 6 + 2, (2, 3), (6, 1), 4)
    assert not contiguous
    assert np.frombuffer(data, np.float32).tolist() == a[1:3, 2:5].ravel().tolist()
    data, contiguous = window_bytes(a.ctypes.data, 0, (3, 2), (1, 6), 4)       # a transposed view
    assert np.frombuffer(data, np.float32).tolist() == a[:2, :3].T.ravel().tolist()
