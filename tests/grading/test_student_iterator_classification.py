"""An error raised by student code is never the grader's (issue 16): an iterator that simply ends early.

`next()` on a student's iterator that is exhausted raises StopIteration in the test; the sandbox marks
it as the student's (`grader.sandbox.StudentIteratorExhausted`, still a StopIteration so that loops end)
and both providers classify it as `iterator_ended_early`, never `grader_error` ("not your fault").
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grader.hidden.provider import SandboxProvider
from grader.sandbox import StudentError, StudentIteratorExhausted
from ppo_course.check_support.local import LocalProvider

REPO = Path(__file__).resolve().parents[2]

ENDS_EARLY = '''

class RolloutBuffer(RolloutBuffer):  # noqa: F821 - the solution's, above
    def minibatches(self, mini_batch_size, generator=None):
        if not isinstance(mini_batch_size, int) or mini_batch_size < 1:
            raise ValueError("mini_batch_size must be >= 1")
        if self._phase != "train":
            raise RuntimeError("train phase only")
        perm = torch.randperm(self._size, generator=generator)
        cycle = self._cycle

        def chunks():
            for start in range(0, len(perm), mini_batch_size):
                if cycle != self._cycle:
                    return  # the mistake: a purged iterator just stops instead of raising RuntimeError
                yield {name: t[perm[start:start + mini_batch_size]] for name, t in self._data.items()}

        return chunks()
'''


def test_sandbox_classifies_an_exhausted_student_iterator():
    exc = StudentIteratorExhausted("the submission's iterator ended")
    assert isinstance(exc, StopIteration)
    assert SandboxProvider.classify(exc)[0] == "iterator_ended_early"
    wrapped = RuntimeError("generator raised StopIteration")
    wrapped.__cause__ = exc
    assert SandboxProvider.classify(wrapped)[0] == "iterator_ended_early"
    assert SandboxProvider.classify(StudentError("ValueError", "x"))[0] == "raises_error"
    assert SandboxProvider.classify(KeyError("grader bug")) is None  # the grader's own errors stay grader_error


def test_local_provider_classifies_stop_iteration():
    assert LocalProvider.classify(StopIteration())[0] == "iterator_ended_early"


@pytest.mark.slow
def test_an_iterator_that_ends_early_is_the_students(tmp_path):
    from grader.grade import grade_submission

    folder = tmp_path / "student"
    folder.mkdir()
    shutil.copy(REPO / "solutions" / "ex5_rollout_buffer.py", folder)
    path = folder / "ex5_rollout_buffer.py"
    path.write_text(path.read_text(encoding="utf-8") + ENDS_EARLY, encoding="utf-8")
    result = grade_submission(folder, exercises=["ex5_rollout_buffer"], profile="fast")
    text = str(result.to_results_json())
    assert "grader_error" not in text
    assert "iterator_ended_early" in text
    assert result.exercises["ex5_rollout_buffer"].score < result.exercises["ex5_rollout_buffer"].max_score
