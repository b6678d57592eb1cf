"""Hidden graders: one pytest module per exercise (`test_<module stem>.py`).

Trusted code. Student modules are reached only through the student provider
registered by `grader.grade` (sandboxed child processes); nothing here imports
a student's file. Points and visibility live in `grader/points.yaml`.
"""
