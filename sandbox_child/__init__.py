"""The grader's sandbox child: the fork server and the child process that runs a submission's code.

Nothing here holds a solution, a reference, a hidden input or a score: the
child only ever receives data. The trusted side (starting the fork server,
sending requests, comparing results) is ``grader.sandbox``; the threat model
is ``docs/threat_model.md``. Instructor side only: the student bundle does not
ship it (a student's own tools run ``ppo_course.sandbox``'s harness in-process).

Modules: ``codec`` (the data-only value encoding, shared by both sides),
``frames`` (one message as a JSON header plus byte buffers, shared by both sides),
``zygote`` (the fork server: a clean interpreter that forks one child per exercise),
``reaper`` (the fork server's sandbox uids, and killing all a child started),
``pidns`` (a pid namespace per child),
``warm_up`` (what the fork server imports and runs once before its first fork),
``fixed_root`` (the fork server's start with the venv and the packages at ``/opt/ppo``),
``isolate`` (limits, namespaces, privilege drop; with ``linux``, ``cpucg``, ``memcg``,
``rootfs``, ``readonly``, ``covers``, ``syscall_filter``, ``submission_files``),
``worker`` (the child's request loop; ``channel``: its end of the socket),
``proxies`` (known-good stand-ins for exercise-7 grading).
"""
