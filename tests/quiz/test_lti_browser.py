"""LTI 1.3 end to end in a real browser: the mini LMS and the quiz server as real HTTP servers, Chromium between them.

The LMS (``tests/lti/mini_lms.py``: its own RSA key and JWKS, the OIDC authorization
endpoint, the OAuth 2 token endpoint taking a signed client assertion, AGS, NRPS)
runs under uvicorn in a thread at ``http://localhost:P``; the quiz server is
``ppo-course quiz serve --lti DIR --base-url http://127.0.0.1:Q`` in a child
process. ``localhost`` and ``127.0.0.1`` are different sites to the browser, so
every hop between them is cross-site exactly as between a hosted LMS and the
tool: the platform's form_post of the id_token is a cross-site POST, and the
tool's state cookie must survive it (SameSite; LTI Security Framework 1.0 §5.1.1).

One browser session walks, in order:

1. the instructor's course page → "Add an activity" → OIDC login initiation →
   the LMS's authorization endpoint → the tool's deep linking picker → stop 7 →
   the signed ``LtiDeepLinkingResponse`` is form-posted to the LMS, which adds the
   link and its line item (DL 2.0 §3.1, §4.5);
2. the student's course page → that link → login → launch → the quiz signs her
   in as her roster identity on stop 7 → she answers every question right → the
   LMS's score endpoint receives 1/1, Completed, FullyGraded for her LMS user id
   (the launch's ``sub``) on that link's line item (AGS 2.0 §3.4);
3. two hostile launches from the same course page: her old id_token replayed
   under a fresh login (a used nonce), and an id_token whose roles claim she
   edited to Instructor (the signature breaks): each ends on the tool's
   "This launch was refused" page, and nothing reaches the gradebook.

Where Chromium is missing the test is skipped, except under CI (CI=true), where
it fails (``test_server_browser._browser_or_skip``).
"""

from __future__ import annotations

import base64
import json
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from quiz_server_support import ServerProcess, form_answer, free_port, offline_service
from test_server_browser import CHROMEDRIVER, CHROMIUM, FLAGS, _browser_or_skip

from tests.lti.mini_lms import MiniLMS

pytestmark = pytest.mark.slow

LTI_ROLES = "https://purl.imsglobal.org/spec/lti/claim/roles"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
STOP = 7  # the stop with the fewest claims (4 questions an attempt under the mastery policy)


