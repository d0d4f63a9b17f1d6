"""The package as installed: hardware specs and prompt templates are package data (found through
importlib.resources), a user hardware directory is searched first, the ``kernelfoundry`` console
command dispatches to each tool, and a built wheel installed (not editable) into a fresh venv runs
a small evolve and a verify from another directory (docs/packaging.md)."""

import fnmatch
import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import kernelfoundry
from kernelfoundry import REPO_DIR, cli, data_dir
from kernelfoundry.errors import HardwareError
from kernelfoundry.mutate.prompts import DEFAULT_PROMPT_DIR, PromptRenderer
from kernelfoundry.perfmodel.hardware import (HARDWARE_DIR, HARDWARE_DIR_ENV, list_hardware, load_hardware,
                                              writable_hardware_dir)

RELU = REPO_DIR / "experiments" / "tasks" / "relu.yaml"
RELU_SEED = REPO_DIR / "experiments" / "tasks" / "kernels" / "relu_naive.py"


@pytest.fixture
def no_user_hardware(monkeypatch):
    monkeypatch.setenv(HARDWARE_DIR_ENV, "")      # restored (to unset) after the test
    return monkeypatch


def _my_hardware(directory: Path, name: str = "myhw", base: str = "a100") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    text = (HARDWARE_DIR / f"{base}.yaml").read_text()
    lines = [f"name: {name}" if ln.startswith("name:") else ln for ln in text.splitlines()]
    path = directory / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_data_is_the_repositorys_folders_through_the_package():
    assert data_dir("hardware") == HARDWARE_DIR and data_dir("prompts") == DEFAULT_PROMPT_DIR
    assert (HARDWARE_DIR / "h100.yaml").is_file() and (DEFAULT_PROMPT_DIR / "system.j2").is_file()
    # in a checkout the package's data/ links lead to the repository's folders (git holds one copy)
    for name in kernelfoundry.DATA_NAMES:
        link = kernelfoundry.PACKAGE_DIR / "data" / name
        assert link.is_symlink() and link.resolve() == (REPO_DIR / name).resolve()
    with pytest.raises(ValueError, match="experiments"):
        data_dir("experiments")


