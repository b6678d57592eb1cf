"""What a sandboxed child prints, kept up to a limit and counted beyond it (trusted, parent side).

``grader.sandbox.process.ChildProcess`` feeds every chunk read from the
child's stdout and stderr pipes to one ``OutputCapture``: the first
``Limits.max_output_bytes`` are kept, in the order the pipes were read, the
rest only counted; the per-call count lets the parent stop a child that
prints more than ``Limits.max_output_kill_bytes`` in one call.
"""

from __future__ import annotations


class OutputCapture:
    """Bounded capture of a child's stdout/stderr, in the order the pipes were read."""

    def __init__(self, keep_bytes: int, kill_bytes: int) -> None:
        self.keep_bytes = keep_bytes
        self.kill_bytes = kill_bytes
        self.kept: list[tuple[str, bytes]] = []
        self.kept_total = 0
        self.total = 0
        self.call_total = 0  # printed during the current request (the flood limit is per call)

    def add(self, stream: str, data: bytes) -> None:
        self.total += len(data)
        self.call_total += len(data)
        room = self.keep_bytes - self.kept_total
        if room > 0:
            piece = data[:room]
            self.kept.append((stream, piece))
            self.kept_total += len(piece)

    def text(self, stream: str | None = None) -> str:
        """What was kept (``stream``: "stdout", "stderr" or None for both), with a note on what was dropped."""
        raw = b"".join(d for s, d in self.kept if stream is None or s == stream)
        text = raw.decode("utf-8", "backslashreplace")
        dropped = self.total - self.kept_total
        if dropped > 0 and stream is None:
            text += f"\n[... {dropped} more bytes of output not kept]\n"
        return text
