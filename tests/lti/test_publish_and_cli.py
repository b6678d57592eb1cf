"""Exercise grades to the LMS (AGS + NRPS) and the `ppo-course lti` command."""

from __future__ import annotations

import json
from types import SimpleNamespace

from grader.platforms.lti.passback import Passback
from grader.platforms.lti.publish import publish_gradebook
from grader.platforms.lti.services import PlatformServices

LINEITEMS = "http://127.0.0.1:9100/courses/1/lineitems"
MEMBERS = "http://127.0.0.1:9100/courses/1/memberships"


def test_gradebook_posts_rostered_students_only_and_once(lti, tmp_path):
    gradebook = tmp_path / "gradebook.csv"
    gradebook.write_text("student_id,ex1_ratio,ex4_gae,total,max_total,status\n"
                         "ada,10,6.5,16.5,20,graded\nben,0,0,0,20,rejected\nzed,10,10,20,20,graded\n")
    platform = lti.tool.registry.find(lti.lms.base_url, lti.lms.client_id)
    services = PlatformServices(platform, lti.tool.tool_keys, lti.lms_client)
    record = Passback(tmp_path / "p.sqlite", sleep=lambda s: None)
    maxima = {"ex1_ratio": 10.0, "ex4_gae": 10.0}
    out = publish_gradebook(gradebook, maxima, services, record, lineitems_url=LINEITEMS, memberships_url=MEMBERS)
    assert out.unmatched == ["zed"] and out.count("posted") == 4
    posted = {(s["userId"], s["lineitem"].rsplit("/", 1)[1], s["scoreGiven"]) for s in lti.lms.scores}
    items = {i["resourceId"]: i["id"].rsplit("/", 1)[1] for i in lti.lms.line_items.values()}
    assert posted == {("u-ada", items["ex1_ratio"], 10.0), ("u-ada", items["ex4_gae"], 6.5),
                      ("u-ben", items["ex1_ratio"], 0.0), ("u-ben", items["ex4_gae"], 0.0)}
    assert {i["scoreMaximum"] for i in lti.lms.line_items.values()} == {10.0}
    again = publish_gradebook(gradebook, maxima, services, record, lineitems_url=LINEITEMS, memberships_url=MEMBERS)
    assert again.count("unchanged") == 4 and again.count("posted") == 0 and len(lti.lms.scores) == 4


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
