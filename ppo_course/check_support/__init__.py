"""Student-side support for `ppo-course check`: diagnoses, comparisons and the runner.

Ships in the student bundle, so it imports only torch, pytest, hypothesis and
`ppo_course`; never `grader`, `ppo_reference` or `solutions`. The instructor
side (`grader/`) reuses the comparison helpers so that public and hidden
feedback read alike.
"""
