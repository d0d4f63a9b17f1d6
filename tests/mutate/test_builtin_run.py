"""Built-in mutator results run under the Triton interpreter and match the task
reference at the task's check shapes, for the default config and one other config.

Trusted code only: the sources come from the project's seed kernels through the
mutator's own edits, so the test runs them in-process.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import random
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"   # before any kernel module is imported

import pytest
import torch

from kernelfoundry.candidate import kernel_configs, parse_param_space
from kernelfoundry.mutate.ast_module import KernelModule, Skip
from kernelfoundry.mutate.base import MutationRequest, ParentView
from kernelfoundry.mutate.builtin import OPERATORS, BuiltinMutator
from kernelfoundry.mutate.ops_base import OpContext
from kernelfoundry.task import Task, load_task

TASKS = Path(__file__).resolve().parents[2] / "experiments" / "tasks"
OPS = {op.name: op for op in OPERATORS}
_counter = itertools.count()


def load_module(source: str, tmp_path: Path):
    """Import *source* from a file (Triton reads kernel source through inspect)."""
    name = f"builtin_mutated_{next(_counter)}"
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_inputs(task: Task, env: dict[str, int], gen: torch.Generator) -> list[torch.Tensor]:
    out = []
    for spec in task.inputs:
        shape = spec.concrete_shape(env)
        dtype = getattr(torch, spec.dtype)
        if spec.is_float:
            out.append(torch.randn(shape, generator=gen).to(dtype))
        elif spec.dtype == "bool":
            out.append(torch.randint(0, 2, shape, generator=gen).bool())
        else:
            out.append(torch.randint(spec.bound(spec.low, env), spec.bound(spec.high, env), shape,
                                     generator=gen).to(dtype))
    return out


def mismatch(task: Task, source: str, tmp_path: Path, *, configs: int = 2) -> str | None:
    """None when *source* matches the reference for its default config and one other
    (hints at their defaults) at every check shape; else what went wrong."""
    module = load_module(source, tmp_path)
    namespace: dict = {}
    exec(task.reference, namespace)
    space = parse_param_space(source)
    hints = {k: space[k][0] for k in ("num_warps", "num_stages") if k in space}
    gen = torch.Generator().manual_seed(0)
    try:
        for config in kernel_configs(space, cap=configs, seed=1):
            for env in task.check_shapes:
                inputs = make_inputs(task, env, gen)
                out = module.launch(*[t.clone() for t in inputs], **config, **hints)
                ref = namespace["reference"](*inputs)
                if out.shape != ref.shape or not torch.allclose(out.float(), ref.float(), atol=task.atol,
                                                                rtol=task.rtol):
                    return f"config {config} shape {env}: output differs from the reference"
    finally:
        sys.modules.pop(module.__name__, None)
    return None


def task(name: str) -> Task:
    return load_task(TASKS / f"{name}.yaml")


def apply(op_name: str, source: str, seed: int = 0) -> str:
    module = KernelModule.parse(source)
    edit = OPS[op_name].apply(OpContext(module=module, rng=random.Random(seed),
                                        parent=ParentView(id=1, source=source)))
    return module.render(edit.tree)


SEED_CASES = [("softmax", op) for op in ("grow_block", "shrink_block", "promote_default", "online_softmax",
                                         "rows_per_program", "whole_row")] + \
             [("matmul", op) for op in ("grow_block", "promote_default", "grouped_order", "rows_per_program")]


@pytest.mark.parametrize("task_name,op_name", SEED_CASES)
def test_operator_result_matches_reference(task_name, op_name, tmp_path):
    t = task(task_name)
    new = apply(op_name, t.seeds[0].read_text())
    assert len(kernel_configs(parse_param_space(new), cap=2)) == 2   # a second config exists to check
    assert mismatch(t, new, tmp_path) is None


def test_stacked_structural_edits_match_reference(tmp_path):
    t = task("softmax")
    source = t.seeds[0].read_text()
    for op_name in ("rows_per_program", "online_softmax", "whole_row", "grow_block"):
        source = apply(op_name, source)
    assert mismatch(t, source, tmp_path) is None
    m = task("matmul")
    source = m.seeds[0].read_text()
    for op_name in ("rows_per_program", "grouped_order", "grow_block"):
        source = apply(op_name, source)
    assert "GROUP_M" in source and "TILES_PER_PROGRAM" in source
    assert mismatch(m, source, tmp_path) is None


GRID_2D = '''"""Matmul on a 2-D grid (program_id(0) = tile row, program_id(1) = tile column)."""
import torch
import triton
import triton.language as tl

PARAMS = {"BLOCK_M": [16, 32], "BLOCK_N": [32, 16], "BLOCK_K": [16], "num_warps": [4], "num_stages": [1]}


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + rk
        a = tl.load(a_ptr + rm[:, None] * sam + kk[None, :] * sak, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * sbk + rn[None, :] * sbn, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch(a, b, *, BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages):
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    mm_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                    c.stride(0), c.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                    num_warps=num_warps, num_stages=num_stages)
    return c
'''


def test_grouped_order_on_a_2d_grid(tmp_path):
    m = task("matmul")
    assert mismatch(m, GRID_2D, tmp_path) is None
    new = apply("grouped_order", GRID_2D)
    assert "tl.program_id(1)" not in new and "GROUP_M" in parse_param_space(new)
    assert mismatch(m, new, tmp_path, configs=3) is None


def test_a_grid_shared_by_two_launches_is_rewritten_for_one_only(tmp_path):
    """rows_per_program after split_k: the named grid also sizes the split-K launch and its scratch
    buffer, so the coarsened launch gets its own grid (a 20-step chain found this: wrong results at
    SPLIT_K=4)."""
    source = apply("rows_per_program", apply("split_k", task("matmul").seeds[0].read_text()))
    assert "split_grid = (grid[0], SPLIT_K)" in source
    module = load_module(source, tmp_path)
    try:
        gen = torch.Generator().manual_seed(0)
        space = parse_param_space(source)
        for split_k, tiles in itertools.product(space["SPLIT_K"], space["TILES_PER_PROGRAM"]):
            # fresh inputs per config: a freed output buffer must not hold the right answer already
            a, b = torch.randn((64, 80), generator=gen), torch.randn((80, 48), generator=gen)
            config = {k: v[0] for k, v in space.items()} | {"SPLIT_K": split_k, "TILES_PER_PROGRAM": tiles}
            assert torch.allclose(module.launch(a, b, **config), a @ b, atol=1e-4, rtol=1e-4), config
    finally:
        sys.modules.pop(module.__name__, None)


def test_crossover_child_matches_reference(tmp_path):
    m = task("matmul")
    naive = m.seeds[0].read_text()
    grouped = apply("grouped_order", naive)
    coarse = apply("rows_per_program", apply("grow_block", naive))
    request = MutationRequest(task=m, parent=ParentView(id=1, source=coarse), kind="crossover",
                              inspirations=[ParentView(id=2, source=grouped)], seed=0)
    children = [BuiltinMutator(seed=s).propose(request) for s in range(3)]
    grafted = [c for c in children if c.mutator == "builtin:graft_order"]
    assert grafted, [c.error or c.mutator for c in children]
    assert "GROUP_M" in grafted[0].source and "TILES_PER_PROGRAM" in grafted[0].source
    for child in children:
        assert child.source is not None and mismatch(m, child.source, tmp_path) is None


def test_swapped_kernel_child_matches_reference(tmp_path):
    t = task("softmax")
    source = t.seeds[0].read_text()
    online, single = apply("online_softmax", source), apply("whole_row", apply("grow_block", source))
    module = KernelModule.parse(single)
    ctx = OpContext(module=module, rng=random.Random(1), parent=ParentView(id=1, source=single),
                    other=KernelModule.parse(online))
    edit = OPS["swap_kernel"].apply(ctx)
    child = module.render(edit.tree)
    assert child not in (online, single)
    assert mismatch(t, child, tmp_path) is None


@pytest.mark.parametrize("task_name", ["softmax", "matmul"])
def test_chain_of_20_mutations_stays_correct(task_name, tmp_path):
    """20 seeded mutations in sequence, each applied to the previous result."""
    t = task(task_name)
    source = t.seeds[0].read_text()
    mutator = BuiltinMutator(seed=7)
    correct, applied, used = 0, 0, set()
    for step in range(20):
        proposal = mutator.propose(MutationRequest(task=t, parent=ParentView(id=step, source=source), seed=step))
        if proposal.source is None:
            continue
        applied += 1
        used.add(proposal.mutator)
        source = proposal.source
        correct += mismatch(t, source, tmp_path) is None
    share = correct / applied
    print(f"{task_name}: {correct}/{applied} chained mutations correct ({share:.0%}); operators {sorted(used)}")
    assert applied == 20 and share >= 0.9
    assert len(used) >= 5


#: Structural operators expected to apply to the other task suites' seeds.
OTHER_CASES = [
    ("cross_entropy", "online_softmax"), ("cross_entropy", "whole_row"), ("layernorm", "whole_row"),
    ("layernorm", "rows_per_program"), ("gemm_sigmoid_sum_lse", "grouped_order"),
    ("gemm_sigmoid_sum_lse", "online_softmax"), ("matmul_bias_relu", "grouped_order"),
    ("cumsum", "whole_row"), ("relu", "rows_per_program"), ("gelu", "grow_block"),
]


@pytest.mark.parametrize("task_name,op_name", OTHER_CASES)
def test_operators_generalise_to_other_tasks(task_name, op_name, tmp_path):
    path = TASKS / f"{task_name}.yaml"
    if not path.exists():
        pytest.skip(f"{path.name} is not in this checkout")
    t = load_task(path)
    try:
        new = apply(op_name, t.seeds[0].read_text())
    except Skip as exc:
        pytest.fail(f"{op_name} does not apply to {task_name}: {exc}")
    assert mismatch(t, new, tmp_path, configs=1) is None


def test_graft_onto_an_inline_mapping_matches_reference(tmp_path):
    path = TASKS / "matmul_bias_relu.yaml"
    if not path.exists():
        pytest.skip(f"{path.name} is not in this checkout")
    t = load_task(path)
    source = t.seeds[0].read_text()
    grouped, wide = apply("grouped_order", source), apply("grow_block", source)
    module = KernelModule.parse(wide)
    ctx = OpContext(module=module, rng=random.Random(0), parent=ParentView(id=1, source=wide),
                    other=KernelModule.parse(grouped))
    child = module.render(OPS["graft_order"].apply(ctx).tree)
    assert "GROUP_M" in parse_param_space(child)
    assert mismatch(t, child, tmp_path, configs=3) is None
