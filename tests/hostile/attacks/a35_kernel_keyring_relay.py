"""Relay data between gradings through kernel objects that no namespace covers.

Tries: add_key/keyctl on the user, session and process keyrings (a kernel
keyring outlives the process and is not namespaced), SysV shared memory,
semaphores and message queues with a fixed key, a POSIX message queue, a
memfd and an abstract Unix socket name; reads back what an earlier grading
(this student's, or a classmate's) left in any of them, and would use a
relayed reference output instead of computing its own.
Must achieve: nothing. The seccomp filter answers EPERM to the keyring and
SysV calls, /dev/mqueue is a private tmpfs, a memfd and an abstract socket
die with the child (and the network namespace): no kernel object is left
(/proc/key-users of the sandbox uids is unchanged) and three gradings give
the same grade.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import ctypes
import ctypes.util
import os
import platform
import socket

import twin_code

MARKER = "ppohostile"
LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
NR = {"x86_64": {"add_key": 248, "keyctl": 250}, "aarch64": {"add_key": 217, "keyctl": 219}}.get(platform.machine(), {})
RELAY_KEY = 0x70706F68  # "ppoh"
_relayed = []
_keep_alive = []


def _syscall(name, *args):
    if name not in NR:
        return -1
    return LIBC.syscall(ctypes.c_long(NR[name]), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])


def _attempt():
    payload = b"relayed answers"
    for ring in (-4, -3, -2):  # KEY_SPEC_USER_KEYRING, SESSION, PROCESS
        _syscall("add_key", b"user", f"{MARKER}-relay".encode(), payload, len(payload), ring)
    buf = ctypes.create_string_buffer(4096)
    # keyctl(KEYCTL_SEARCH = 10, KEY_SPEC_USER_KEYRING, "user", description, 0)
    found = _syscall("keyctl", 10, -4, b"user", f"{MARKER}-relay".encode(), 0)
    if found > 0 and _syscall("keyctl", 11, found, buf, 4096) > 0:
        _relayed.append(buf.value)
    for getter, args in ((LIBC.shmget, (RELAY_KEY, 4096, 0o1000 | 0o666)), (LIBC.semget, (RELAY_KEY, 1, 0o1000 | 0o666)),
                         (LIBC.msgget, (RELAY_KEY, 0o1000 | 0o666))):
        try:
            getter(*args)
        except Exception:
            pass
    try:
        fd = os.open(f"/dev/mqueue/{MARKER}-relay", os.O_CREAT | os.O_RDWR, 0o666)
        os.write(fd, payload)
        os.close(fd)
    except OSError:
        pass
    try:
        _keep_alive.append(os.memfd_create(f"{MARKER}-relay"))
    except (OSError, AttributeError):
        pass
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(f"\0{MARKER}-relay-{os.getpid()}")
        _keep_alive.append(s)
    except OSError:
        pass


_attempt()


def logprobs_from_logits(logits, tokens):
    _attempt()
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    _attempt()
    return twin_code.probability_ratio(logp_new, logp_old)
