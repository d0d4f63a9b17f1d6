"""Which host GPU pieces the device job's minimal root shows (a fake host layout: no GPU here)."""

from __future__ import annotations

import os

from kernelfoundry.sandbox.devices import gpu_paths, gpu_spec, libcuda_dirs

LDCONFIG = """\t1234 libs found in cache `/etc/ld.so.cache'
\tlibcuda.so.1 (libc6,x86-64) => /opt/nvidia/lib64/libcuda.so.1
\tlibcuda.so (libc6,x86-64) => /opt/nvidia/lib64/libcuda.so
\tlibcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1
\tlibcudart.so.12 (libc6,x86-64) => /srv/cudart/libcudart.so.12
\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6
"""


def _touch(root, path):
    full = root / path.lstrip("/")
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_text("")


def _nvidia_host(tmp_path):
    for dev in ("/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                "/dev/null", "/dev/nvidia-caps/nvidia-cap1", "/opt/nvidia/lib64/libcuda.so.1",
                "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/srv/cudart/libcudart.so.12"):
        _touch(tmp_path, dev)
    (tmp_path / "sys/devices").mkdir(parents=True)
    (tmp_path / "sys/module/nvidia").mkdir(parents=True)
    os.symlink("usr/lib", tmp_path / "lib")                  # merged /usr: /lib/x86_64-linux-gnu is /usr's


def test_libcuda_dirs_from_ldconfig():
    assert libcuda_dirs(LDCONFIG) == ["/opt/nvidia/lib64", "/lib/x86_64-linux-gnu"]


def test_nvidia_host_shows_its_nodes_sys_and_libcuda_outside_usr(tmp_path):
    _nvidia_host(tmp_path)
    paths = gpu_paths(str(tmp_path), LDCONFIG)
    assert paths == ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                     "/dev/nvidia-caps", "/sys/devices", "/sys/module/nvidia", "/opt/nvidia/lib64"]
    spec = gpu_spec(str(tmp_path), LDCONFIG)
    assert spec["prepare_driver"] and spec["device_paths"] == paths
    assert spec["env"] == {"TRITON_LIBCUDA_PATH": "/opt/nvidia/lib64"}


def test_rocm_host_shows_kfd_and_dri(tmp_path):
    for dev in ("/dev/kfd", "/dev/dri/renderD128", "/dev/dri/card0", "/sys/class/kfd/kfd/topology/nodes/0/gpu_id"):
        _touch(tmp_path, dev)
    assert gpu_paths(str(tmp_path), "") == ["/dev/kfd", "/dev/dri", "/sys/class/kfd"]
    assert gpu_spec(str(tmp_path), "")["prepare_driver"] is False        # Triton's NVIDIA driver: no


def test_no_gpu_shows_nothing(tmp_path):
    _touch(tmp_path, "/dev/null")
    (tmp_path / "sys/devices").mkdir(parents=True)
    _touch(tmp_path, "/opt/nvidia/lib64/libcuda.so.1")
    assert gpu_paths(str(tmp_path), LDCONFIG) == []
    spec = gpu_spec(str(tmp_path), LDCONFIG)
    assert spec["device_paths"] == [] and spec["prepare_driver"] is False and spec["env"] == {}
