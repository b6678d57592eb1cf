"""The LTI tool's state lives in the quiz store: shared by server processes, a nonce used once across them.

Each case runs on SQLite and on a real PostgreSQL (the ``postgres`` fixture). The
second server process is a real one (``lti_second_process.py``, its own engine, its
own copy of the tool folder, as a second machine behind the same database has).
"""

from __future__ import annotations

import base64
import json
import re
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from quiz_server_support import SERVER_SECRET

from joserfc.jwk import KeySet

from lms.lti.launch import LaunchError, LaunchStore
from lms.lti.registry import PlatformRegistration
from lms.lti.tool import STATE_COOKIE, LtiTool
from lms.engine import engine_for
from quiz_bank.instructor.server import database
from tests.lti.mini_lms import MiniLMS

STORES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.xdist_group("postgres"))]
TOOL_URL = "https://127.0.0.1:9200"
ROSTER = [{"student_id": "s-ada", "name": "Ada", "section": "A", "sis_user_id": "ada", "sis_login_id": "",
           "canvas_id": "", "email": "ada@example.edu"}]
SECOND = Path(__file__).with_name("lti_second_process.py")


def _tool(folder: Path, lms: MiniLMS, http) -> LtiTool:
    tool = LtiTool(folder, TOOL_URL, http=http)
    lms.tool_jwks = tool.tool_keys.public_jwks()
    lms.tool_login_url, lms.tool_launch_url = tool.login_url, tool.launch_url
    tool.registry.add(PlatformRegistration(
        issuer=lms.base_url, client_id=lms.client_id, deployment_ids=(lms.deployment_id,),
        auth_login_url=f"{lms.base_url}/auth", auth_token_url=f"{lms.base_url}/token", jwks_url=f"{lms.base_url}/jwks"))
    return tool


