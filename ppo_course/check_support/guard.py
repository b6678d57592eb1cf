"""Per-call limits of `ppo-course check`: CPU time and printed output of one call into your code.

`ppo-course check` runs your functions in its own child process (your code, on
your machine). Each call gets

* a CPU-time limit (``ITIMER_PROF``: CPU seconds of the process, so a busy
  machine does not change the verdict; a plain wall clock would): past it the
  call is interrupted with `CallTimedOut`, whose message names the function;
* a bounded capture of what it prints (``sys.stdout``/``sys.stderr``): the
  first `KEEP_CHARS` characters of each test are kept to show beside a failing
  test, lines are counted, and past `MAX_PRINTED_BYTES` in one call the call is
  stopped with `PrintFlood` (per call, as in the graders' sandbox, so that no
  test pays for what another printed).

Both exceptions derive from `BaseException`, so an ``except Exception`` in your
code does not swallow them. Where ``setitimer`` is missing (Windows) only the
parent's wall-clock backstop applies.
"""

from __future__ import annotations

import contextlib
import io
import signal
import sys
from collections.abc import Iterator

#: Printed characters in one call after which it is stopped (the graders' sandbox: the same figure in bytes).
MAX_PRINTED_BYTES = 32 * 2**20
#: Characters of printed output kept per test to show beside a failure.
KEEP_CHARS = 4000
#: CPU seconds per call of exercises 1-6 in `ppo-course check` (a correct call takes milliseconds).
CALL_CPU_SECONDS = 10.0
#: CPU seconds for one exercise-7 PPO step in `ppo-course check` (a correct one takes about 1 s).
EX7_CPU_SECONDS = 120.0
#: Printed lines per check run above which `check` warns that printing slows grading.
MANY_LINES = 10_000


class CallTimedOut(BaseException):
    """A call into the student's code used more CPU time than allowed (an endless loop?)."""

    def __init__(self, name: str, seconds: float, again: bool = False):
        self.name = name
        self.seconds = seconds
        note = "; it is not run again in this check" if again else ""
        super().__init__(f"`{name}` did not return within {seconds:g} s (an endless loop?); "
                         f"limit in CPU seconds per call{note}")


class PrintFlood(BaseException):
    """A call printed more than `MAX_PRINTED_BYTES`."""

    def __init__(self, name: str):
        self.name = name
        super().__init__(f"`{name}` printed more than {MAX_PRINTED_BYTES // 2**20} MiB: remove debug prints")


class PrintedOutput(io.TextIOBase):
    """A text stream that keeps the first `KEEP_CHARS` characters of a test (`reset` starts a test), counts
    lines and characters, and raises `PrintFlood` past `MAX_PRINTED_BYTES` in one call (`start_call`)."""

    def __init__(self) -> None:
        super().__init__()
        self.reset()
        self.total_lines = 0  # over the whole run (not reset per test)
        self.call_chars = 0
        self.current = "your code"

    def start_call(self, name: str) -> None:
        """A new call into the student's code: its own print budget."""
        self.current = name
        self.call_chars = 0

    def reset(self) -> None:
        """Start a new test: forget the kept text and the byte count."""
        self.kept: list[str] = []
        self.kept_chars = 0
        self.chars = 0
        self.lines = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        text = str(text)
        self.chars += len(text)
        self.call_chars += len(text)
        newlines = text.count("\n")
        self.lines += newlines
        self.total_lines += newlines
        room = KEEP_CHARS - self.kept_chars
        if room > 0:
            self.kept.append(text[:room])
            self.kept_chars += min(room, len(text))
        if self.call_chars > MAX_PRINTED_BYTES:
            raise PrintFlood(self.current)
        return len(text)

    def text(self) -> str:
        """What this test printed (capped, with a note on how much more there was)."""
        kept = "".join(self.kept)
        if self.chars > self.kept_chars:
            kept += f"\n[... {self.chars - self.kept_chars} more characters ({self.lines} lines in all) not shown]"
        return kept


def _has_timer() -> bool:
    return hasattr(signal, "setitimer") and hasattr(signal, "ITIMER_PROF")


class CallGuard:
    """Runs calls into student code under a CPU-time limit and a bounded output capture.

    Args:
        cpu_seconds: CPU seconds allowed per call (> 0).
    """

    def __init__(self, cpu_seconds: float):
        if not cpu_seconds > 0:
            raise ValueError(f"cpu_seconds must be > 0, got {cpu_seconds!r}")
        self.cpu_seconds = float(cpu_seconds)
        self.output = PrintedOutput()
        self.timed_out: set[str] = set()
        self._depth = 0
        #: Set by the runner: called with the function's name before each call (a progress note for the parent).
        self.on_call = None

    @contextlib.contextmanager
    def call(self, name: str, cpu_seconds: float | None = None) -> Iterator[None]:
        """Context of one call to the student's `name`.

        Raises:
            CallTimedOut: past the CPU limit, or at once when `name` timed out before.
            PrintFlood: past `MAX_PRINTED_BYTES` of printed output in this call.
        """
        if name in self.timed_out:
            raise CallTimedOut(name, self.cpu_seconds if cpu_seconds is None else cpu_seconds, again=True)
        if self._depth:  # a nested call (a method from a method): the outer limit applies
            yield
            return
        seconds = self.cpu_seconds if cpu_seconds is None else float(cpu_seconds)
        if self.on_call is not None:
            self.on_call(name)
        self.output.start_call(name)
        timer = _has_timer()

        def expire(signum, frame):  # runs in the main thread, between two bytecodes of the student's code
            signal.setitimer(signal.ITIMER_PROF, 0)
            raise CallTimedOut(name, seconds)

        previous = signal.signal(signal.SIGPROF, expire) if timer else None
        self._depth += 1
        try:
            with contextlib.redirect_stdout(self.output), contextlib.redirect_stderr(self.output):
                if timer:
                    signal.setitimer(signal.ITIMER_PROF, seconds)
                try:
                    yield
                finally:
                    if timer:
                        signal.setitimer(signal.ITIMER_PROF, 0)
        except CallTimedOut:
            self.timed_out.add(name)
            raise
        finally:
            self._depth -= 1
            if timer:
                signal.signal(signal.SIGPROF, previous)
