"""The sandboxed child's view of the machine: private namespaces and a minimal read-only filesystem.

Called by :mod:`.boot` as root, before the drop to the throwaway uid.  The
child gets its own network, IPC (SysV shared memory, semaphores, message queues)
and mount namespaces, and a new root directory holding only:

* read-only binds of what Python needs to run: the interpreter's prefix and the
  virtual environment's, ``/usr`` (shared libraries), the dynamic loader's
  configuration, and this package's own source directory (not the repository:
  run stores and archives stay invisible);
* ``/dev/null``, ``/dev/zero``, ``/dev/random``, ``/dev/urandom``; a read-only ``/proc``;
  for the device job only, the host's GPU device nodes and driver pieces (:mod:`.devices`);
* the job's own working directory (writable) and a small private ``/tmp``.

Nothing else of the host exists inside: no home directories, no ``/run`` (so no
``/run/lock``), no ``/dev/shm``, no other job's directory.  Because the interpreter
is reachable through ordinary directory permissions inside the new root, the child
needs no capability at all after the uid drop (no ``CAP_DAC_READ_SEARCH``).
"""

from __future__ import annotations

import ctypes
import os
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")
LOADER_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime")
TMP_BYTES = 64 << 20


class FilesystemError(OSError):
    """A namespace or mount step failed (the reason names the step)."""


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return libc


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise FilesystemError(err, f"{what}: {os.strerror(err)}")


def _mount(libc, source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = (lambda s: None if s is None else s.encode())
    _check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)),
           f"mount {source or fstype} on {target}")


def unshare_namespaces(libc=None) -> list[str]:
    """Private network, IPC and mount namespaces for the calling process (needs root)."""
    libc = libc or _libc()
    _check(libc.unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWNS), "unshare(net, ipc, mount)")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)        # nothing we mount propagates to the host
    return ["netns", "ipcns", "mountns"]


def readable_roots(package_dir: str) -> list[str]:
    """Host paths the child may read, as Python spells them: interpreter and venv prefixes,
    /usr, this package, other ``sys.path`` directories; never the repository around the package
    (run stores, archives) or the current directory."""
    package = os.path.abspath(package_dir)
    repo = {os.path.dirname(package), os.path.dirname(os.path.realpath(package))}
    paths = {os.path.abspath(p) for p in (sys.base_prefix, sys.prefix, sys.exec_prefix)}
    paths |= {package, "/usr"}
    cwd = {os.path.abspath(os.getcwd()), os.path.realpath(os.getcwd())}
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            paths.add(os.path.abspath(entry))
    kept = set()
    for path in paths:
        forms = {path, os.path.realpath(path)}
        if forms & cwd or any(r == f or r.startswith(f + os.sep) for r in repo for f in forms):
            continue                                   # the repository, an ancestor of it, or the cwd
        kept.add(path)
    ordered = sorted(kept, key=len)
    return [p for i, p in enumerate(ordered) if not any(p.startswith(o + os.sep) for o in ordered[:i])]


def _make_point(new_root: str, host_path: str) -> str:
    """Create the mount point for *host_path* inside *new_root* (a dir or an empty file)."""
    target = new_root + os.path.abspath(host_path)
    if os.path.isdir(host_path):
        os.makedirs(target, mode=0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        if not os.path.exists(target):
            open(target, "w").close()
    return target


def _bind(libc, host_path: str, new_root: str, *, writable: bool = False) -> None:
    """Bind *host_path* (followed to its real location) at the same spelling inside *new_root*."""
    target = _make_point(new_root, host_path)
    _mount(libc, os.path.realpath(host_path), target, None, MS_BIND | MS_REC)
    flags = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | (0 if writable else MS_RDONLY)
    _mount(libc, None, target, None, flags)


def _top_level_links(new_root: str) -> None:
    """Recreate /lib, /lib64, /bin, /sbin as on the host when they are links into /usr (merged /usr)."""
    for name in ("lib", "lib64", "lib32", "bin", "sbin"):
        path = "/" + name
        if os.path.islink(path):
            link = os.readlink(path)
            if not os.path.lexists(new_root + path):
                os.symlink(link, new_root + path)


def enter_minimal_root(new_root: str, workdir: str, package_dir: str, libc=None,
                       extra: tuple[str, ...] | list[str] = ()) -> list[str]:
    """Build the minimal tree at *new_root* (an empty dir) and ``chroot`` into it; cwd = *workdir*.

    *extra*: more host paths bound read-only, device files usable (the device job's GPU pieces,
    :mod:`.devices`).  Must run after :func:`unshare_namespaces` and before the uid drop.
    """
    libc = libc or _libc()
    _mount(libc, "tmpfs", new_root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    os.makedirs(new_root + "/tmp", mode=0o1777, exist_ok=True)      # first: binds below /tmp go on top
    _mount(libc, "tmpfs", new_root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
           f"size={TMP_BYTES},mode=1777")
    for root in readable_roots(package_dir):
        _bind(libc, root, new_root)
    for path in (*LOADER_FILES, *DEVICES, *extra):
        if os.path.exists(path):
            target = _make_point(new_root, path)
            _mount(libc, path, target, None, MS_BIND | MS_REC)
            _mount(libc, None, target, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_RDONLY
                   | (0 if path.startswith("/dev/") else MS_NODEV))
    _top_level_links(new_root)
    _bind(libc, "/proc", new_root)
    _bind(libc, workdir, new_root, writable=True)
    # the mount points' parent directories of the new root are read-only from here on
    _mount(libc, None, new_root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    _check(libc.chroot(new_root.encode()), f"chroot {new_root}")
    os.chdir(workdir)
    shown = [p for p in extra if os.path.exists(p)]
    return ["minimal root"] + ([f"gpu paths: {' '.join(shown)}"] if shown else [])