def _nonce(id_token: str) -> str:
    payload = id_token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["nonce"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", STORES)
def test_a_launch_accepted_by_a_second_process_is_refused_when_replayed_at_the_first(kind, store_target, tmp_path):
    from quiz_bank.instructor.server.app import create_app
    from quiz_bank.loader import load_bank

    target = store_target(kind)
    lms = MiniLMS()
    lms_client = TestClient(lms.app, base_url=lms.base_url)
    tool = _tool(tmp_path / "lti-a", lms, lms_client)
    lms.add_line_item("link-stop2", "PPO quiz, stop 2", 1.0, resource_id="ppo-stop2")
    lms.link_custom["link-stop2"] = {"quiz": "stop", "stop": "2"}
    first = create_app(load_bank(), target, SERVER_SECRET, roster=ROSTER, lti_tool=tool)
    tool.contexts.bind(lms.base_url, lms.client_id, "course-1")  # in the shared store: the second process sees it
    browser = TestClient(first, base_url=TOOL_URL)
    # The login starts at the first process (it stores the state and nonce in the shared store) ...
    start = browser.get(lms.login_initiation("u-ada", link="link-stop2").replace(TOOL_URL, ""), follow_redirects=False)
    assert start.status_code == 302, start.text
    form = lms_client.get(start.headers["location"].replace(lms.base_url, ""))
    fields = dict(re.findall(r"name='(\w+)' value='([^']*)'", form.text))
    state_cookie = browser.cookies.get(STATE_COOKIE)
    # ... and the platform's form_post lands on the second process (another machine behind the load balancer),
    # started from a folder of its own that holds nothing: its registrations, keys and course come from the store.
    (tmp_path / "lti-b").mkdir()
    request = {"store": target, "folder": str(tmp_path / "lti-b"), "tool_url": TOOL_URL,
               "jwks": lms_client.get("/jwks").json(), "secret": SERVER_SECRET.decode(), "roster": ROSTER,
               "fields": fields, "state_cookie": state_cookie, "origin": lms.base_url}
    run = subprocess.run([sys.executable, str(SECOND)], input=json.dumps(request), capture_output=True, text=True,
                         timeout=300, cwd=Path(__file__).parents[2])
    assert run.returncode == 0, run.stderr[-3000:]
    second = json.loads(run.stdout.strip().splitlines()[-1])
    assert second["status"] == 200 and "as s-ada" in second["text"], second["text"][-600:]
    assert second["jwks"] == browser.get("/lti/jwks").json()  # both processes publish the same keys
    assert sorted(p.name for p in (tmp_path / "lti-b").iterdir()) == []  # nothing written to the second folder
    # The same id_token and state replayed at the first process: refused, with the page saying why.
    replay = browser.post("/lti/launch", data=fields, headers={"Sec-Fetch-Site": "cross-site", "Origin": lms.base_url})
    assert replay.status_code == 400 and "already used" in replay.text, replay.text
    with pytest.raises(LaunchError, match="replayed nonce"):  # the nonce, too, is used in the shared store
        tool.store.use_nonce(_nonce(fields["id_token"]))
    first.state.service.db.close()


def _race(n: int, fn) -> list:
    results: list = [None] * n
    barrier = threading.Barrier(n)

    def one(i: int) -> None:
        barrier.wait()
        try:
            results[i] = fn(i)
        except Exception as exc:  # noqa: BLE001 - the race's losers are the point
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    [t.start() for t in threads]
    [t.join(timeout=120) for t in threads]
    return results


@pytest.mark.parametrize("kind", STORES)
def test_used_nonces_are_pruned_past_any_state_and_the_time_columns_are_indexed(kind, store_target):
    """A nonce used longer ago than NONCE_KEEP_S (no state can carry it any more) is deleted at the next launch; a
    recent one is kept and still refused; the prune and the logins' expiry read an index, not a scan."""
    from sqlalchemy import inspect, select

    from lms.lti import launch, tables

    target = store_target(kind)
    engine = engine_for(target)
    database.migrate(engine)
    now = time.time()
    with engine.begin() as conn:
        conn.execute(tables.lti_nonce_used.insert(), [dict(nonce="old", used=now - launch.NONCE_KEEP_S - 5),
                                                      dict(nonce="recent", used=now - 10)])
    store = LaunchStore(engine)
    store.use_nonce("fresh")
    with engine.connect() as conn:
        kept = sorted(r[0] for r in conn.execute(select(tables.lti_nonce_used.c.nonce)))
    assert kept == ["fresh", "recent"]
    with pytest.raises(LaunchError, match="replayed nonce"):
        store.use_nonce("recent")
    indexed = {t: [i["column_names"] for i in inspect(engine).get_indexes(t)] for t in ("lti_state", "lti_nonce_used")}
    assert ["created"] in indexed["lti_state"] and ["used"] in indexed["lti_nonce_used"], indexed
    engine.dispose()


@pytest.mark.parametrize("kind", STORES)
def test_racing_processes_use_a_nonce_and_a_state_once(kind, store_target):
    """Two engines (as two server processes hold) race: one winner for a nonce, one for a state."""
    target = store_target(kind)
    engines = [engine_for(target), engine_for(target)]
    database.migrate(engines[0])
    stores = [LaunchStore(e) for e in engines]
    used = _race(8, lambda i: stores[i % 2].use_nonce("nonce-1"))
    assert used.count(None) == 1 and all(isinstance(r, LaunchError) and "replayed nonce" in str(r)
                                         for r in used if r is not None), used
    platform = PlatformRegistration(issuer="https://lms.example.edu", client_id="c1", deployment_ids=("d1",),
                                    auth_login_url="https://lms.example.edu/auth",
                                    auth_token_url="https://lms.example.edu/token",
                                    jwks_url="https://lms.example.edu/jwks")
    state, nonce = stores[0].issue(platform)
    taken = _race(8, lambda i: stores[i % 2].consume(state))
    winners = [r for r in taken if not isinstance(r, Exception)]
    assert winners == [(nonce, "https://lms.example.edu", "c1")], taken
    [e.dispose() for e in engines]


# The former tool folder's file, made with the SQL of the tool before revision 0002 (kept verbatim here).
_OLD_LTI_SQLITE = """
CREATE TABLE lti_state (state TEXT PRIMARY KEY, nonce TEXT NOT NULL UNIQUE, issuer TEXT NOT NULL,
                        client_id TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE lti_nonce_used (nonce TEXT PRIMARY KEY, used REAL NOT NULL);
CREATE TABLE lti_score (issuer TEXT, client_id TEXT, lineitem TEXT, user_id TEXT, score REAL, maximum REAL,
                        status TEXT, attempts INTEGER, error TEXT, updated REAL,
                        PRIMARY KEY (issuer, client_id, lineitem, user_id));
CREATE TABLE lti_pending_link (ticket TEXT PRIMARY KEY, launch TEXT, created REAL);
INSERT INTO lti_nonce_used VALUES ('old-nonce', {used});
INSERT INTO lti_score VALUES ('https://lms', 'c1', 'https://lms/items/1', 'u-ada', 0.5, 1.0, 'posted', 1, '', 2.0);
"""


@pytest.mark.parametrize("kind", STORES)
def test_a_tool_folders_former_file_is_imported_once(kind, store_target, tmp_path):
    target = store_target(kind)
    folder = tmp_path / "lti"
    folder.mkdir()
    with sqlite3.connect(folder / "lti.sqlite") as old:
        old.executescript(_OLD_LTI_SQLITE.format(used=time.time() - 60))  # used a minute ago: not yet pruned
    engine = engine_for(target)
    database.migrate(engine)
    tool = LtiTool(folder, TOOL_URL)
    imported = tool.use_store(engine)
    assert imported == {"lti_state": 0, "lti_nonce_used": 1, "lti_score": 1, "lti_pending_link": 0, "lti_link": 0}
    assert not (folder / "lti.sqlite").exists() and (folder / "lti.sqlite.imported").exists()
    assert tool.use_store(engine) is None  # a second start imports nothing
    with pytest.raises(LaunchError, match="replayed nonce"):
        tool.store.use_nonce("old-nonce")
    assert tool.passback.posted_score("https://lms", "c1", "https://lms/items/1", "u-ada") == 0.5
    engine.dispose()


def test_the_lti_command_with_db_imports_the_folder_once_and_reads_the_store(tmp_path, capsys):
    from ppo_course.cli import main

    folder = tmp_path / "lti"
    folder.mkdir()
    with sqlite3.connect(folder / "lti.sqlite") as old:
        old.executescript(_OLD_LTI_SQLITE.format(used=time.time() - 60))  # used a minute ago: not yet pruned
        old.execute("INSERT INTO lti_score VALUES ('https://lms', 'c1', 'https://lms/items/2', 'u-ben', 1.0, 1.0,"
                    " 'pending', 4, 'HTTP 503', 3.0)")
    store = str(tmp_path / "quiz.sqlite")
    argv = ["lti", "--dir", str(folder), "--db", store, "--base-url", TOOL_URL, "retry"]
    assert main(argv) == 1  # one score pending, read from the quiz store
    out = capsys.readouterr().out
    assert "imported" in out and "1 lti_score" not in out and "2 lti_score" in out and "u-ben" in out
    assert main(argv) == 1 and "imported" not in capsys.readouterr().out  # the second run imports nothing
    assert (folder / "lti.sqlite.imported").exists() and database.current_revision(
        engine_for(store)) == database.head_revision()


@pytest.mark.parametrize("kind", STORES)
def test_registrations_and_a_rotation_made_at_one_machine_are_what_another_uses(kind, store_target, tmp_path):
    """Two tools from different folders on one store: one registration, one JWKS; rotation keeps the old key
    published until a token it signed has expired (its 300 s lifetime plus 60 s of leeway), then drops it."""
    from joserfc import jwt as jose_jwt

    from lms.lti import stored

    target = store_target(kind)
    engines = [engine_for(target), engine_for(target)]
    database.migrate(engines[0])
    lms = MiniLMS()
    first = _tool(tmp_path / "a", lms, None)  # registered and keyed in folder a's files
    first.use_store(engines[0])  # ... imported into the store
    second = LtiTool(tmp_path / "b", TOOL_URL)
    second.use_store(engines[1])
    assert second.registry.find(lms.base_url, lms.client_id) == first.registry.find(lms.base_url, lms.client_id)
    assert second.tool_keys.public_jwks() == first.tool_keys.public_jwks() == {"keys": [lms.tool_jwks["keys"][0]]}
    second.registry.remove(lms.base_url, lms.client_id)
    assert first.registry.find(lms.base_url, lms.client_id) is None

    now = [time.time() + 1.0]  # after the import above (its keys were created at the real time)
    keys_a, keys_b = (stored.StoreToolKeys(e, clock=lambda: now[0]) for e in engines)
    old_kid = keys_a.signing_key.kid
    token = keys_a.sign({"iss": "tool"})  # signed just before the rotation: valid until now + 300 s
    new_kid = keys_b.rotate()  # rotated at the other machine
    assert keys_a.signing_key.kid == new_kid and keys_a.kids == [new_kid, old_kid]
    now[0] += 359  # the token expired at +300 s; a platform may allow 60 s of leeway
    published = KeySet.import_key_set(keys_a.public_jwks())
    assert jose_jwt.decode(token, published, algorithms=["RS256"]).claims["iss"] == "tool"
    now[0] += 2  # past +360 s: the old key has left the JWKS at both machines
    assert keys_a.kids == keys_b.kids == [new_kid]
    assert [k["kid"] for k in keys_b.public_jwks()["keys"]] == [new_kid]
    [e.dispose() for e in engines]


def test_without_a_roster_an_lms_user_id_never_becomes_another_students_sis_id():
    """Roster-less: one student has SIS id "17", another no SIS id and LMS user id "17" (Moodle's numeric ids);
    the same "17" on a second LMS is a third person. Three launches, three quiz students."""
    from lms.lti.launch import LaunchData
    from quiz_bank.instructor.server.lti_glue import student_for

    def launch(issuer: str, sub: str, sis: str = "") -> LaunchData:
        return LaunchData(issuer=issuer, client_id="c", deployment_id="d", message_type="LtiResourceLinkRequest",
                          user_id=sub, person_sourcedid=sis)

    ids = [student_for(launch("https://moodle.example.edu", "4", sis="17"), []),
           student_for(launch("https://moodle.example.edu", "17"), []),
           student_for(launch("https://canvas.example.edu", "17"), [])]
    assert ids == ["17", "lti:17@moodle.example.edu", "lti:17@canvas.example.edu"]
