"""Hand-built trace records for model tests, with numbers computed from each kernel's shapes.

Each builder returns the :class:`LaunchTrace` the verifier's tracer would produce for a
textbook Triton kernel: per-program means of bytes, 32-byte sectors, unique footprint,
dot FLOPs and tiles, element ops, loop trips and the wave-footprint curve
(distinct sectors among programs 0..w-1 for w = 1, 2, 4, ... 256).
"""

from __future__ import annotations

import math

import numpy as np

from kernelfoundry.records import ConfigTrace, LaunchTrace, TensorTraffic

SECTOR = 32
ELEM = {"fp16": 2, "bf16": 2, "fp32": 4, "fp8": 1, "int8": 1, "fp64": 8}
WAVE_POINTS = [2 ** i for i in range(9)]        # 1 .. 256


def _points(P: int) -> list[int]:
    return [w for w in WAVE_POINTS if w <= P] or [1]


def _traffic(dtype, tensor_elems, *, load=0.0, store=0.0, load_sectors=0.0, store_sectors=0.0,
             unique_load=0.0, unique_store=0.0) -> TensorTraffic:
    return TensorTraffic(dtype=dtype, elem_bytes=ELEM[dtype], tensor_bytes=int(tensor_elems * ELEM[dtype]),
                         load_bytes=load, store_bytes=store, load_sectors=load_sectors,
                         store_sectors=store_sectors, unique_load_bytes=unique_load, unique_store_bytes=unique_store)


def _stream(dtype, n, block, *, load):
    """Contiguous block of *block* elements per program, nothing shared between programs."""
    b = block * ELEM[dtype]
    sec = math.ceil(b / SECTOR)
    if load:
        return _traffic(dtype, n, load=b, load_sectors=sec, unique_load=sec * SECTOR)
    return _traffic(dtype, n, store=b, store_sectors=sec, unique_store=sec * SECTOR)