class LmsServer:
    """The mini LMS under uvicorn in a daemon thread on a loopback port, reached as ``http://localhost:PORT``."""

    def __init__(self) -> None:
        self._on_a_free_port()

    def _on_a_free_port(self) -> None:
        import uvicorn

        self.port = free_port()
        self.lms = MiniLMS(base_url=f"http://localhost:{self.port}")
        config = uvicorn.Config(self.lms.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> "LmsServer":
        # free_port()'s pick may be taken before uvicorn binds it (another xdist worker's connection): the
        # server thread then ends at once, and the LMS (not yet known to anyone) moves to a fresh port.
        for attempt in range(3):
            self.thread.start()
            deadline = time.monotonic() + 30
            while not self.server.started and self.thread.is_alive() and time.monotonic() < deadline:
                time.sleep(0.05)
            if self.server.started:
                return self
            if self.thread.is_alive() or attempt == 2:
                raise RuntimeError("the mini LMS did not start")
            self._on_a_free_port()
        raise AssertionError("unreachable")

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def _roster(path):
    """The quiz's roster: Ada is s-ada (SIS id 'ada', as the LMS's lis.person_sourcedid says); Ben is not on it."""
    path.write_text("student_id,name,sis_user_id,email\ns-ada,Ada Lovelace,ada,ada@example.edu\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """(LMS, quiz server, browser): both servers up, the platform registered, the LMS knowing the tool's URLs."""
    _browser_or_skip()
    from ppo_course.cli import main

    work = tmp_path_factory.mktemp("lti-browser")
    with LmsServer() as lms_server:
        lms = lms_server.lms
        port = free_port()
        tool_url = f"http://127.0.0.1:{port}"
        # The registration as docs/lti.md tells an instructor to make it (the CLI, in process).
        assert main(["lti", "--dir", str(work / "lti"), "--base-url", tool_url, "register", "--name", "mini",
                     "--issuer", lms.base_url, "--client-id", lms.client_id, "--deployment-id", lms.deployment_id,
                     "--auth-login-url", f"{lms.base_url}/auth", "--auth-token-url", f"{lms.base_url}/token",
                     "--jwks-url", f"{lms.base_url}/jwks"]) == 0
        lms.tool_login_url, lms.tool_launch_url = f"{tool_url}/lti/login", f"{tool_url}/lti/launch"
        lms.tool_jwks_url = f"{tool_url}/lti/jwks"  # the LMS reads the tool's keys from its JWKS URL
        server = ServerProcess(work, [], port=port, policy="default: {mode: mastery, cooldown_s: 0}\n",
                               roster=_roster(work / "roster.csv"),
                               extra_args=("--lti", str(work / "lti"), "--base-url", tool_url))
        with ThreadPoolExecutor(1) as pool:  # the server boots while Chromium starts
            booting = pool.submit(server.start)
            try:
                driver = _chromium(work / "chromium-profile")
                try:
                    booting.result()
                    yield lms, server, driver
                finally:
                    driver.quit()
            finally:
                booting.exception()  # waits for the boot to end, whatever happened
                server.kill()
                shutil.rmtree(work / "chromium-profile", ignore_errors=True)


def _chromium(profile):
    """A headless Chromium with a fresh profile (the flags of test_server_browser: nothing fetched from outside)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    return driver


def _follow(driver, element_id: str, until_id: str, timeout: float = 30) -> None:
    """Click ``element_id`` and wait for a new page holding ``until_id`` (auto-submitting forms and refreshes between).

    Like ``test_server_browser._click_and_wait`` (the old page is marked; the wait
    ignores Chromium's errors during a navigation), polling every 50 ms.
    """
    from selenium.common.exceptions import TimeoutException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_script("window.__ppoCourseOldPage = true;")
    driver.find_element(By.ID, element_id).click()
    try:
        WebDriverWait(driver, timeout, poll_frequency=0.05, ignored_exceptions=(WebDriverException,)).until(
            lambda d: d.execute_script("return window.__ppoCourseOldPage !== true && document.readyState === 'complete'")
            and d.find_elements(By.ID, until_id))
    except TimeoutException:
        pytest.fail(f"no #{until_id} after clicking #{element_id}: at {driver.current_url}: {driver.page_source[:1500]}")


def _answer(driver, service, student: str) -> None:
    """Answer the question on the page right (the key of the variant shown) and wait for the verdict page."""
    from selenium.webdriver.common.by import By

    attempt = int(driver.find_element(By.NAME, "attempt").get_attribute("value"))
    qid = driver.find_element(By.NAME, "question").get_attribute("value")
    value = form_answer(service, student, qid, attempt, right=True)
    if service.bank.by_id[qid].type in ("single", "multi", "true_false"):
        for label in [value] if isinstance(value, str) else value:
            driver.find_element(By.ID, f"opt-{label}").click()
    else:
        driver.find_element(By.ID, "answer-text").send_keys(value)
    _follow(driver, "submit-answer", "verdict")
    assert driver.find_element(By.ID, "verdict").text == "Answer recorded.", _page(driver)  # mastery: no verdict yet


def _page(driver) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.TAG_NAME, "body").text


def _forge_instructor(token: str) -> str:
    """The id_token with its roles claim edited to Instructor, the platform's signature kept (a student's forgery)."""
    header, payload, signature = token.split(".")
    body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    body[LTI_ROLES] = [INSTRUCTOR]
    forged = base64.urlsafe_b64encode(json.dumps(body).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


def _assert_refused(driver, words: str) -> None:
    from selenium.webdriver.common.by import By

    assert driver.title == "Launch refused", driver.page_source[:1000]
    message = driver.find_element(By.ID, "lti-error").text
    assert words in message, message
    assert "Traceback" not in driver.page_source and "Internal Server Error" not in driver.page_source


def test_deep_link_then_launch_answer_and_the_lms_receives_the_score_then_hostile_launches_are_refused(course, bank):
    from selenium.webdriver.common.by import By

    lms, server, driver = course
    laps = [("start", time.monotonic())]

    # 1. The instructor adds stop 7 from the LMS's picker (Deep Linking 2.0).
    driver.get(f"{lms.base_url}/course/u-prof")
    _follow(driver, "add-activity", "add")
    assert "Add the PPO quiz to RLHF 101" in _page(driver)
    driver.find_element(By.CSS_SELECTOR, f"input[name='choice'][value='stop{STOP}']").click()
    _follow(driver, "add", "added")
    (response,) = lms.deep_link_results
    assert response["https://purl.imsglobal.org/spec/lti-dl/claim/data"] == "opaque-123"
    (item,) = response["https://purl.imsglobal.org/spec/lti-dl/claim/content_items"]
    assert item["type"] == "ltiResourceLink" and item["custom"] == {"quiz": "stop", "stop": str(STOP)}
    assert item["url"] == server.url + "/lti/launch"
    assert list(lms.links) == ["dl-1"] and lms.line_items["dl-1"]["resourceId"] == f"ppo-stop{STOP}"
    line_item = lms.line_items["dl-1"]["id"]
    laps.append(("deep link", time.monotonic()))

    # 2. The student opens it from the course page, lands on stop 7 signed in, and passes it.
    driver.get(f"{lms.base_url}/course/u-ada")
    _follow(driver, "dl-1", "start")
    assert driver.current_url == f"{server.url}/stop/{STOP}"
    assert driver.find_element(By.CLASS_NAME, "who").text == "s-ada"
    service = offline_service(bank)
    _follow(driver, "start", "submit-answer")
    answered = 0
    while driver.find_elements(By.ID, "submit-answer"):
        _answer(driver, service, "s-ada")
        answered += 1
        if driver.find_elements(By.ID, "stop-passed"):
            break
        _follow(driver, "next", "submit-answer")
    # One item per claim (4 claims at stop 7), and more drawn until blind guessing passes at most 0.1%.
    assert answered >= 4 and driver.find_element(By.ID, "stop-passed").text.startswith(f"Stop {STOP} passed")
    laps.append((f"launch + {answered} answers", time.monotonic()))
    deadline = time.monotonic() + 30
    while not lms.scores and time.monotonic() < deadline:  # posted by a background task after the response
        time.sleep(0.1)
    (score,) = lms.scores
    assert (score["userId"], score["lineitem"], score["scoreGiven"], score["scoreMaximum"]) == ("u-ada", line_item, 1, 1)
    assert (score["activityProgress"], score["gradingProgress"]) == ("Completed", "FullyGraded")
    laps.append(("score at the LMS", time.monotonic()))

    # 3a. Her first id_token replayed under a fresh login: the nonce was used.
    first_token = lms.issued[1]  # issued[0] is the instructor's deep linking request
    lms.rewrite_id_token = lambda token: first_token
    driver.get(f"{lms.base_url}/course/u-ada")
    _follow(driver, "dl-1", "lti-error")
    _assert_refused(driver, "nonce")

    # 3b. She edits her roles claim to Instructor: the platform's signature no longer verifies.
    lms.rewrite_id_token = _forge_instructor
    driver.get(f"{lms.base_url}/course/u-ada")
    _follow(driver, "dl-1", "lti-error")
    _assert_refused(driver, "signature")
    lms.rewrite_id_token = None
    driver.get(server.url + "/instructor")
    assert "s-ada" in driver.find_element(By.CLASS_NAME, "who").text  # still the student, never the instructor
    assert len(lms.scores) == 1
    laps.append(("two hostile launches", time.monotonic()))
    print("LTI browser walk:", ", ".join(f"{name} {t - before:.1f} s" for (_, before), (name, t) in zip(laps, laps[1:])))
