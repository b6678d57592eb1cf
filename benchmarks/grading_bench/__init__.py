"""Parts of ``benchmarks/bench_grading.py`` (the grading benchmark); not part of the installed package.

* ``measure``: CPU-seconds (children included) and wall of one command, peak memory of its process tree;
* ``cohort``: the submissions of a cohort, staged as plain folders (a .zip extracted);
* ``floor``: the same public and hidden tests as ``grader.grade`` run in one warm process on trusted,
  directly imported modules (no sandbox): the floor, and the test cells of the nbgrader notebook;
* ``nbgrader_course``: a minimal nbgrader course whose notebook runs those same tests per student;
* ``nb_legacy``: the earlier ex1-ex6 fixed-seed notebook cells (a second, labelled comparison).
"""
