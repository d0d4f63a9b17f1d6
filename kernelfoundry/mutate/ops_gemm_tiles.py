"""GEMM tile set: move a ``tl.dot`` kernel's tile parameters to the tile shapes fast GEMMs use.

``grow_block`` moves one parameter by one power of two per edit, and the model scores a GEMM
tile change only once all three tiles are large together (data reuse grows with BLOCK_M and
BLOCK_N, pipelining with BLOCK_K and stages).  A built-in search at budget 30 never grew a
GEMM's BLOCK_M past 32.  This operator sets the whole set in one edit: output tiles
128 x 256 / 128 x 128 / 64 x ..., K steps of 64 and 32, 8 or 4 warps, 4 or 3 stages: the
shapes of the matmul tutorial's autotuning list in Triton's documentation and of CUTLASS's
default tile sizes.  The model and the compile gate then pick per hardware among them (a
config over a target's shared memory or registers is excluded there, e.g. fp32 128 x 256 x 64
at 4 stages).

Recognised: a launched kernel using ``tl.dot`` whose accumulator is ``tl.zeros((M_TILE,
N_TILE), ...)`` and whose K loop's ``range`` reads a constexpr ``K_TILE``, all three in
PARAMS.  Other parameters (GROUP_M, SPLIT_K, ...) keep their values; the tile values are
trimmed (K first) while the kernel space would exceed what the verifier traces.
"""

from __future__ import annotations

import ast
from typing import Any

from .ast_module import Skip, is_call_to, is_constexpr_arg, launched_kernels, loaded_names, uses_dot, write_params
from .ops_base import MAX_VALUES, TRACED_KERNEL_CONFIGS, Edit, OpContext, Operator, check_space, kernel_space_size

#: Tile values per role, the default first (Triton matmul tutorial autotune configs; CUTLASS defaults).
M_TILES = [128, 64]
N_TILES = [256, 128]
K_TILES = [64, 32]
WARPS = [8, 4]
STAGES = [4, 3]


def gemm_tile_params(fn: ast.FunctionDef) -> tuple[str, str, str] | None:
    """``(M_TILE, N_TILE, K_TILE)`` constexpr names of a ``tl.dot`` kernel, or None."""
    if not uses_dot(fn):
        return None
    constexprs = {a.arg for a in fn.args.args if is_constexpr_arg(a)}
    acc = None
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and is_call_to(node, "zeros") and node.args \
                and isinstance(node.args[0], (ast.Tuple, ast.List)) and len(node.args[0].elts) == 2 \
                and all(isinstance(e, ast.Name) and e.id in constexprs for e in node.args[0].elts):
            acc = (node.args[0].elts[0].id, node.args[0].elts[1].id)
            break
    if acc is None or acc[0] == acc[1]:
        return None
    # the K loop is the innermost loop around tl.dot (an outer loop may walk tiles: rows_per_program)
    k_loops = [n for n in ast.walk(fn) if isinstance(n, ast.For) and uses_dot(n)
               and not any(isinstance(m, ast.For) and uses_dot(m) for s in n.body for m in ast.walk(s))]
    if len(k_loops) == 1:
        steps = (loaded_names(k_loops[0].iter) & constexprs) - set(acc)
        if len(steps) == 1:
            return acc[0], acc[1], steps.pop()
    return None


def _merged(front: list[int], old: list[Any]) -> list[Any]:
    return (front + [v for v in old if v not in front])[:MAX_VALUES]


def gemm_tiles(ctx: OpContext) -> Edit:
    """Set a GEMM kernel's tile parameters (and warps, stages) to the fast-GEMM tile set."""
    space = {k: list(v) for k, v in ctx.module.space.items()}
    reasons = []
    for name, fn in launched_kernels(ctx.module.tree).items():
        found = gemm_tile_params(fn)
        if found is None:
            reasons.append(f"{name} has no tl.dot accumulator tl.zeros((M_TILE, N_TILE)) with a K loop over a "
                           f"constexpr K_TILE")
            continue
        m, n, k = found
        missing = [p for p in found if p not in space]
        if missing:
            reasons.append(f"{name}: {', '.join(missing)} not in PARAMS")
            continue
        new = dict(space)
        new[m], new[n], new[k] = list(M_TILES), list(N_TILES), list(K_TILES)
        for param in (k, m, n):
            while kernel_space_size(new) > TRACED_KERNEL_CONFIGS and len(new[param]) > 1:
                new[param] = new[param][:-1]
        if kernel_space_size(new) > TRACED_KERNEL_CONFIGS:
            reasons.append(f"{name}: its other parameters already fill the {TRACED_KERNEL_CONFIGS} traced configs")
            continue
        for hint, values in (("num_warps", WARPS), ("num_stages", STAGES)):
            if hint in space:          # launch() takes only the hints PARAMS already names
                new[hint] = _merged(values, space[hint])
        if new == space:
            raise Skip("PARAMS already hold the GEMM tile set")
        check_space(new)
        tree = ctx.module.clone()
        write_params(tree, new)
        hints = "".join(f", {h} {new[h]}" for h in ("num_warps", "num_stages") if h in new)
        return Edit(tree, f"{name}: GEMM tile set {m} in {new[m]}, {n} in {new[n]}, {k} in {new[k]}{hints}")
    raise Skip("; ".join(reasons) or "no launched kernel")


OPERATORS = (Operator("gemm_tiles", "mutate", 2.0, gemm_tiles),)
