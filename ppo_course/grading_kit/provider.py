"""How a grader test reaches the student's module: the provider protocol shared by public and hidden tests.

A test never imports a student module itself: it asks the *provider*, a pytest
plugin marked ``is_student_provider = True`` (``find_provider``), for the module of its ``EXERCISE``. The hidden grader
registers one that talks to the sandbox (``grader.hidden.provider``);
``ppo-course check`` registers ``LocalProvider``
(``ppo_course.check_support.local``), which imports the student's files on
their own machine.

Both providers hand the tests an object with the same surface:

* `mod.<function>(*args, **kwargs)`: call a function; tensor arguments are
  copied first (as the sandbox's channel does), so a test's inputs stay intact;
* `mod.call_with_grad(name, args, kwargs, wrt=(...), grad_output=None)`:
  returns `(output, {param_name: grad or None})`, the gradient of the output
  (the first element when it is a tuple) w.r.t. the named parameters;
* `mod.new(class_name, *args, **kwargs)`: an instance of a student class;
* `mod.modified_inputs(name, args, kwargs)`: the names of tensor arguments the
  call changed in place.
"""

from __future__ import annotations

import re

from ppo_course.syllabus import EXERCISES

_MODULE_LACKS_NAME = re.compile(r"module '(?P<module>[A-Za-z_]\w*)' has no attribute '[A-Za-z_]\w*'")


def is_missing_exercise_name(type_name: str, message: str) -> bool:
    """True when an ``AttributeError`` says that an exercise's module (``ex1_ratio`` ... ``ex7_ppo_step``) lacks a
    name: ``module 'ex1_ratio' has no attribute 'probability_ratio'`` (the ``missing_name`` diagnosis).

    Any other ``AttributeError`` (``'Tensor' object has no attribute 'squeezee'``, ``module 'torch' has no
    attribute ...``) is raised by the student's code itself and is not a missing name of the exercise.
    """
    if type_name != "AttributeError":
        return False
    found = _MODULE_LACKS_NAME.search(message)
    return found is not None and found["module"] in EXERCISES


def is_inplace_error(type_name: str, message: str) -> bool:
    """True for autograd's refusal of an in-place change of an input that requires grad."""
    return type_name == "RuntimeError" and ("leaf Variable that requires grad" in message
                                            or "modified by an inplace operation" in message)


def find_provider(config):
    """The registered student provider (a plugin with `is_student_provider = True`), or None."""
    for plugin in config.pluginmanager.get_plugins():
        if getattr(plugin, "is_student_provider", False) is True:
            return plugin
    return None


class ModuleUnavailable(Exception):
    """The exercise module cannot be used: `diagnosis` is "module_missing" or "module_broken"."""

    def __init__(self, diagnosis: str, detail: str):
        self.diagnosis = diagnosis
        self.detail = detail
        super().__init__(detail)
