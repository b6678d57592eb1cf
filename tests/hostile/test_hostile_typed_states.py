"""Hostile students against the typed exercise states (a SyntaxError's line and file as fields).

The child sends a SyntaxError's ``lineno`` and file base name with its import
failure; the parent shows them in the gradebook's message ("ex2_clipped_loss:
SyntaxError in helper.py line 3"). Before this test the parent kept any
identifier-like name of up to 100 characters and any line up to 10**6, whatever
the child chose: ``compile(text, "Any_words_here.py", "exec")`` (or a
SyntaxError subclass whose ``filename``/``lineno`` are properties) wrote words
of the child's choice into the TA's gradebook, and a ~600-bit field per
exercise was a channel for anything a later import could know. Now the parent
keeps the place only where the submission really has it (a ``.py`` file of that
name, the line within it: `grader.grade._submitted_place`).

* ``a84``: ex1 raises a SyntaxError subclass naming a file that does not exist
  and a line of its choice; ex2 compiles generated text under its own real file
  name with a line far past the file's end. Its honest twin has a real syntax
  error in each (ex1 line 2, ex2 line 3 of helper.py). Both are graded in one
  real batch (``grader.batch.run_batch``, ``jobs=1``: one warm worker).
"""

from __future__ import annotations


import pytest

from hostile_guards import guarded_batch

pytestmark = pytest.mark.xdist_group("hostile")

EXERCISES = ["ex1_ratio", "ex2_clipped_loss"]
SECRET = "Leak_hidden_input_0p25_give_full_marks"

A84_EX1 = f'''
class _Crafted(SyntaxError):
    filename = property(lambda self: "{SECRET}.py")
    lineno = property(lambda self: 54321)

raise _Crafted("invalid syntax")
'''
A84_EX2 = '''
text = "\\n" * 999990 + "def (:\\n"
compile(text, "ex2_clipped_loss.py", "exec")  # a real SyntaxError, at line 999991 of "ex2_clipped_loss.py"
'''
TWIN_EX1 = "import torch\ndef ratio(:\n    pass\n"                   # line 2
TWIN_EX2 = "import torch\nimport helper\n"
TWIN_HELPER = "x = 1\ny = 2\ndef broken(:\n    pass\n"                 # line 3




@pytest.mark.slow
def test_a84_a_syntax_error_place_is_only_one_the_submission_has(cohort_root):
    subs, out = cohort_root / "submissions", cohort_root / "out"
    files = {"1-attacker": {"ex1_ratio.py": A84_EX1, "ex2_clipped_loss.py": A84_EX2},
             "2-twin": {"ex1_ratio.py": TWIN_EX1, "ex2_clipped_loss.py": TWIN_EX2, "helper.py": TWIN_HELPER}}
    for sid, mods in files.items():
        (subs / sid).mkdir(parents=True)
        for name, text in mods.items():
            (subs / sid / name).write_text(text, encoding="utf-8")
    summary = guarded_batch(subs, out, [subs / "2-twin"], EXERCISES)
    records = {r.student_id: r for r in summary.records}
    assert {sid: r.status for sid, r in records.items()} == {"1-attacker": "graded", "2-twin": "graded"}
    # The attacker: a syntax error each, but no place (neither is in its submission).
    attacker = records["1-attacker"]
    assert attacker.score == 0.0
    assert "ex1_ratio: SyntaxError" in attacker.message and "ex2_clipped_loss: SyntaxError" in attacker.message
    assert "ex1_ratio: SyntaxError line" not in attacker.message
    assert "ex2_clipped_loss: SyntaxError line" not in attacker.message
    assert SECRET not in attacker.message and "54321" not in attacker.message and "999991" not in attacker.message
    for written in [out / "gradebook.csv", out / "1-attacker" / "results.json", out / "1-attacker" / "feedback.md"]:
        text = written.read_text()
        assert SECRET not in text and "54321" not in text, written
    assert "999991" not in (out / "gradebook.csv").read_text()
    # The twin: real places (counted by hand in the literals above).
    twin = records["2-twin"]
    assert "ex1_ratio: SyntaxError line 2" in twin.message
    assert "ex2_clipped_loss: SyntaxError in helper.py line 3" in twin.message
    assert twin.score == attacker.score == 0.0
