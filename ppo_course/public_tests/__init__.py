"""Public tests of the PPO exercises (`ppo-course check`); they ship to students.

Each module tests one exercise with hand-computed small cases (the arithmetic
is written next to each expected value) and property checks. They never
import `ppo_reference` or `grader` and hold no hidden input or expected value.
The hidden grader runs them too (through the sandbox) and shows their
expected vs got in the feedback.
"""
