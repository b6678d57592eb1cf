"""``ppo-course quiz serve`` under uvicorn, one process or several (``--workers N``) behind one database.

The parent process checks the configuration, migrates the store and loads the
roster once (:func:`prepare`), then hands uvicorn the import string of
:func:`app_from_env` with ``factory=True``: uvicorn's own multi-process
supervisor starts ``N`` workers that each build the app from the same
settings (passed in the environment variable :data:`ENV` as JSON, since
uvicorn spawns its workers afresh) and each hold their own connection pool and
symbolic checker. Nothing a rule depends on lives in a worker's memory: the
attempt policy, the one-answer rule, the cooldown and token revocation read
the database (``quiz_bank.instructor.server.db``), so any worker may serve any request.
"""

from __future__ import annotations

import inspect
import json
import os
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from fastapi import FastAPI

ENV = "PPO_QUIZ_SERVE"
#: Idle keep-alive connections stay open this long (uvicorn's 5 s default closes them under a student's
#: feet while a loaded server is still answering others: the browser's next POST then fails to send).
KEEP_ALIVE_S = 30
#: uvicorn's supervisor kills a worker that does not answer its health ping within this time (default 5 s);
#: a worker busy on a loaded machine is slow, not hung: killing it would drop its students' connections.
HEALTHCHECK_S = 60


@dataclass(frozen=True)
class ServeConfig:
    """What every worker needs to build the app (all plain values: it travels as JSON)."""

    db: str
    secret_file: str
    policy: str | None = None
    bank: str | None = None
    trust_proxy: bool = False
    session_hours: float = 12.0
    lti: str | None = None
    base_url: str | None = None

    def to_env(self) -> str:
        """The JSON form placed in :data:`ENV`."""
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls) -> "ServeConfig":
        """The settings the parent process placed in :data:`ENV`.

        Raises:
            RuntimeError: when :data:`ENV` is unset (the factory was not started by ``quiz serve``).
        """
        raw = os.environ.get(ENV)
        if not raw:
            raise RuntimeError(f"{ENV} is not set: start the server with `ppo-course quiz serve`")
        return cls(**json.loads(raw))


def prepare(config: ServeConfig, roster: list[dict[str, str]] | None,
            removed: list[str] | None = None) -> tuple[str | None, str]:
    """Migrate the store to the newest schema and load the roster, once, before any worker starts.

    The roster given replaces the stored one: students no longer on it are removed (their sign-in tokens stop
    working; their answers stay), and their ids are appended to ``removed``.

    Returns:
        (revision before, revision after) of the store's schema.
    """
    from quiz_bank.instructor.server import database
    from quiz_bank.instructor.server.db import QuizDB

    db = QuizDB(config.db, migrate=False, pool_size=1)
    try:
        revisions = database.migrate(db.engine)
        if config.lti is not None:  # a tool folder's former files: into the store once, before any worker
            from lms.lti.stored import import_folder
            from lms.lti.tables import import_folder_file

            import_folder_file(config.lti, db.engine)
            import_folder(config.lti, db.engine)
        if roster:
            db.load_roster(roster)
            gone = db.prune_roster(roster)
            if removed is not None:
                removed.extend(gone)
    finally:
        db.close()
    return revisions


def app_from_env() -> FastAPI:
    """The app of one worker (uvicorn calls this with ``factory=True``); its symbolic checker stops with it."""
    from quiz_bank.loader import load_bank
    from quiz_bank.instructor.server.app import create_app
    from quiz_bank.instructor.server.auth import load_secret
    from quiz_bank.instructor.server.policy import load_policy
    from quiz_bank.symbolic import SymbolicChecker

    # The computed answer keys run ppo_reference on torch; importing it before the worker serves keeps a
    # student's first such answer from waiting for the import (13-20 s measured on a loaded 2-core machine).
    import ppo_reference  # noqa: F401

    config = ServeConfig.from_env()
    lti_tool = None
    if config.lti is not None:
        from lms.lti.tool import LtiTool

        lti_tool = LtiTool(Path(config.lti), config.base_url)
    checker = SymbolicChecker()
    app = create_app(load_bank(config.bank), config.db, load_secret(config.secret_file),
                     policy=load_policy(config.policy) if config.policy else None, checker=checker,
                     trust_proxy=config.trust_proxy, session_hours=config.session_hours, lti_tool=lti_tool)

    passback = getattr(app.state, "passback_worker", None)  # LTI: posts the queued scores in this process

    @asynccontextmanager
    async def lifespan(_app):
        if passback is not None:
            passback.wake()  # scores queued before a restart are posted without waiting for a new answer
        try:
            yield
        finally:
            if passback is not None:
                passback.stop()
            checker.close()
            app.state.service.db.close()

    app.router.lifespan_context = lifespan
    return app


def run(config: ServeConfig, host: str, port: int, workers: int) -> None:
    """Serve until Ctrl-C: ``workers`` uvicorn processes (1: in this process)."""
    import uvicorn

    os.environ[ENV] = config.to_env()
    extra = {}
    if "timeout_worker_healthcheck" in inspect.signature(uvicorn.run).parameters:
        extra["timeout_worker_healthcheck"] = HEALTHCHECK_S
    uvicorn.run("quiz_bank.instructor.server.serving:app_from_env", factory=True, host=host, port=port, workers=workers,
                log_level="warning", timeout_keep_alive=KEEP_ALIVE_S, **extra)
