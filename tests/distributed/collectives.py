"""Collectives written in the language from the cross-rank primitives (issue 13.5): one
source for any number of ranks (the kernels ask pld.nranks; the host shapes take the rank
count from the tensors). Each rank r holds x[r]."""
import pypto.language as pl
import pypto.language.distributed as pld

N = 64
W = pl.dynamic("W")       # the rank count, as the host tensors' leading dim


# ---------------------------------------------------------------- all-reduce (remote loads)
@pl.jit.incore
def allreduce_k(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                data: pld.DistributedTensor[[1, N], pl.FP32], signal: pld.DistributedTensor[[W, 1], pl.INT32]):
    ctx = pld.get_comm_ctx(data)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    acc = pl.load(x, [0, 0], [1, N])
    data = pl.store(acc, [0, 0], data)
    signal = pld.tensor.barrier(signal)                  # every rank staged its x
    for k in pl.range(1, n):
        acc = pl.add(acc, pld.tile.remote_load(data, (me + k) % n, [0, 0], [1, N]))
    y = pl.store(acc, [0, 0], y)
    return y


@pl.jit
def allreduce_rank(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                   data: pld.DistributedTensor[[1, N], pl.FP32], signal: pld.DistributedTensor[[W, 1], pl.INT32]):
    return allreduce_k(x, y, data, signal)


@pl.jit.host
def allreduce(x: pl.Tensor[[W, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[W, 1, N], pl.FP32]]):
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    signal_buf = pld.alloc_window_buffer([pld.world_size(), 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        allreduce_rank(x[r], y[r], pld.window(data_buf, [1, N], dtype=pl.FP32),
                       pld.window(signal_buf, [pld.world_size(), 1], dtype=pl.INT32), device=r)


# ---------------------------------------------------------------- all-reduce (atomic adds)
@pl.jit.incore
def allreduce_atomic_k(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                       acc: pld.DistributedTensor[[1, N], pl.FP32],
                       signal: pld.DistributedTensor[[W, 1], pl.INT32]):
    ctx = pld.get_comm_ctx(acc)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    t = pl.load(x, [0, 0], [1, N])
    for k in pl.range(n):                                 # x into every rank's sum, itself too
        pld.tile.remote_store(t, acc, (me + k) % n, [0, 0], atomic=pl.AtomicType.Add)
    signal = pld.tensor.barrier(signal)
    y = pl.store(pl.load(acc, [0, 0], [1, N]), [0, 0], y)
    return y


@pl.jit
def allreduce_atomic_rank(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                          acc: pld.DistributedTensor[[1, N], pl.FP32],
                          signal: pld.DistributedTensor[[W, 1], pl.INT32]):
    return allreduce_atomic_k(x, y, acc, signal)


@pl.jit.host
def allreduce_atomic(x: pl.Tensor[[W, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[W, 1, N], pl.FP32]]):
    acc_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    signal_buf = pld.alloc_window_buffer([pld.world_size(), 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        allreduce_atomic_rank(x[r], y[r], pld.window(acc_buf, [1, N], dtype=pl.FP32),
                              pld.window(signal_buf, [pld.world_size(), 1], dtype=pl.INT32), device=r)


# ---------------------------------------------------------------- all-gather
@pl.jit.incore
def allgather_k(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[W, N], pl.FP32]],
                data: pld.DistributedTensor[[1, N], pl.FP32], signal: pld.DistributedTensor[[W, 1], pl.INT32]):
    n = pld.nranks(pld.get_comm_ctx(data))
    data = pl.store(pl.load(x, [0, 0], [1, N]), [0, 0], data)
    signal = pld.tensor.barrier(signal)
    for p in pl.range(n):                                 # row p: rank p's x (its own copy for p = me)
        y = pl.store(pld.tile.remote_load(data, p, [0, 0], [1, N]), [p, 0], y)
    return y


@pl.jit
def allgather_rank(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[W, N], pl.FP32]],
                   data: pld.DistributedTensor[[1, N], pl.FP32], signal: pld.DistributedTensor[[W, 1], pl.INT32]):
    return allgather_k(x, y, data, signal)


@pl.jit.host
def allgather(x: pl.Tensor[[W, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[W, W, N], pl.FP32]]):
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    signal_buf = pld.alloc_window_buffer([pld.world_size(), 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        allgather_rank(x[r], y[r], pld.window(data_buf, [1, N], dtype=pl.FP32),
                       pld.window(signal_buf, [pld.world_size(), 1], dtype=pl.INT32), device=r)


# ---------------------------------------------------------------- reduce-scatter
@pl.jit.incore
def reduce_scatter_k(x: pl.Tensor[[W, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                     data: pld.DistributedTensor[[W, N], pl.FP32], signal: pld.DistributedTensor[[W, 1], pl.INT32]):
    ctx = pld.get_comm_ctx(data)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    for q in pl.range(n):                                 # stage x, chunk by chunk
        data = pl.store(pl.load(x, [q, 0], [1, N]), [q, 0], data)
    signal = pld.tensor.barrier(signal)
    acc = pld.tile.remote_load(data, me, [me, 0], [1, N])
    for k in pl.range(1, n):                              # chunk `me` of every rank's x
        acc = pl.add(acc, pld.tile.remote_load(data, (me + k) % n, [me, 0], [1, N]))
    y = pl.store(acc, [0, 0], y)
    return y


@pl.jit
def reduce_scatter_rank(x: pl.Tensor[[W, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                        data: pld.DistributedTensor[[W, N], pl.FP32],
                        signal: pld.DistributedTensor[[W, 1], pl.INT32]):
    return reduce_scatter_k(x, y, data, signal)


@pl.jit.host
def reduce_scatter(x: pl.Tensor[[W, W, N], pl.FP32], y: pl.Out[pl.Tensor[[W, 1, N], pl.FP32]]):
    data_buf = pld.alloc_window_buffer([pld.world_size(), N], dtype=pl.FP32)
    signal_buf = pld.alloc_window_buffer([pld.world_size(), 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        reduce_scatter_rank(x[r], y[r], pld.window(data_buf, [pld.world_size(), N], dtype=pl.FP32),
                            pld.window(signal_buf, [pld.world_size(), 1], dtype=pl.INT32), device=r)


# ---------------------------------------------------------------- broadcast (put + Set / Eq)
@pl.jit.incore
def broadcast_k(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                data: pld.DistributedTensor[[1, N], pl.FP32], ready: pld.DistributedTensor[[1, 1], pl.INT32]):
    ctx = pld.get_comm_ctx(data)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    if me == 0:                                           # the root sends its x to every rank
        for p in pl.range(n):
            pld.tensor.put(data, p, x)
            pld.system.notify(ready, p, [0, 0], 7, op=pld.NotifyOp.Set)
    pld.system.wait(ready, [0, 0], 7, cmp=pld.WaitCmp.Eq)
    y = pl.store(pl.load(data, [0, 0], [1, N]), [0, 0], y)
    return y


@pl.jit
def broadcast_rank(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                   data: pld.DistributedTensor[[1, N], pl.FP32], ready: pld.DistributedTensor[[1, 1], pl.INT32]):
    return broadcast_k(x, y, data, ready)


@pl.jit.host
def broadcast(x: pl.Tensor[[W, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[W, 1, N], pl.FP32]]):
    data_buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    ready_buf = pld.alloc_window_buffer([1, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        broadcast_rank(x[r], y[r], pld.window(data_buf, [1, N], dtype=pl.FP32),
                       pld.window(ready_buf, [1, 1], dtype=pl.INT32), device=r)
