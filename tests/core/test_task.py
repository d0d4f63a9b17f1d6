"""Task files: valid ones load; each kind of mistake names the file and field."""

from pathlib import Path

import pytest
import yaml

from kernelfoundry.errors import TaskError
from kernelfoundry.task import load_task, task_from_dict

TASKS = Path(__file__).parents[2] / "experiments" / "tasks"


def base() -> dict:
    return yaml.safe_load((TASKS / "softmax.yaml").read_text())


def test_softmax_task_loads_with_symbols_and_shapes():
    task = load_task(TASKS / "softmax.yaml")
    assert task.input_names == ("x",) and task.symbols == ("M", "N")
    assert task.input_shapes(task.target_shapes[0]) == {"x": (4096, 393216)}
    assert task.input_bytes({"M": 2, "N": 3}) == 24
    assert task.seeds[0].name == "softmax_naive.py"
    again = task_from_dict(task.to_dict(), check_files=False)
    assert again.inputs == task.inputs and again.target_shapes == task.target_shapes


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.pop("reference"), "'reference' is missing"),
    (lambda d: d.update(reference="def ref(x): return x"), "'reference' must define"),
    (lambda d: d.update(reference="def reference(x) return x"), "'reference' is not valid Python"),
    (lambda d: d.update(inputs={"x": {"shape": [0, "N"], "dtype": "float32"}}), "'inputs.x.shape'"),
    (lambda d: d.update(inputs={"x": {"shape": ["M", "N"], "dtype": "float8"}}), "'inputs.x.dtype'"),
    (lambda d: d.update(inputs={"i": {"shape": ["M"], "dtype": "int64"}}), "give its value range"),
    (lambda d: d["shapes"]["check"][0].pop("N"), "does not bind symbol(s) ['N']"),
    (lambda d: d["shapes"]["target"][0].update(Q=3), "binds unknown symbol(s) ['Q']"),
    (lambda d: d["shapes"]["target"][0].update(M=-1), "'shapes.target[0].M' must be a positive int"),
    (lambda d: d.update(tolerance={"atol": "x"}), "'tolerance'"),
    (lambda d: d.update(seeds=["kernels/missing.py"]), "'seeds[0]' names"),
    (lambda d: d.update(level=7), "'level'"),
    (lambda d: d.update(colour="red"), "unknown field(s) 'colour'"),
    (lambda d: d.update(hardware=[]), "'hardware'"),
    (lambda d: d["inputs"]["x"].update(low=200, high="N", dtype="int32"), "[200, 129) at shapes.check[0]"),
    (lambda d: d.update(tolerance={"atol": float("inf"), "rtol": 0.0}), "must be finite"),
    (lambda d: d.update(seeds=["kernels"]), "a directory, not a kernel file"),
])
def test_bad_fields_are_named(tmp_path, mutate, field):
    data = base()
    mutate(data)
    path = tmp_path / "kernels"
    path.mkdir()
    (path / "softmax_naive.py").write_text((TASKS / "kernels" / "softmax_naive.py").read_text())
    f = tmp_path / "task.yaml"
    f.write_text(yaml.safe_dump(data))
    with pytest.raises(TaskError) as info:
        load_task(f)
    assert field in str(info.value) and str(f) in str(info.value)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(TaskError, match="does not exist"):
        load_task(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(TaskError, match="not valid YAML"):
        load_task(bad)
    bad.write_text("- just\n- a list\n")
    with pytest.raises(TaskError, match="must be a YAML mapping"):
        load_task(bad)


@pytest.mark.parametrize("params, message", [
    ("{[1]: [2]}", "PARAMS must be a literal dict"),                     # unhashable key: not a crash
    ("{'BLOCK': [64], 'num_warps': [True]}", "num_warps"),                 # bool is not a warp count
    ("{'BLOCK': [64], 'num_stages': [False]}", "num_stages"),
])
def test_malformed_params_are_param_space_errors(params, message):
    from kernelfoundry.candidate import ParamSpaceError, parse_param_space
    with pytest.raises(ParamSpaceError, match=message):
        parse_param_space(f"PARAMS = {params}\n")
