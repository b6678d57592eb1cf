"""A request's tensor arguments in shared memory: the parent sees what the child did to them.

Why: a check made inside the child (e.g. "the argument requires grad, so
autograd refuses an in-place change") can be detected and dodged by the
student's code, which runs in the same process and may patch the worker
itself. Here the parent writes every buffer of a request
(tensor bytes, generator states) into one sealed ``memfd``, passes its
descriptor to the child with the request (SCM_RIGHTS), and the child builds
its argument tensors directly on a ``MAP_SHARED`` mapping of it
(``torch.frombuffer``, no copy; ``ppo_course.sandbox.channel.Channel.shared_buffers``).
After the reply the *parent* reads the bytes back with ``os.pread`` and compares
them with what it sent: an in-place change of an argument is seen whatever the
student's code did in its process (``torch.no_grad()``, a patched worker, ...),
except making a private copy first, which is the correct behaviour anyway.

Data-only: the parent never maps the file (a hostile child cannot make it
fault) and never decodes what it reads back, except as raw bytes of the dtype
and shape it chose itself. Seals (no grow, no shrink, no new seals) stop the
child from resizing the file.

The same descriptor lets a grader change an argument's bytes *after* the call
(``overwrite``): an object that kept a reference to its argument instead of a
copy (a ``RolloutBuffer`` storing the caller's tensors) then shows the change.
"""

from __future__ import annotations

import fcntl
import os
from typing import Any

import torch

from ppo_course.sandbox import codec, frames

_SEALS = fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL


def tensor_nodes(node: Any, path: str, out: dict[str, dict]) -> dict[str, dict]:
    """Collect ``{path: tensor node}`` of an encoded value (``args[0]``, ``kwargs['mask']``, ...)."""
    if type(node) is list:
        for i, v in enumerate(node):
            tensor_nodes(v, f"{path}[{i}]", out)
    elif type(node) is dict:
        tag = node.get("t")
        if tag == "tensor":
            out[path] = node
        elif tag == "tuple":
            for i, v in enumerate(node.get("v", [])):
                tensor_nodes(v, f"{path}[{i}]", out)
        elif tag == "dict":
            for k, v in node.get("v", {}).items():
                tensor_nodes(v, f"{path}[{k!r}]", out)
    return out


class SharedArgs:
    """The buffers of one request in a sealed memfd, and the parent's record of what was sent.

    Args:
        header: the encoded request (its tensor nodes name the buffers by index).
        buffers: the encoder's buffers, in index order.

    Attributes:
        fd: the memfd (the parent's descriptor; sent to the child, closed by ``close``).
        spec: ``{"size": bytes, "bufs": [[offset, length], ...]}`` for the request header.
        tensors: ``{path: tensor node}`` of every tensor argument (dtype/shape as the parent sent them).

    Raises:
        OSError: memfd_create, ftruncate, pwrite or the seals failed (the caller falls back to the frame).
    """

    def __init__(self, header: dict, buffers: list[bytes]) -> None:
        self.sent = buffers
        layout, size = frames.shared_layout([len(b) for b in buffers])
        self.layout = layout
        self.size = size
        self.spec = {"size": size, "bufs": [list(x) for x in layout]}
        self.tensors = {}
        for key in ("args", "kwargs", "payload", "fields", "value"):
            if key in header:
                tensor_nodes(header[key], key, self.tensors)
        blob = bytearray(size)
        for (off, n), raw in zip(layout, buffers):
            blob[off : off + n] = raw
        self.fd = os.memfd_create("ppo-sandbox-args", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, size)
            _pwrite_all(self.fd, blob, 0)
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, _SEALS)
        except OSError:
            os.close(self.fd)
            raise

    def current(self, index: int) -> bytes:
        """The bytes of buffer ``index`` as they are now (short if the file shrank).

        Raises:
            ValueError: after ``close``.
        """
        if self.fd < 0:
            raise ValueError("the shared arguments were closed")
        off, n = self.layout[index]
        return _pread_all(self.fd, n, off)

    def modified(self) -> list[str]:
        """Paths of the tensor arguments whose bytes differ from what the parent sent."""
        return [path for path, node in self.tensors.items()
                if self.current(node["b"]) != bytes(self.sent[node["b"]])]

    def overwrite(self, path: str, value: torch.Tensor) -> None:
        """Write ``value`` over the argument at ``path`` in the shared memory (same dtype and shape).

        Raises:
            KeyError: no tensor argument at ``path``.
            ValueError: ``value`` has another dtype or shape than the argument sent.
        """
        node = self.tensors[path]
        plain = value.detach().contiguous()
        if codec.DTYPES.get(node["dtype"]) != plain.dtype or list(plain.shape) != node["shape"]:
            raise ValueError(f"{path} is {node['dtype']} {node['shape']}; cannot write {plain.dtype} {list(plain.shape)}")
        off, n = self.layout[node["b"]]
        raw = codec.tensor_bytes(plain)
        assert len(raw) == n
        _pwrite_all(self.fd, raw, off)

    def close(self) -> None:
        """Close the parent's descriptor (the child's mapping, if any, stays valid)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        try:
            self.close()
        except OSError:
            pass


def _pwrite_all(fd: int, data: bytes | bytearray, offset: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view = view[n:]
        offset += n


def _pread_all(fd: int, n: int, offset: int) -> bytes:
    parts = []
    while n > 0:
        chunk = os.pread(fd, n, offset)
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
        offset += len(chunk)
    return b"".join(parts)