def test_every_data_file_is_in_the_wheels_package_data():
    config = tomllib.loads((REPO_DIR / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["kernelfoundry"]
    for name in kernelfoundry.DATA_NAMES:
        for path in (REPO_DIR / name).iterdir():
            rel = f"data/{name}/{path.name}"
            assert any(fnmatch.fnmatch(rel, p) for p in patterns), f"{rel} would not be in the wheel"


def test_user_hardware_dir_adds_and_overrides(tmp_path, no_user_hardware):
    mine = tmp_path / "hw"
    _my_hardware(mine)
    h100 = (HARDWARE_DIR / "h100.yaml").read_text().replace("description:", "description: MINE", 1)
    (mine / "h100.yaml").write_text(h100)
    assert "myhw" not in list_hardware()
    no_user_hardware.setenv(HARDWARE_DIR_ENV, str(mine))
    assert "myhw" in list_hardware() and "h100" in list_hardware()
    assert load_hardware("myhw").name == "myhw"
    assert load_hardware("h100").description.startswith("MINE")
    assert writable_hardware_dir() == mine
    with pytest.raises(HardwareError) as err:
        load_hardware("b300")
    assert str(mine) in str(err.value) and str(HARDWARE_DIR) in str(err.value) and "myhw" in str(err.value)
    no_user_hardware.setenv(HARDWARE_DIR_ENV, str(tmp_path / "nope"))
    with pytest.raises(HardwareError, match=f"hardware directory {tmp_path / 'nope'} .*{HARDWARE_DIR_ENV}"):
        load_hardware("h100")


def test_console_command_dispatches_and_takes_a_hardware_dir(tmp_path, capsys, no_user_hardware):
    assert cli.main(["--help"]) == 0 and "--hardware-dir" in capsys.readouterr().out
    assert cli.main([]) == 2
    assert cli.main(["frobnicate"]) == 2 and "unknown command 'frobnicate'" in capsys.readouterr().err
    assert cli.main(["--hardware-dir", str(tmp_path / "nope"), "hardware"]) == 2
    assert str(tmp_path / "nope") in capsys.readouterr().err
    _my_hardware(tmp_path / "hw")
    assert cli.main(["hardware", "myhw", "--json", "--hardware-dir", str(tmp_path / "hw")]) == 0
    assert json.loads(capsys.readouterr().out)["myhw"]["kind"] == "gpu"
    assert os.environ[HARDWARE_DIR_ENV] == str((tmp_path / "hw").resolve())
    for name, (module, _) in cli.COMMANDS.items():     # without importing them all (torch, ray: slow)
        spec = importlib.util.find_spec(module)
        assert spec and "\ndef main(" in Path(spec.origin).read_text(), name


def test_prompt_renderer_names_a_missing_user_dir(tmp_path):
    from kernelfoundry.mutate.prompts import PromptDirError
    with pytest.raises(PromptDirError, match=str(tmp_path / "nope")):
        PromptRenderer(tmp_path / "nope")


def test_cluster_bundle_carries_the_data_as_files(tmp_path):
    from kernelfoundry.search.cluster import stage_code
    bundle = stage_code(tmp_path / "bundle")
    for rel in ("kernelfoundry/data/hardware/h100.yaml", "kernelfoundry/data/prompts/system.j2"):
        path = bundle / rel
        assert path.is_file() and not path.is_symlink() and not path.parent.is_symlink(), rel


# --- the built wheel, installed --------------------------------------------------------------

def _build_wheel(tmp_path: Path) -> Path:
    """Build from a copy of the sources (the checkout gets no build/ folder)."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.egg-info")
    for name in ("kernelfoundry", *kernelfoundry.DATA_NAMES):
        shutil.copytree(REPO_DIR / name, src / name, symlinks=True, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO_DIR / name, src / name)
    dist = tmp_path / "dist"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                           "-q", "-w", str(dist), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = dist.glob("kernelfoundry-*.whl")
    return wheel


def _fresh_venv(tmp_path: Path, wheel: Path) -> Path:
    """A venv of the base interpreter with the wheel installed; the dependencies come from this
    environment's site-packages through a plain path in a .pth file (its own .pth files, such as an
    editable install's finder, are not run, so `import kernelfoundry` finds only the wheel)."""
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    proc = subprocess.run([base, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.skip(f"cannot create a venv with pip here: {proc.stderr[-500:]}")
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    Path(purelib, "_kernelfoundry_test_deps.pth").write_text("\n".join(deps) + "\n")
    proc = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return venv


@pytest.mark.slow
def test_wheel_installed_in_a_fresh_venv_runs_evolve_and_verify(tmp_path):
    pytest.importorskip("setuptools")
    for d in (tmp_path, tmp_path.parent):       # the sandboxed child may run as another user
        os.chmod(d, 0o755)
    venv = _fresh_venv(tmp_path, _build_wheel(tmp_path))
    work = tmp_path / "work"                     # the task copied away from the repository
    (work / "kernels").mkdir(parents=True)
    shutil.copy2(RELU, work / "relu.yaml")
    shutil.copy2(RELU_SEED, work / "kernels" / RELU_SEED.name)
    _my_hardware(work / "hw")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", HARDWARE_DIR_ENV, "PYTHONHOME")}
    env["KERNELFOUNDRY_MEMORY"] = "off"

    def run(*argv, **extra):
        proc = subprocess.run([*argv], cwd=work, env={**env, **extra}, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{argv}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        return proc.stdout

    where = json.loads(run(str(venv / "bin" / "python"), "-c", (
        "import json, sys, kernelfoundry, kernelfoundry.perfmodel.hardware as h, kernelfoundry.mutate.prompts as p;"
        "print(json.dumps([kernelfoundry.__file__, str(h.HARDWARE_DIR), str(p.DEFAULT_PROMPT_DIR), sys.path]))")))
    package, hardware_dir, prompt_dir, path = where
    assert all(Path(p).is_relative_to(venv) for p in (package, hardware_dir, prompt_dir)), where
    assert str(REPO_DIR) not in path, path
    assert Path(hardware_dir, "h100.yaml").is_file() and Path(prompt_dir, "system.j2").is_file()

    kf = str(venv / "bin" / "kernelfoundry")
    # sim/perfect renders the shipped prompt templates; myhw comes from --hardware-dir, h100 from the wheel
    run(kf, "evolve", "relu.yaml", "--budget", "3", "--workers", "1", "--out", "run", "--no-memory",
        "--model", "sim/perfect", "--hardware-dir", "hw", "--hardware", "myhw,h100")
    summary = json.loads((work / "run" / "summary.json").read_text())
    assert summary["n_candidates"] == 3 and summary["n_correct"] >= 1, summary
    assert summary["llm"]["calls"] >= 1 and list(summary["hardware"]) == ["myhw", "h100"], summary

    out = json.loads(run(kf, "verify", "relu.yaml", "kernels/relu_naive.py", "--hardware", "myhw,a100", "--json",
                         **{HARDWARE_DIR_ENV: str(work / "hw")}))
    assert out["passed"] and set(out["hardware"]) == {"myhw", "a100"}, out
