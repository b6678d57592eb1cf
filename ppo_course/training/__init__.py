"""The toy RLHF run as a loop over PPO steps, and ``ppo-course train --mine`` built on it (student side).

``loop`` (the run, shared with the reference's ``ppo-course train``), ``pieces`` (the student's
ex1–ex7 with the reference's in place of a stub), ``alarms`` (what goes wrong, step by step),
``diagnosis`` (the piece named), ``report`` (figure, table, log, the reference run's cache),
``mine`` (the two runs) and ``show`` (the command's output).
"""
