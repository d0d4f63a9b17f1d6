"""Built-in mutator: operator applicability, validity, bounds, determinism, crossover
and repair, checked statically (no kernel runs here; see test_builtin_run.py)."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from kernelfoundry.candidate import parse_param_space, space_size
from kernelfoundry.mutate.ast_module import KernelModule, Skip
from kernelfoundry.mutate.base import MutationRequest, ParentView
from kernelfoundry.mutate.builtin import OPERATORS, BuiltinMutator
from kernelfoundry.mutate.ops_base import MAX_CONFIGS, MAX_VALUES, OpContext
from kernelfoundry.task import load_task

TASKS = Path(__file__).resolve().parents[2] / "experiments" / "tasks"
OPS = {op.name: op for op in OPERATORS}

#: Operators that must apply to each seed (the rest must skip cleanly).
APPLIES = {
    "softmax": {"grow_block", "shrink_block", "add_warps", "add_stages", "drop_value", "promote_default",
                "online_softmax", "rows_per_program", "whole_row", "persistent", "split_row"},
    "matmul": {"grow_block", "add_warps", "add_stages", "drop_value", "promote_default", "grouped_order",
               "rows_per_program", "split_k", "gemm_tiles"},
}


def seed_source(task: str) -> str:
    return load_task(TASKS / f"{task}.yaml").seeds[0].read_text()


def apply(op_name: str, source: str, seed: int = 0, parent: ParentView | None = None) -> tuple[str, str]:
    module = KernelModule.parse(source)
    ctx = OpContext(module=module, rng=random.Random(seed), parent=parent or ParentView(id=1, source=source))
    edit = OPS[op_name].apply(ctx)
    return module.render(edit.tree), edit.description


def request(task: str, source: str, *, seed: int = 0, kind: str = "mutate", other: str | None = None,
            **parent_fields) -> MutationRequest:
    inspirations = [ParentView(id=2, source=other)] if other is not None else []
    return MutationRequest(task=load_task(TASKS / f"{task}.yaml"), parent=ParentView(id=1, source=source,
                           **parent_fields), kind=kind, inspirations=inspirations, seed=seed)


@pytest.mark.parametrize("task", sorted(APPLIES))
@pytest.mark.parametrize("op_name", sorted(n for n, op in OPS.items() if op.kind == "mutate"))
def test_mutate_operator_on_seed(task, op_name):
    source = seed_source(task)
    if op_name not in APPLIES[task]:
        with pytest.raises(Skip) as info:
            apply(op_name, source)
        assert str(info.value)
        return
    new, description = apply(op_name, source)
    assert description
    space = parse_param_space(new)          # parses and PARAMS is valid
    assert ast.dump(ast.parse(new)) != ast.dump(ast.parse(source))
    assert all(len(v) <= MAX_VALUES for v in space.values()) and space_size(space) <= MAX_CONFIGS
    KernelModule.parse(new)                 # still has launch and a jit kernel


def test_structural_edits_do_what_they_say():
    grouped, _ = apply("grouped_order", seed_source("matmul"))
    assert "GROUP_M: tl.constexpr" in grouped and "GROUP_M=GROUP_M" in grouped
    assert parse_param_space(grouped)["GROUP_M"] == [8, 1, 4]
    online, _ = apply("online_softmax", seed_source("softmax"))
    assert online.count("for start in range") == 2 and "row_max" not in online
    rows, _ = apply("rows_per_program", seed_source("softmax"))
    assert "ROWS_PER_PROGRAM" in parse_param_space(rows) and "grid_size=n_rows" in rows
    single, _ = apply("whole_row", seed_source("softmax"))
    row_kernel = single[single.index("def softmax_kernel_row"):single.index("def launch")]
    assert "for " not in row_kernel and row_kernel.count("tl.load") == 1
    assert "triton.next_power_of_2(n_cols) <= 16384" in single


def test_param_edits_keep_comments_and_other_text():
    source = seed_source("softmax")
    new, _ = apply("add_warps", source)
    old_lines = [l for l in source.splitlines() if not l.startswith("PARAMS")]
    new_lines = [l for l in new.splitlines() if not l.startswith("PARAMS")]
    assert old_lines == new_lines


def test_param_growth_stays_bounded():
    source = seed_source("matmul")
    for step in range(40):
        for name in ("grow_block", "add_warps", "add_stages", "shrink_block"):
            try:
                source, _ = apply(name, source, seed=step)
            except Skip:
                pass
    space = parse_param_space(source)
    assert all(16 <= v <= 256 for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K") for v in space[k])
    assert set(space["num_warps"]) <= {1, 2, 4, 8, 16} and set(space["num_stages"]) <= {1, 2, 3, 4, 5}
    assert max(space["BLOCK_M"]) == 256      # grew to the bound, never past it
    assert all(len(v) <= MAX_VALUES for v in space.values()) and space_size(space) <= MAX_CONFIGS
    with pytest.raises(Skip):
        for _ in range(10):
            source, _ = apply("add_warps", source)


def test_promote_default_uses_the_models_best_config():
    source = seed_source("softmax")
    parent = ParentView(id=1, source=source, hardware={"h100": {"best_params": {"BLOCK_N": 512, "num_warps": 4}}})
    new, description = apply("promote_default", source, parent=parent)
    assert parse_param_space(new)["BLOCK_N"] == [512, 256] and "best" in description


def test_same_seed_same_proposal_and_seeds_vary():
    mutator = BuiltinMutator(seed=3)
    source = seed_source("matmul")
    first = mutator.propose(request("matmul", source, seed=11))
    again = BuiltinMutator(seed=3).propose(request("matmul", source, seed=11))
    assert first.source is not None and first.to_dict() == again.to_dict()
    outputs = {mutator.propose(request("matmul", source, seed=s)).mutator for s in range(12)}
    assert len(outputs) >= 3


def test_proposal_fields():
    proposal = BuiltinMutator().propose(request("softmax", seed_source("softmax"), seed=5))
    assert proposal.error is None and proposal.mutator.startswith("builtin:")
    assert proposal.mutator.split(":")[1] in OPS and proposal.parent_ids == (1,) and proposal.description


def test_crossover_of_different_tasks_is_refused():
    proposal = BuiltinMutator().propose(request("softmax", seed_source("softmax"), kind="crossover",
                                                other=seed_source("matmul")))
    assert proposal.source is None and "incompatible" in proposal.error
    assert proposal.parent_ids == (1, 2)


def test_crossover_without_inspiration_is_an_error():
    proposal = BuiltinMutator().propose(request("softmax", seed_source("softmax"), kind="crossover"))
    assert proposal.source is None and "inspiration" in proposal.error


def test_graft_order_brings_grouped_mapping_and_its_parameter():
    naive = seed_source("matmul")
    grouped, _ = apply("grouped_order", naive)
    wide, _ = apply("grow_block", naive)
    module = KernelModule.parse(wide)
    ctx = OpContext(module=module, rng=random.Random(0), parent=ParentView(id=1, source=wide),
                    other=KernelModule.parse(grouped))
    edit = OPS["graft_order"].apply(ctx)
    child = module.render(edit.tree)
    space = parse_param_space(child)
    assert space["GROUP_M"] == [8, 1, 4] and space["BLOCK_N"] == [16, 32, 64]
    assert "group_size_m" in child and "GROUP_M=GROUP_M" in child


def test_swap_kernel_combines_structures_of_both_parents():
    source = seed_source("softmax")
    online, _ = apply("online_softmax", source)
    single, _ = apply("whole_row", source)
    module = KernelModule.parse(single)
    ctx = OpContext(module=module, rng=random.Random(0), parent=ParentView(id=1, source=single),
                    other=KernelModule.parse(online))
    child = module.render(OPS["swap_kernel"].apply(ctx).tree)
    assert "m_safe" in child and "softmax_kernel_row" in child      # online kernel, single-pass dispatch
    coarse, _ = apply("rows_per_program", source)                    # signatures differ: nothing to swap
    ctx = OpContext(module=KernelModule.parse(coarse), rng=random.Random(0),
                    parent=ParentView(id=1, source=coarse), other=KernelModule.parse(online))
    with pytest.raises(Skip):
        OPS["swap_kernel"].apply(ctx)


def test_crossover_proposals_differ_from_both_parents():
    naive = seed_source("matmul")
    grouped, _ = apply("grouped_order", naive)
    wide, _ = apply("add_stages", naive)
    used = set()
    for seed in range(6):
        proposal = BuiltinMutator().propose(request("matmul", wide, kind="crossover", other=grouped, seed=seed))
        assert proposal.source is not None, proposal.error
        used.add(proposal.mutator)
        dump = ast.dump(ast.parse(proposal.source))
        assert dump not in (ast.dump(ast.parse(wide)), ast.dump(ast.parse(grouped)))
    assert {"builtin:graft_order", "builtin:cross_params"} <= used


def test_crossover_with_nothing_to_combine_mutates_the_first_parent():
    naive = seed_source("matmul")
    grouped, _ = apply("grouped_order", naive)      # grafting back would only recreate a parent
    proposal = BuiltinMutator().propose(request("matmul", naive, kind="crossover", other=grouped))
    assert proposal.source is not None and proposal.parent_ids == (1,)
    assert proposal.description.startswith("crossover had nothing to combine")
    assert ast.dump(ast.parse(proposal.source)) not in (ast.dump(ast.parse(naive)), ast.dump(ast.parse(grouped)))


def test_fix_drops_values_named_by_feedback():
    source, _ = apply("grow_block", seed_source("softmax"))
    proposal = BuiltinMutator().propose(request(
        "softmax", source, kind="fix", passed=False, gate="correctness",
        feedback="shape {M=7, N=129}, config BLOCK_N=1024: output differs"))
    assert proposal.mutator == "builtin:drop_failing_values"
    assert parse_param_space(proposal.source)["BLOCK_N"] == [256, 512]


def test_fix_removes_a_single_pass_variant():
    source = seed_source("softmax")
    single, _ = apply("whole_row", source)
    new, _ = apply("drop_row_variant", single)
    assert ast.dump(ast.parse(new)) == ast.dump(ast.parse(source))


def test_fix_with_nothing_to_repair_is_an_error():
    source = seed_source("softmax")
    narrow, _ = apply("narrow_to_default", source)
    proposal = BuiltinMutator().propose(request("softmax", narrow, kind="fix", passed=False, gate="hack",
                                                feedback="`open` is not allowed"))
    assert proposal.source is None and "drop_failing_values" in proposal.error


@pytest.mark.parametrize("bad", ["def launch(:\n", "import triton\nPARAMS = {}\n",
                                 "PARAMS = {'B': [1]}\ndef launch(x, *, B):\n    return x\n"])
def test_unusable_parent_is_an_error(bad):
    proposal = BuiltinMutator().propose(request("softmax", bad))
    assert proposal.source is None and proposal.error.startswith("parent #1 cannot be edited")


def test_unknown_kind_is_an_error():
    proposal = BuiltinMutator().propose(request("softmax", seed_source("softmax"), kind="explode"))
    assert proposal.source is None and "unknown request kind" in proposal.error


def test_fix_drops_the_non_default_values_of_a_failing_config():
    source, _ = apply("rows_per_program", seed_source("softmax"))      # BLOCK_N [256, 512], ROWS [4, 2, 8]
    feedback = ("shape {M=64, N=1000}, profile 'normal', config BLOCK_N=512,ROWS_PER_PROGRAM=4: "
                "output 0 differs")
    proposal = BuiltinMutator().propose(request("softmax", source, kind="fix", passed=False, gate="correctness",
                                                feedback=feedback))
    space = parse_param_space(proposal.source)
    assert space["BLOCK_N"] == [256] and space["ROWS_PER_PROGRAM"] == [4, 2, 8]


def test_proposals_do_not_depend_on_the_hash_seed(tmp_path):
    """Same request in fresh interpreters with different PYTHONHASHSEEDs -> same source."""
    import os
    import subprocess
    import sys
    script = tmp_path / "propose.py"
    script.write_text(
        "import sys, hashlib\n"
        "from pathlib import Path\n"
        "from kernelfoundry.task import load_task\n"
        "from kernelfoundry.mutate.base import MutationRequest, ParentView\n"
        "from kernelfoundry.mutate.builtin import BuiltinMutator\n"
        f"task = load_task({str(TASKS / 'matmul.yaml')!r})\n"
        "src = task.seeds[0].read_text()\n"
        "out = []\n"
        "for s in range(6):\n"
        "    p = BuiltinMutator(seed=2).propose(MutationRequest(task=task, parent=ParentView(id=0, source=src), seed=s))\n"
        "    src = p.source or src\n"
        "    out.append(p.mutator)\n"
        "print(out, hashlib.sha256(src.encode()).hexdigest())\n")
    root = Path(__file__).resolve().parents[2]
    results = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(root)}
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        results.add(done.stdout)
    assert len(results) == 1


def test_renderer_keeps_comments_and_survives_shared_lines():
    source = seed_source("softmax").replace(
        "@triton.jit\ndef softmax_kernel", "# the kernel\n@triton.jit(debug=False)\ndef softmax_kernel")
    new, _ = apply("online_softmax", source)
    assert "# the kernel\n@triton.jit(debug=False)\ndef softmax_kernel" in new
    assert new.startswith('"""Naive softmax')
    crammed = source.replace("import torch\nimport triton\n", "import torch; import triton\n")
    new, _ = apply("grow_block", crammed)                       # falls back to a full unparse
    assert parse_param_space(new)["BLOCK_N"] == [256, 512, 1024] and "import triton" in new


def test_an_operator_bug_is_reported_not_raised():
    from kernelfoundry.mutate.ops_base import Operator

    def broken(ctx):
        raise KeyError("oops")

    mutator = BuiltinMutator(operators=[Operator("broken", "mutate", 1.0, broken)])
    proposal = mutator.propose(request("softmax", seed_source("softmax")))
    assert proposal.source is None and "broken: internal error KeyError" in proposal.error
