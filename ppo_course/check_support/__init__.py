"""`ppo-course check`'s own machinery: the child-process runner, the local provider and the per-call guard.

`ppo-course check` (``ppo_course.commands.check``) runs the public tests in a
child process (``runner``), which imports the student's modules in-process
(``local.LocalProvider``) and runs each call under a CPU-time limit and an
output cap (``guard``). The tests themselves stand on the grading kit
(``ppo_course.grading_kit``), shared with the hidden graders. Ships in the
student bundle: imports only torch, pytest and `ppo_course`.
"""
