"""Issue 10's attacks in the hostile suite: NaN (class 1), exception-text channel (class 3), forged files (class 7).

`test_hostile.py::test_attack_gains_nothing` already grades a32-a34 against their honest
twins (no more points on any test, the other exercise unchanged, nothing outside the
sandbox changed, no process left). This file adds what those attacks are about:

* the same grade on three reruns (byte-identical results.json apart from timings);
* a33: nothing the child chose (its marker, its inputs) in results.json or feedback.md;
* a34: results.json and feedback.md stay small and inert (one total line, no image or link),
  and a student id that is a spreadsheet formula is neutralised in gradebook.csv.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from markdown_it import MarkdownIt

from hostile_limits import SUITE_LIMITS
from hostile_helpers import ATTACKS, CANARY, MARKER, read_attack, write_hostile_submission, write_other_student
from hostile_guards import Guards

pytestmark = [pytest.mark.xdist_group("hostile"), pytest.mark.slow]


def _grade_three_times(attack, tmp_path, fork_server):
    from grader.grade import grade_submission

    other = write_other_student(tmp_path / "cohort" / "other_student")
    guards = Guards([CANARY, other], fork_server.pid)
    outputs = []
    try:
        folder = write_hostile_submission(tmp_path / "cohort" / "hostile", attack, guards.hints(other_student=other))
        for run in range(3):
            result = grade_submission(folder, exercises=[attack.target, attack.other], profile="fast",
                                      limits=SUITE_LIMITS)
            result.timing.clear()
            out = tmp_path / f"run{run}"
            result.write_results_json(out / "results.json")
            result.write_feedback(out / "feedback.md")
            outputs.append(((out / "results.json").read_bytes(), (out / "feedback.md").read_bytes()))
        violations = guards.violations()
    finally:
        guards.restore()
        guards.close()
    assert not violations, "\n".join(violations)
    assert outputs[0] == outputs[1] == outputs[2], f"{attack.name}: three gradings differ"
    return json.loads(outputs[0][0]), outputs[0][1].decode("utf-8")


def _inert(markdown: str) -> None:
    html = MarkdownIt("commonmark").render(markdown)
    assert "<img" not in html and 'href="http://evil' not in html
    assert html.count("<strong>Total:") == 1


def test_a32_nan_is_graded_the_same_three_times(tmp_path, fork_server):
    results, feedback = _grade_three_times(read_attack(ATTACKS / "a32_ex1_nan_hides_mistakes.py"), tmp_path,
                                           fork_server)
    ex1 = [t for t in results["tests"] if "ex1_ratio" in t["tags"] and t["max_score"] > 0]
    # Every value test the twin got right and a32 poisoned must fail (NaN never passes).
    assert any(t["status"] == "failed" and "diagnosis:not_finite" in t["tags"] for t in ex1)
    _inert(feedback)


def test_a33_learns_nothing_through_exception_text(tmp_path, fork_server):
    results, feedback = _grade_three_times(read_attack(ATTACKS / "a33_ex1_exception_name_channel.py"), tmp_path,
                                           fork_server)
    # The class name (which spells the inputs) never appears; hidden tests show no message at all. A public
    # test may show its (capped, cleaned) message: its inputs are public.
    assert f"{MARKER}_" not in json.dumps(results) + feedback
    assert not [t["name"] for t in results["tests"] if "hidden" in t["tags"] and MARKER in t["output"]]
    raised = [t for t in results["tests"] if "diagnosis:raises_error" in t["tags"]]
    assert raised and all("(your code raised Exception)" in t["output"] or "hidden" not in t["tags"]
                          for t in raised)


def test_a34_cannot_forge_feedback_or_blow_up_results(tmp_path, fork_server):
    results, feedback = _grade_three_times(read_attack(ATTACKS / "a34_ex2_markdown_forgery.py"), tmp_path,
                                           fork_server)
    assert len(json.dumps(results)) < 200_000 and len(feedback) < 200_000  # 3 MB of message each time
    _inert(feedback)
    assert "\x1b" not in feedback and "ppohostile![x]" not in feedback
    assert "http://evil.example" not in MarkdownIt("commonmark").render(feedback).split("<code")[0]


def test_a_formula_student_id_is_neutralised_in_the_gradebook(tmp_path, monkeypatch):
    from grader import batch
    from hostile_helpers import SOLUTIONS

    monkeypatch.setattr(batch, "grader_fingerprint", lambda: "pinned")
    subs = tmp_path / "submissions"
    evil = subs / '=HYPERLINK("http://evil.example","ppohostile")'
    evil.mkdir(parents=True)
    (evil / "ex1_ratio.py").write_text((SOLUTIONS / "ex1_ratio.py").read_text(encoding="utf-8"), encoding="utf-8")
    batch.run_batch(subs, tmp_path / "out", jobs=1, profile="fast", exercises=["ex1_ratio"], progress=False,
                    report=False, log=lambda m: None)
    rows = list(csv.reader(io.StringIO((tmp_path / "out" / "gradebook.csv").read_text(encoding="utf-8"))))
    assert len(rows) == 2 and rows[1][0].startswith("'=HYPERLINK")
    assert all(cell[:1] not in ("=", "+", "-", "@", "\t", "\r") for row in rows for cell in row)