def elementwise_trace(n: int, *, inputs: int = 2, block: int = 1024, dtype: str = "fp32", ops: float = 1.0,
                      transcendental: float = 0.0, kernel: str = "elementwise_kernel") -> LaunchTrace:
    """out = f(x0, ..., x{inputs-1}) over *n* contiguous elements, *block* per program."""
    P = math.ceil(n / block)
    traffic = {f"x{i}": _stream(dtype, n, block, load=True) for i in range(inputs)}
    traffic["out"] = _stream(dtype, n, block, load=False)
    sec = math.ceil(block * ELEM[dtype] / SECTOR)
    fp = {f"x{i}": [[w, w * sec] for w in _points(P)] for i in range(inputs)}
    return LaunchTrace(kernel=kernel, grid=(P, 1, 1), num_programs=P, sampled_programs=[0, P // 2, P - 1],
                       traffic=traffic, elementwise_ops=ops * block, transcendental_ops=transcendental * block,
                       max_block_elems=block, footprint=fp)


def copy_trace(n: int, *, block: int = 1024, dtype: str = "fp32") -> LaunchTrace:
    """y = x, coalesced."""
    return elementwise_trace(n, inputs=1, block=block, dtype=dtype, ops=0.0, kernel="copy_kernel")


def transposed_read_copy_trace(rows: int, cols: int, *, block: int = 1024, dtype: str = "fp32") -> LaunchTrace:
    """y = x.T for x of shape (rows, cols): program p writes ``block`` contiguous elements of
    y row ``p // (rows / block)``, reading them down a column of x (stride ``cols`` elements).

    Every element loaded sits in its own sector when the row pitch is >= 32 bytes; the other
    elements of that sector belong to programs ``rows / block`` ids away.
    """
    e = ELEM[dtype]
    nb = math.ceil(rows / block)
    P = cols * nb
    pitch = cols * e
    per_sector = max(1, SECTOR // pitch)             # x rows sharing one sector (pitch < 32 B)
    load_sectors = math.ceil(block / per_sector)
    fp = []
    for w in _points(P):
        ids = np.arange(w)
        col, chunk = ids // nb, ids % nb
        # distinct (chunk, sector column) pairs; sector column = col * e // 32
        distinct = len(set(zip(chunk.tolist(), (col * e // SECTOR).tolist())))
        fp.append([w, distinct * load_sectors])
    traffic = {"x": _traffic(dtype, rows * cols, load=block * e, load_sectors=load_sectors,
                             unique_load=load_sectors * SECTOR),
               "y": _stream(dtype, rows * cols, block, load=False)}
    return LaunchTrace(kernel="transpose_copy_kernel", grid=(P, 1, 1), num_programs=P,
                       sampled_programs=[0, P // 2, P - 1], traffic=traffic, max_block_elems=block,
                       footprint={"x": fp})


def _tile_ids(P: int, n_m: int, n_n: int, group_m: int, w: int):
    p = np.arange(w)
    if group_m <= 1:
        return p // n_n, p % n_n
    in_group = group_m * n_n
    first = (p // in_group) * group_m
    size = np.minimum(n_m - first, group_m)
    return first + (p % in_group) % size, (p % in_group) // size


def matmul_trace(M: int, N: int, K: int, *, bm: int, bn: int, bk: int, group_m: int = 1, dtype: str = "fp16",
                 bias: bool = False, relu: bool = False, kernel: str = "matmul_kernel") -> LaunchTrace:
    """C = A @ B (optionally + bias[N], ReLU in the epilogue), tiled bm x bn, K loop of bk,
    program order row-major (group_m = 1) or grouped as in Triton tutorial 03."""
    e = ELEM[dtype]
    n_m, n_n = math.ceil(M / bm), math.ceil(N / bn)
    P = n_m * n_n
    trips = math.ceil(K / bk)
    a_bytes, b_bytes = bm * K * e, K * bn * e
    a_sec, b_sec = math.ceil(bk * e / SECTOR) * bm * trips, math.ceil(bn * e / SECTOR) * bk * trips
    c_sec = bm * math.ceil(bn * e / SECTOR)
    traffic = {"a": _traffic(dtype, M * K, load=a_bytes, load_sectors=a_sec, unique_load=a_sec * SECTOR),
               "b": _traffic(dtype, K * N, load=b_bytes, load_sectors=b_sec, unique_load=b_sec * SECTOR),
               "c": _traffic(dtype, M * N, store=bm * bn * e, store_sectors=c_sec, unique_store=c_sec * SECTOR)}
    fp = {"a": [], "b": []}
    if bias:
        bias_sec = math.ceil(bn * e / SECTOR)
        traffic["bias"] = _traffic(dtype, N, load=bn * e, load_sectors=bias_sec, unique_load=bias_sec * SECTOR)
        fp["bias"] = []
    for w in _points(P):
        pm, pn = _tile_ids(P, n_m, n_n, group_m, w)
        fp["a"].append([w, len(set(pm.tolist())) * a_sec])
        fp["b"].append([w, len(set(pn.tolist())) * b_sec])
        if bias:
            fp["bias"].append([w, len(set(pn.tolist())) * bias_sec])
    epilogue = bm * bn * (1 + int(bias) + int(relu))
    return LaunchTrace(kernel=kernel, grid=(P, 1, 1), num_programs=P, sampled_programs=[0, P // 2, P - 1],
                       traffic=traffic, dot_flops={dtype: 2.0 * bm * bn * K}, dot_shapes=[(bm, bn, bk, dtype)],
                       dot_operand_bytes=float((bm * bk + bk * bn) * e), elementwise_ops=float(epilogue),
                       loop_trips=float(trips), max_block_elems=bm * bn, footprint=fp)


def bias_add_trace(M: int, N: int, *, block: int = 1024, dtype: str = "fp16", relu: bool = False) -> LaunchTrace:
    """out = x + bias[None, :] (or relu(x) when relu=True and no bias) over an (M, N) tensor."""
    n = M * N
    t = elementwise_trace(n, inputs=1, block=block, dtype=dtype, ops=1.0,
                          kernel="relu_kernel" if relu else "bias_add_kernel")
    if not relu:
        e = ELEM[dtype]
        sec = math.ceil(block * e / SECTOR)
        row_programs = max(1, N // block)
        t.traffic["bias"] = _traffic(dtype, N, load=block * e, load_sectors=sec, unique_load=sec * SECTOR)
        t.footprint["bias"] = [[w, min(w, row_programs) * sec] for w in _points(t.num_programs)]
    return t


def softmax_trace(M: int, N: int, *, block: int, passes: int = 3, dtype: str = "fp32") -> LaunchTrace:
    """Row softmax, one program per row, ``passes`` loops over the row in chunks of ``block``
    (3: max, sum, write; 2: online max+sum, write; 1: whole row in one block)."""
    e = ELEM[dtype]
    row_sec = math.ceil(N * e / SECTOR)
    trips = passes * math.ceil(N / block)
    traffic = {"x": _traffic(dtype, M * N, load=passes * N * e, load_sectors=passes * row_sec,
                             unique_load=row_sec * SECTOR),
               "y": _traffic(dtype, M * N, store=N * e, store_sectors=row_sec, unique_store=row_sec * SECTOR)}
    return LaunchTrace(kernel="softmax_kernel", grid=(M, 1, 1), num_programs=M, sampled_programs=[0, M // 2, M - 1],
                       traffic=traffic, elementwise_ops=float(4 * N), transcendental_ops=float((passes - 1 or 1) * N),
                       reduction_elems=float(2 * N), loop_trips=float(trips if passes > 1 else 0),
                       max_block_elems=block, footprint={"x": [[w, w * row_sec] for w in _points(M)]})


def config_trace(launches: list[LaunchTrace], config: dict, *, shape: dict | None = None,
                 shape_index: int = 0) -> ConfigTrace:
    return ConfigTrace(shape_index=shape_index, shape=dict(shape or {}), config=dict(config), launches=launches)
