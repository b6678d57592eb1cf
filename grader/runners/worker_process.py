"""Entry of a batch worker process: ``worker`` (grade one submission and exit) or ``serve`` (a warm worker).

TA side, trusted. The batch starts every worker as ``python -I -c BOOT ...``
(``grader.runners.workers._WORKER_BOOT``), which calls ``main`` here; this module
only dispatches, so that the fresh worker (``grader.runners.workers``) and the warm
one (``grader.runners.warm``, built on it) import each other in one direction only.

    python -m grader.runners.worker_process worker --request JSON --out DIR [--parent-pid N]
    python -m grader.runners.worker_process serve ...
    python -m grader.runners.worker_process fingerprint   (prints the workers' grader fingerprint and where it is)
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the worker named by ``argv[0]`` (``worker``, ``serve`` or ``fingerprint``: print the grader fingerprint
    and the grader's folder, as this worker imports them); exit 2 with a usage line otherwise."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["fingerprint"]:
        from grader.fingerprint import grader_fingerprint, package_root

        print(grader_fingerprint(), package_root("grader"))
        return 0
    if argv[:1] == ["worker"]:
        from grader.runners.workers import worker_main

        return worker_main(argv[1:])
    if argv[:1] == ["serve"]:
        from grader.runners.warm import serve_main

        return serve_main(argv[1:])
    print("usage: python -m grader.runners.worker_process {worker,serve} ... (worker: --request JSON --out DIR "
          "[--parent-pid N]; JSON: a grader.runners.request.GradeRequest)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    from ppo_course.process_exit import run_and_exit

    run_and_exit(main)  # its outcome is written (atomically) before main returns
