"""What runs one ``ppo_step`` on the package's model, in a student's ``ppo-course check`` and in the grader's child alike.

``harness`` (one ``ppo_step`` on the model: the exercise-7 run), ``tied_grad`` (the gradient
through arguments derived from one leaf), ``observe`` (the step's trace of events), ``seeding``
(the global RNGs' seeds). The grader's sandboxed child that runs them on a submission (the fork
server, isolation, the request loop) is the instructor side's ``sandbox_child`` package, which
the student bundle does not ship.
"""
