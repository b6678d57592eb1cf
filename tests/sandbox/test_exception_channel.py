"""The covert channel through exception text is closed (issue 10, class 3).

A hostile child can name its exception class after a hidden input, or put a reference
output (obtained through a known-good piece) into the message. Only an allowed built-in
type name and a capped message may cross, decoded in the parent; in a child with
known-good pieces not even the message is shown.
"""

from __future__ import annotations

import textwrap

import pytest
import torch

from grader.sandbox import StudentError, StudentImportError
from grader.sandbox.errors import ALLOWED_EXCEPTION_NAMES, MAX_MESSAGE_CHARS, safe_type_name

LEAKY = textwrap.dedent('''
    import torch

    class Base(Exception):
        pass

    def by_name(x):
        # The class name carries the input's values: the channel of issue 10.
        name = "LEAK_" + "_".join(str(int(v * 1000)) for v in x.reshape(-1).tolist())
        raise type(name, (ValueError,), {})("see my name")

    def by_plain_subclass(x):
        raise type("LEAK_" + str(int(x.sum())), (Base,), {})("x")

    def by_message(x):
        raise RuntimeError("LEAK " + repr(x.tolist()) * 100000)

    def by_fake_builtin(x):
        class ValueError(Exception):  # a student class named like a built-in is still reported by its base
            pass
        raise ValueError("LEAK")
''')


@pytest.fixture
def leaky(load):
    return load({"ex4_gae.py": LEAKY}, "ex4_gae")


def test_a_class_name_never_crosses_only_an_allowed_builtin(leaky):
    x = torch.tensor([1.25, -2.5])
    with pytest.raises(StudentError) as err:
        leaky.by_name(x)
    assert err.value.type_name == "ValueError" and "LEAK" not in str(err.value)
    with pytest.raises(StudentError) as err:
        leaky.by_plain_subclass(x)
    assert err.value.type_name == "Exception" and "LEAK" not in err.value.type_name
    with pytest.raises(StudentError) as err:
        leaky.by_fake_builtin(x)
    assert err.value.type_name == "Exception"


def test_a_message_is_capped(leaky):
    with pytest.raises(StudentError) as err:
        leaky.by_message(torch.ones(3))
    assert len(err.value.message) <= MAX_MESSAGE_CHARS + len("… (truncated)")
    assert err.value.traceback == ""


@pytest.mark.parametrize("name", ["LEAK_1_2_3", "", None, 42, "ValueError\nLEAK", "Exception" * 1000,
                                  "builtins.ValueError"])
def test_the_parent_filters_whatever_the_child_sends(name):
    """A forged reply (the child is hostile and may write any frame) still decodes to an allowed name."""
    err = StudentError.from_reply({"type": name, "base": name, "message": "\x1b[2J" + "m" * 10_000})
    assert err.type_name in ALLOWED_EXCEPTION_NAMES
    assert "\x1b" not in err.message and len(err.message) < MAX_MESSAGE_CHARS + 20
    assert safe_type_name("KeyError") == "KeyError"
    hidden = StudentError.from_reply({"type": name, "message": "LEAK"}, echo=False)
    assert "LEAK" not in hidden.shown() and "LEAK" not in str(hidden)
    imp = StudentImportError.from_reply({"type": name, "message": "LEAK"}, "ex4_gae", echo=False)
    assert "LEAK" not in str(imp)


def test_import_error_names_are_filtered_and_syntax_errors_keep_their_line(load):
    with pytest.raises(StudentImportError) as err:
        load({"ex4_gae.py": "raise type('LEAK_at_import', (KeyError,), {})('k')\n"}, "ex4_gae")
    assert err.value.type_name == "KeyError" and "LEAK_at_import" not in str(err.value)
    with pytest.raises(StudentImportError) as err:
        load({"ex4_gae.py": "x = 1\ndef f(:\n"}, "ex4_gae")
    assert err.value.type_name == "SyntaxError" and "line 2" in str(err.value)


KNOWN_GOOD_THIEF = textwrap.dedent('''
    import torch
    import ex4_gae  # served by the trusted reference (known-good)

    def ppo_step(*args, **kwargs):
        rewards = torch.tensor([[1.0, 2.0, 3.0]])
        adv, _ = ex4_gae.compute_gae(rewards, torch.zeros(1, 3), torch.ones(1, 3, dtype=torch.bool))
        raise ValueError("LEAK " + repr(adv.tolist()))

    def known_good_error():
        ex4_gae.whiten(torch.ones(1, 1), torch.ones(1, 1, dtype=torch.bool))
''')


def test_a_known_good_child_shows_no_message(load):
    module = load({"ex7_ppo_step.py": KNOWN_GOOD_THIEF}, "ex7_ppo_step", known_good=True)
    with pytest.raises(StudentError) as err:
        module.ppo_step()
    assert err.value.type_name == "ValueError" and err.value.echo is False
    assert "LEAK" not in err.value.shown() and "LEAK" not in str(err.value)


def test_known_good_callback_errors_keep_only_the_reference_input_checks():
    """The reference's own input check (whiten on one element) keeps its message; an error from deeper
    code (here: torch) is reported by its type alone, so no computed value can ride in it."""
    import ppo_reference
    from grader.sandbox.known_good import callback_error_message

    with pytest.raises(ValueError) as own:
        ppo_reference.whiten(torch.ones(1, 1), torch.ones(1, 1, dtype=torch.bool))
    assert callback_error_message(own.value)  # the reference's own words about the child's input
    with pytest.raises(RuntimeError) as deep:
        torch.ones(2) @ torch.ones(3)
    assert callback_error_message(deep.value) == ""
