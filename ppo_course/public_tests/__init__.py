"""Public tests of the PPO exercises (`ppo-course check`); they ship to students.

Each module tests one exercise with hand-computed small cases (the arithmetic
is written next to each expected value) and property checks. They never
import `ppo_reference` or `grader` and hold no hidden input or expected value.
The hidden grader runs them too (through the sandbox) and shows their
expected vs got in the feedback.

``PUBLIC_TESTS_DIR`` is the one definition of where they live, for ``ppo-course check``
(``ppo_course.check_support``) and the instructor side (``grade``, the release, the benchmarks).
"""

from pathlib import Path

#: The folder of the public test modules (``test_<module stem>.py``, one per exercise, and ``conftest.py``).
PUBLIC_TESTS_DIR: Path = Path(__file__).resolve().parent
