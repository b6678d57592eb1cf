"""The platforms the grader runs on besides ``grade-batch``: the Gradescope bundle, the nbgrader course, LTI 1.3 and
the student release bundle.
"""
