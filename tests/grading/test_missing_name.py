"""`missing_name` names an exercise module that lacks a name, and nothing else an AttributeError says.

An attribute typo inside the student's own code (``tensor.squeezee``) was told "The module does not define a
name the exercise asks for": it is the student's code raising (``raises_error``), named by the message it shows.
"""

from __future__ import annotations

import pytest

from ppo_course.grading_kit.provider import is_missing_exercise_name


@pytest.mark.parametrize("type_name, message, expected", [
    ("AttributeError", "module 'ex1_ratio' has no attribute 'probability_ratio'", True),
    ("AttributeError", "module 'ex3_full_loss' has no attribute 'masked_mean'", True),
    ("AttributeError", "'Tensor' object has no attribute 'squeezee'", False),
    ("AttributeError", "module 'torch' has no attribute 'logsoftmax'", False),
    ("AttributeError", "'RolloutBuffer' object has no attribute '_rows'", False),
    ("AttributeError", "'NoneType' object has no attribute 'shape'", False),
    ("NameError", "module 'ex1_ratio' has no attribute 'probability_ratio'", False),
])
def test_only_an_exercise_module_lacking_a_name_is_missing_name(type_name, message, expected):
    assert is_missing_exercise_name(type_name, message) is expected


def test_check_names_an_attribute_typo_in_the_students_code_raises_error():
    """`ppo-course check`'s local classifier agrees with the grader's (`check_support.local.LocalProvider.classify`)."""
    from ppo_course.check_support.local import LocalProvider

    assert LocalProvider.classify(AttributeError("'Tensor' object has no attribute 'squeezee'"))[0] == "raises_error"
    assert LocalProvider.classify(AttributeError("module 'ex4_gae' has no attribute 'whiten'"))[0] == "missing_name"
