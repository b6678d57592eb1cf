"""Code that runs inside the untrusted child process of the grader's sandbox.

Nothing here holds a solution, a reference, a hidden input or a score: the
child only ever receives data. The trusted side (starting the fork server,
sending requests, comparing results) is ``grader.sandbox``; the threat model
is ``docs/threat_model.md``.

Modules: ``codec`` (the data-only wire format, shared by both sides),
``zygote`` (the fork server: a clean interpreter that forks one child per exercise),
``isolate`` (limits, namespaces, privilege drop), ``worker`` (the child's
request loop), ``proxies`` (known-good stand-ins for exercise-7 grading),
``harness`` (one ``ppo_step`` on the package's model).
"""
