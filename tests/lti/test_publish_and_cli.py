"""Exercise grades to the LMS (AGS + NRPS) and the `ppo-course lti` command."""

from __future__ import annotations

import json
from types import SimpleNamespace

from lms.lti.passback import Passback
from grader.platforms.lti_publish import publish_gradebook
from lms.lti.services import PlatformServices

LINEITEMS = "http://127.0.0.1:9100/courses/1/lineitems"
MEMBERS = "http://127.0.0.1:9100/courses/1/memberships"


def test_gradebook_posts_rostered_students_only_and_once(lti, tmp_path):
    gradebook = tmp_path / "gradebook.csv"
    gradebook.write_text("student_id,ex1_ratio,ex4_gae,total,max_total,status\n"
                         "ada,10,6.5,16.5,20,graded\nben,0,0,0,20,rejected\nzed,10,10,20,20,graded\n")
    platform = lti.tool.registry.find(lti.lms.base_url, lti.lms.client_id)
    services = PlatformServices(platform, lti.tool.tool_keys, lti.lms_client)
    record = Passback(tmp_path / "p.sqlite", sleep=lambda s: None)
    maxima = {"ex1_ratio": 10.0, "ex4_gae": 10.0, "ex7_ppo_step": 20.0}  # ex7 not in this batch: no line item
    out = publish_gradebook(gradebook, maxima, services, record, lineitems_url=LINEITEMS, memberships_url=MEMBERS)
    assert out.unmatched == ["zed"] and out.count("posted") == 2 and list(out.skipped) == ["ben"]
    posted = {(s["userId"], s["lineitem"].rsplit("/", 1)[1], s["scoreGiven"]) for s in lti.lms.scores}
    items = {i["resourceId"]: i["id"].rsplit("/", 1)[1] for i in lti.lms.line_items.values()}
    assert posted == {("u-ada", items["ex1_ratio"], 10.0), ("u-ada", items["ex4_gae"], 6.5)}
    assert {i["scoreMaximum"] for i in lti.lms.line_items.values()} == {10.0} and "ex7_ppo_step" not in items
    report = {r["student_id"]: (r["outcome"], r["why"]) for r in out.report()}
    assert report["ada"][0] == "posted" and report["ben"] == ("skipped", "status 'rejected', not graded: nothing "
                                                              "published for this student")
    assert report["zed"][0] == "skipped" and "no member" in report["zed"][1]
    again = publish_gradebook(gradebook, maxima, services, record, lineitems_url=LINEITEMS, memberships_url=MEMBERS)
    assert again.count("unchanged") == 2 and again.count("posted") == 0 and len(lti.lms.scores) == 2
    assert {r["student_id"]: r["outcome"] for r in again.report()}["ada"] == "unchanged"


def test_a_line_item_made_before_a_points_change_is_named_with_both_maxima(lti, tmp_path):
    """The platform keeps the line item's maximum (10) when ex1 is now worth 12: post-grades says so."""
    gradebook = tmp_path / "gradebook.csv"
    gradebook.write_text("student_id,ex1_ratio,total,max_total,status\nada,9,9,12,graded\n")
    platform = lti.tool.registry.find(lti.lms.base_url, lti.lms.client_id)
    services = PlatformServices(platform, lti.tool.tool_keys, lti.lms_client)
    first = publish_gradebook(gradebook, {"ex1_ratio": 10.0}, services, Passback(tmp_path / "a.sqlite"),
                              lineitems_url=LINEITEMS, memberships_url=MEMBERS)
    assert first.warnings == []
    later = publish_gradebook(gradebook, {"ex1_ratio": 12.0}, services, Passback(tmp_path / "b.sqlite"),
                              lineitems_url=LINEITEMS, memberships_url=MEMBERS)
    assert len(later.warnings) == 1
    assert "'PPO ex1_ratio' is worth 10 points" in later.warnings[0] and "out of 12" in later.warnings[0]


def test_a_faulted_or_scoreless_row_is_never_posted(lti, tmp_path):
    """The grader's fault and a row with no (or a NaN) score are skipped with why; a graded twin is posted."""
    gradebook = tmp_path / "gradebook.csv"
    gradebook.write_text("student_id,ex1_ratio,total,max_total,status,message\n"
                         "ada,,,10,grader_fault,the grader failed\nben,nan,nan,10,graded,\n"
                         "noether,7.5,7.5,10,graded,\n")
    platform = lti.tool.registry.find(lti.lms.base_url, lti.lms.client_id)
    services = PlatformServices(platform, lti.tool.tool_keys, lti.lms_client)
    out = publish_gradebook(gradebook, {"ex1_ratio": 10.0}, services, Passback(tmp_path / "p.sqlite"),
                            lineitems_url=LINEITEMS, memberships_url=MEMBERS)
    assert [(s["userId"], s["scoreGiven"]) for s in lti.lms.scores] == [("u-prof", 7.5)]
    assert "grader_fault" in out.skipped["ada"] and "no score for ex1_ratio" in out.skipped["ben"]


