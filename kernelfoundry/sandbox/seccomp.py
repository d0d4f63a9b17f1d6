"""A seccomp-BPF syscall filter for the sandboxed child (Linux x86_64).

Installed by the child itself (see :mod:`.boot`) after its own setup and
before any candidate code runs.  It makes the dangerous syscalls fail with
``EPERM`` instead of relying only on resource limits, which root ignores
(``RLIMIT_NPROC`` does not apply to uid 0):

* no new processes: ``fork``/``vfork``/``execve``; ``clone`` only with
  ``CLONE_THREAD`` (threads); ``clone3`` answers ``ENOSYS`` so libc falls back
  to ``clone`` for threads;
* no network: ``socket``/``socketpair`` and friends;
* no signals to other processes: ``kill`` only to itself or its own group,
  ``tgkill`` only to its own threads;
* no escapes: ptrace, namespaces, mounts, module loading, bpf, io_uring,
  uid/session changes, keyrings, clock changes, reboot;
* no shared state: SysV shared memory, semaphores and message queues, POSIX
  message queues.

The filter is a classic BPF program built here (no libseccomp dependency).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
_CLONE_THREAD = 0x00010000
_X32_SYSCALL_BIT = 0x40000000

# BPF opcodes (linux/bpf_common.h)
_LD_W_ABS = 0x20            # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15               # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35               # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45              # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06               # BPF_RET | BPF_K

# offsets in struct seccomp_data
_OFF_NR, _OFF_ARCH, _OFF_ARG0_LO = 0, 4, 16

#: x86_64 syscall numbers refused outright (name -> number).
DENIED_X86_64 = {
    "fork": 57, "vfork": 58, "execve": 59, "execveat": 322,
    "socket": 41, "socketpair": 53, "connect": 42, "bind": 49, "listen": 50, "accept": 43,
    "accept4": 288,
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
    "tkill": 200, "pidfd_open": 434, "pidfd_send_signal": 424, "pidfd_getfd": 438,
    "setsid": 112, "setpgid": 109, "setuid": 105, "setgid": 106, "setreuid": 113,
    "setregid": 114, "setresuid": 117, "setresgid": 119, "setgroups": 116, "setfsuid": 122,
    "setfsgid": 123, "capset": 126,
    "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272,
    "setns": 308, "open_by_handle_at": 304, "name_to_handle_at": 303,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "kexec_load": 246,
    "kexec_file_load": 320, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "keyctl": 250, "add_key": 248, "request_key": 249,
    "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "syslog": 103,
    "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159,
    "sethostname": 170, "setdomainname": 171, "iopl": 172, "ioperm": 173,
    "personality": 135, "quotactl": 179, "vhangup": 153, "fanotify_init": 300,
    "mknod": 133, "mknodat": 259,
    # SysV IPC and POSIX message queues: no state shared with (or left for) another job
    "shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "semop": 65, "semctl": 66,
    "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "semtimedop": 220,
    "mq_open": 240, "mq_unlink": 241,
}
_CLONE, _CLONE3, _KILL, _TGKILL = 56, 435, 62, 234


def _stmt(code: int, k: int) -> bytes:
    return struct.pack("HBBI", code, 0, 0, k & 0xFFFFFFFF)


def build_filter_x86_64(own_pid: int) -> bytes:
    """The BPF program (as packed ``struct sock_filter`` array) for a child with pid *own_pid*."""
    prog: list[tuple] = []           # (code, jt_label|None, jf_label|None, k) or ("label", name)

    def jump(code, k, jt, jf):
        prog.append((code, jt, jf, k))

    def ret(value):
        prog.append((_RET_K, None, None, value))

    def load(offset):
        prog.append((_LD_W_ABS, None, None, offset))

    def label(name):
        prog.append(("label", name))

    load(_OFF_ARCH)
    jump(_JEQ_K, AUDIT_ARCH_X86_64, None, "kill")
    load(_OFF_NR)
    jump(_JGE_K, _X32_SYSCALL_BIT, "deny", None)
    for nr in sorted(set(DENIED_X86_64.values())):
        jump(_JEQ_K, nr, "deny", None)
    jump(_JEQ_K, _CLONE3, "enosys", None)
    jump(_JEQ_K, _CLONE, "clone", None)
    jump(_JEQ_K, _KILL, "kill_sys", None)
    jump(_JEQ_K, _TGKILL, "tgkill_sys", None)
    ret(_RET_ALLOW)
    label("clone")
    load(_OFF_ARG0_LO)
    jump(_JSET_K, _CLONE_THREAD, "allow", "deny")
    label("kill_sys")                 # kill(pid, sig): self, own group (0 or -pid) only
    load(_OFF_ARG0_LO)
    jump(_JEQ_K, 0, "allow", None)
    jump(_JEQ_K, own_pid, "allow", None)
    jump(_JEQ_K, (-own_pid) & 0xFFFFFFFF, "allow", "deny")
    label("tgkill_sys")               # tgkill(tgid, tid, sig): own threads only
    load(_OFF_ARG0_LO)
    jump(_JEQ_K, own_pid, "allow", "deny")
    label("allow")
    ret(_RET_ALLOW)
    label("deny")
    ret(_RET_ERRNO | errno.EPERM)
    label("enosys")
    ret(_RET_ERRNO | errno.ENOSYS)
    label("kill")
    ret(_RET_KILL_PROCESS)

    positions: dict[str, int] = {}
    index = 0
    for item in prog:
        if item[0] == "label":
            positions[item[1]] = index
        else:
            index += 1
    out = []
    index = 0
    for item in prog:
        if item[0] == "label":
            continue
        code, jt, jf, k = item

        def offset(target):
            if target is None:
                return 0
            delta = positions[target] - index - 1
            if not 0 <= delta <= 255:
                raise ValueError(f"BPF jump to {target} out of range ({delta})")
            return delta

        out.append(struct.pack("HBBI", code, offset(jt), offset(jf), k & 0xFFFFFFFF))
        index += 1
    return b"".join(out)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def seccomp_supported() -> bool:
    return platform.system() == "Linux" and platform.machine() in ("x86_64", "AMD64")


def install_filter() -> str:
    """Install the filter on the calling (single-threaded) process.

    Returns a short note for the sandbox record ("seccomp" when installed, else
    why not).  Never raises: the resource limits remain the fallback.
    """
    if not seccomp_supported():
        return f"no seccomp ({platform.system()} {platform.machine()} not supported)"
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        program = build_filter_x86_64(os.getpid())
        buf = ctypes.create_string_buffer(program, len(program))
        fprog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
        pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
        if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
            return f"no seccomp (no_new_privs failed: errno {ctypes.get_errno()})"
        if libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0) != 0:
            return f"no seccomp (prctl failed: errno {ctypes.get_errno()})"
    except (OSError, AttributeError, ValueError) as exc:
        return f"no seccomp ({exc})"
    return "seccomp"
