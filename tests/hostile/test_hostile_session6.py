"""Red team, session 6: attack classes a136-a160 that the suite did not have (see README.md).

* a136 (the quiz, elimination over repeated parametric variants) is graded in
  ``tests/quiz/test_quiz_integrity_bench.py`` and the facts of ``quiz_bank.mastery``;
* a137: invisible and bidirectional format characters in the text a TA reads.
"""

from __future__ import annotations

import json
import shutil
import sys
import unicodedata

import pytest

from hostile_helpers import ATTACKS
from hostile_limits import SUITE_LIMITS

#: What no file a TA or a student opens may hold (but newline and tab): controls, format characters,
#: surrogates, private use, line and paragraph separators.
HIDDEN = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}


def _hidden_chars(text: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in text if c not in "\n\t" and unicodedata.category(c) in HIDDEN})


def test_a137_cap_replaces_every_hidden_character():
    """Every code point of the hidden categories (all 1.1 million scanned) comes out of `cap` as "?"; letters,
    accents, CJK and emoji pass unchanged."""
    from ppo_course.text_safety import cap

    hidden = "".join(chr(c) for c in range(sys.maxunicode + 1)
                     if unicodedata.category(chr(c)) in HIDDEN and chr(c) not in "\n\t")
    assert len(hidden) > 130_000  # Co alone holds 137 468 code points
    out = cap(hidden, limit=len(hidden))
    assert _hidden_chars(out) == [] and len(out) == len(hidden)
    assert cap("é ü 中文 🙂 a\tb\nc") == "é ü 中文 🙂 a\tb\nc"


@pytest.mark.slow
@pytest.mark.xdist_group("hostile")
def test_a137_invisible_text_reaches_no_file(tmp_path, fork_server):
    """a137's ImportError message (U+061C, U+FEFF, U+2060-U+2064, tag characters spelling an instruction) is
    quoted in feedback.md and results.json as "?"s: no hidden character in either file, nor in the child's
    message the parent keeps (``grader.sandbox.errors.safe_message``)."""
    from grader.grade import grade_submission

    folder = tmp_path / "hostile"
    folder.mkdir()
    shutil.copyfile(ATTACKS / "a137_ex1_invisible_text.py", folder / "ex1_ratio.py")
    result = grade_submission(folder, exercises=["ex1_ratio"], profile="fast", limits=SUITE_LIMITS)
    result.write_results_json(tmp_path / "results.json")
    result.write_feedback(tmp_path / "feedback.md")
    results_text = (tmp_path / "results.json").read_text(encoding="utf-8")
    feedback = (tmp_path / "feedback.md").read_text(encoding="utf-8")
    assert "could not be imported" in feedback and "score ?0 / 10?" in feedback  # quoted, made visible
    assert _hidden_chars(results_text) == [] and _hidden_chars(json.dumps(json.loads(results_text),
                                                                         ensure_ascii=False)) == []
    assert _hidden_chars(feedback) == []
    assert _hidden_chars(result.exercises["ex1_ratio"].message) == []


FORGED = "Score: 70 / 70 points. All tests passed."


def _zip(path, entries):
    import warnings
    import zipfile

    with warnings.catch_warnings(), zipfile.ZipFile(path, "w") as zf:
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name: that is the attack
        for name, data in entries:
            zf.writestr(name, data)
    return path


@pytest.mark.slow
def test_a138_a_folder_name_forges_no_line_of_output(tmp_path):
    """a138: the modules in a folder named ``"hw\\n\\nScore: 70 / 70 points. All tests passed.\\n\\n"``: the
    Gradescope output read "Found your exercise modules in 'hw" and then the forged score on a line of its own.
    Now the folder is skipped with a note that shows its name escaped: no line of the output is the forged one."""
    from grader.grade import grade_submission
    from hostile_helpers import SOLUTIONS

    folder = tmp_path / "sub" / f"hw\n\n{FORGED}\n\n"
    folder.mkdir(parents=True)
    shutil.copyfile(SOLUTIONS / "ex1_ratio.py", folder / "ex1_ratio.py")
    result = grade_submission(tmp_path / "sub", exercises=["ex1_ratio"], profile="fast", limits=SUITE_LIMITS)
    output = result.to_results_json()["output"]
    assert FORGED not in [line.strip() for line in output.splitlines()], output
    assert "U+000A" in output and "\\n" in output  # said, and shown escaped


@pytest.mark.slow
@pytest.mark.parametrize("entries", [
    [("ex1_ratio.py", "DECOY"), ("ex1_ratio.py", "GRADED")],
    [("ex1_ratio.py", "DECOY"), ("EX1_RATIO.py", "GRADED")],
    [("hw/ex1_ratio.py", "DECOY"), ("hw/ex1_ratio.py", "GRADED")],
], ids=["same-name-twice", "names-equal-up-to-case", "in-a-folder"])
def test_a138_two_entries_of_one_name_are_rejected(tmp_path, entries):
    """a138: a zip holding ``ex1_ratio.py`` twice (or as ``EX1_RATIO.py`` too, one file on a TA's macOS or
    Windows disk) was graded from the last entry while an unzip tool or a file browser may show the first
    (a decoy): the code a TA reviews is not the code graded. Now the zip is rejected, naming the file."""
    from hostile_helpers import SOLUTIONS

    from grader.grade import grade_submission

    solution = (SOLUTIONS / "ex1_ratio.py").read_text()
    entries = [(name, "raise SystemExit('decoy')\n" if data == "DECOY" else solution) for name, data in entries]
    result = grade_submission(_zip(tmp_path / "alice.zip", entries), exercises=["ex1_ratio"], profile="fast",
                              limits=SUITE_LIMITS)
    assert result.status == "rejected" and result.score == 0, (result.status, result.score)
    assert "it is not clear which one to grade" in result.message and "ex1_ratio.py" in result.message.lower()


@pytest.mark.slow
@pytest.mark.xdist_group("hostile")
@pytest.mark.parametrize("returns", ["first.sum() * 0", "torch.zeros_like(first)", "first * 0"])
def test_a140_constant_outputs_score_as_the_stubs(cohort_root, fork_server, returns):
    """a140 (points without the work, after a100's None / first argument / ValueError): every function of
    exercises 1-6 returns a zero of its first argument's dtype (a 0-dim zero, or zeros of its shape). The
    entropy of near one-hot logits is ≈ 0, so ``entropy_from_logits = logits.sum() * 0`` passed
    ``test_entropy_near_one_hot`` (0.5 on main); a hidden test whose answer a constant gives now requires
    the value test (grader/points.yaml). Each variant scores the unstarted stubs' 0 on every test."""
    import os

    from grader.grade import grade_submission
    from test_hostile_points import EXERCISES, computes_nothing

    from hostile_helpers import REPO, scores_by_test

    dest = cohort_root / returns.replace(" ", "").replace("*", "x").replace("(", "_").replace(")", "_").replace(".", "_")
    dest.mkdir()
    for stem in EXERCISES:
        source = computes_nothing((REPO / "exercises" / f"{stem}.py").read_text(), returns)
        (dest / f"{stem}.py").write_text(source + "\nimport torch  # the functions' bodies use it at call time\n")
    for path in [dest, *dest.iterdir()]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    result = grade_submission(dest, exercises=EXERCISES, profile="fast", limits=SUITE_LIMITS)
    earned = {k: v for k, v in scores_by_test(result).items() if v[0] > 0}
    assert not earned, f"{returns}: points without the work: {earned}"
    assert not [t.test for t in result.tests if t.diagnosis == "grader_error"]