def _lti(tmp_path, *args):
    """`ppo-course lti ...` through the real CLI entry, in process (its output captured)."""
    import contextlib
    import io

    from ppo_course.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["lti", "--dir", str(tmp_path / "tool"), "--base-url", "https://quiz.example.edu", *args])
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def test_register_list_rotate_from_the_command_line(tmp_path):
    done = _lti(tmp_path, "register", "--name", "Canvas", "--issuer", "https://canvas.instructure.com",
                "--client-id", "10000000000001", "--deployment-id", "1:abc", "--auth-login-url",
                "https://sso.canvaslms.com/api/lti/authorize_redirect", "--auth-token-url",
                "https://sso.canvaslms.com/login/oauth2/token", "--jwks-url", "https://sso.canvaslms.com/api/lti/security/jwks")
    assert done.returncode == 0, done.stderr
    listed = _lti(tmp_path, "platforms")
    assert "https://canvas.instructure.com" in listed.stdout and "10000000000001" in listed.stdout
    urls = _lti(tmp_path, "urls").stdout
    assert "https://quiz.example.edu/lti/login" in urls and "https://quiz.example.edu/lti/jwks" in urls
    first = json.loads(_lti(tmp_path, "jwks").stdout)["keys"]
    assert _lti(tmp_path, "rotate-keys").returncode == 0
    second = json.loads(_lti(tmp_path, "jwks").stdout)["keys"]
    assert len(second) == 2 and second[1]["kid"] == first[0]["kid"]
    assert oct((tmp_path / "tool" / "tool_keys.json").stat().st_mode & 0o777) == "0o600"


def test_register_refuses_plain_http_and_missing_fields(tmp_path):
    bad = _lti(tmp_path, "register", "--issuer", "http://lms.example.edu", "--client-id", "x", "--deployment-id", "1",
               "--auth-login-url", "http://lms.example.edu/a", "--auth-token-url", "http://lms.example.edu/t",
               "--jwks-url", "http://lms.example.edu/j")
    assert bad.returncode == 2 and "https" in bad.stderr
    missing = _lti(tmp_path, "register", "--issuer", "https://lms.example.edu")
    assert missing.returncode == 2 and "client_id" in missing.stderr


def _publish_cli(lti, monkeypatch, *args):
    """`ppo-course lti publish` in process, on the fixture's tool folder, its HTTP going to the mini LMS."""
    import contextlib
    import io

    import httpx

    from ppo_course.cli import main

    monkeypatch.setattr(httpx, "Client", lambda *a, **k: lti.lms_client)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["lti", "--dir", str(lti.tool.folder), "--base-url", lti.tool.base_url, *args])
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def test_publish_takes_the_courses_stored_endpoints_and_reports_who_was_posted_and_skipped(lti, tmp_path, monkeypatch):
    batch = tmp_path / "batch"
    batch.mkdir()
    (batch / "gradebook.csv").write_text("student_id,ex1_ratio,total,max_total,status,message\n"
                                         "ada,9,9,10,graded,\nben,,,10,grader_fault,grader failed\n")
    before = _publish_cli(lti, monkeypatch, "publish", str(batch))
    assert before.returncode == 2 and "no line items or memberships URL yet" in before.stderr
    assert lti.lms.scores == []
    token, state = lti.login("u-ada")  # a launch from the course: its AGS and NRPS endpoints are kept
    assert lti.launch(token, state).status_code == 200
    done = _publish_cli(lti, monkeypatch, "publish", str(batch))
    assert done.returncode == 0, done.stderr
    assert [(s["userId"], s["scoreGiven"], s["scoreMaximum"]) for s in lti.lms.scores] == [("u-ada", 9.0, 10.0)]
    assert "skipped: ben: status 'grader_fault'" in done.stderr and "posted 1" in done.stdout
    report = json.loads((batch / "lti_publish_report.json").read_text())
    assert {r["student_id"]: r["outcome"] for r in report["students"]} == {"ada": "posted", "ben": "skipped"}
    assert report["lineitems"] == LINEITEMS and report["memberships"] == MEMBERS
    again = _publish_cli(lti, monkeypatch, "post-grades", str(batch))  # post-grades: the same stored endpoints
    assert again.returncode == 0 and len(lti.lms.scores) == 1 and "unchanged 1" in again.stdout


def test_courses_bind_and_unbind_from_the_command_line(lti, monkeypatch):
    listed = _publish_cli(lti, monkeypatch, "courses")
    assert "course course-1 (RLHF 101)" in listed.stdout
    bound = _publish_cli(lti, monkeypatch, "bind-context", "--issuer", lti.lms.base_url, "--client-id",
                         lti.lms.client_id, "--context", "course-2")
    assert bound.returncode == 0 and "course-2" in _publish_cli(lti, monkeypatch, "courses").stdout
    several = _publish_cli(lti, monkeypatch, "publish", "/nonexistent")
    assert several.returncode == 2 and "several LMS courses are bound" in several.stderr
    assert _publish_cli(lti, monkeypatch, "unbind-context", "--issuer", lti.lms.base_url, "--client-id",
                        lti.lms.client_id, "--context", "course-2").returncode == 0
    assert "course-2" not in _publish_cli(lti, monkeypatch, "courses").stdout
