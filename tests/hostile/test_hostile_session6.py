"""Red team, session 6: attack classes a136-a160 that the suite did not have (see README.md).

* a136 (the quiz, elimination over repeated parametric variants) is graded in
  ``tests/quiz/test_quiz_integrity_bench.py`` and ``quiz_bank.mastery.item_key``;
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
