"""Code that runs inside the untrusted child process of the grader's sandbox.

Nothing here holds a solution, a reference, a hidden input or a score: the
child only ever receives data. The trusted side (starting the fork server,
sending requests, comparing results) is ``grader.sandbox``; the threat model
is ``docs/threat_model.md``.

Modules: ``codec`` (the data-only value encoding, shared by both sides),
``frames`` (one message as a JSON header plus byte buffers, shared by both sides),
``zygote`` (the fork server: a clean interpreter that forks one child per exercise),
``reaper`` (the fork server's sandbox uids, and killing all a child started),
``warm_up`` (what the fork server imports and runs once before its first fork),
``isolate`` (limits, namespaces, privilege drop), ``worker`` (the child's
request loop), ``proxies`` (known-good stand-ins for exercise-7 grading),
``harness`` (one ``ppo_step`` on the package's model).
"""
