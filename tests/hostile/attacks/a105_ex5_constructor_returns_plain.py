"""Exercise 5: a `RolloutBuffer` that is not a class, to make the grader blame itself.

Tries: the twin stores the autograd graph (the catalogue's `stores_graph`
mistake). Here `RolloutBuffer` is a function that returns a plain int, so every
`student.new("RolloutBuffer")` of the public and hidden tests got the number 7
back (the codec sends plain values as data) and the tests' own next line
(`buf.phase`, `buf.add(...)`) raised AttributeError inside the grader: on main,
14 tests of exercise 5 were diagnosed `grader_error` ("fix the grader"), the
detail naming the grader's checkout path. The same held for exercise 6's
`AdaptiveKLController` and for a class whose `__new__` returns None.
Must achieve: nothing. `RemoteModule.new` (the one way test code builds a
student's object) returns only an instance handle (`RemoteObject`); a plain
value raises `StudentProtocolError`, the student's TypeError (`raises_error`),
never the grader's.
"""

TARGET = "ex5_rollout_buffer"
TWIN = "ex5_stores_graph.py"

import twin_code

_TWIN_CLASS = twin_code.RolloutBuffer  # the twin's buffer, never built here


def RolloutBuffer(*args, **kwargs):
    return 7
