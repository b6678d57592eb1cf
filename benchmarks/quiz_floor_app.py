"""The quiz server's floor: a minimal FastAPI app under uvicorn doing one insert per request.

    python benchmarks/quiz_floor_app.py --db FILE_OR_URL --port P

It answers the routes the benchmark's clients use, with the same forms: ``POST
/stop/{n}/answer`` parses the form and inserts the answer, ``GET /stop/{n}``
inserts a page view; each is one committed ``INSERT`` through the quiz store's own
engine (``lms.engine.engine_for``: the same driver, pool
and durability settings, SQLite or PostgreSQL), run in the thread pool as the quiz's
blocking calls are, and each answers a few bytes of HTML ("Right."). Served by
uvicorn with the quiz server's settings (log level, keep-alive). What it lacks,
by design: sign-in, the attempt's reads, the answer's check, templates, middleware.
"""

from __future__ import annotations

import argparse
import time

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse
from sqlalchemy import Column, Float, Integer, MetaData, Table, Text, insert
from starlette.concurrency import run_in_threadpool

metadata = MetaData()
floor_log = Table("floor_log", metadata, Column("id", Integer, primary_key=True), Column("student", Text),
                  Column("question", Text), Column("answer", Text), Column("at", Float))


def create_floor_app(db: str) -> FastAPI:
    """The floor app on the store ``db`` (an SQLite path or a ``postgresql://`` URL); creates its one table."""
    from lms.engine import engine_for

    engine = engine_for(db)
    metadata.create_all(engine)
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    statement = insert(floor_log)

    def write(student: str, question: str, answer: str) -> None:
        with engine.begin() as conn:
            conn.execute(statement, {"student": student, "question": question, "answer": answer, "at": time.time()})

    @app.post("/stop/{n}/answer", response_class=HTMLResponse)
    async def answer(request: Request, n: int):
        form = await request.form()
        await run_in_threadpool(write, str(form.get("student", "")), str(form.get("question", "")),
                                " ".join(str(v) for v in form.getlist("answer")))
        return HTMLResponse(f"<!doctype html><p>Right.</p><a href='/stop/{n}'>next</a>")

    @app.get("/stop/{n}", response_class=HTMLResponse)
    async def page(request: Request, n: int):
        await run_in_threadpool(write, request.headers.get("cookie", "")[:40], f"page-{n}", "")
        return HTMLResponse(f"<!doctype html><p>Stop {n}</p><form method='post'></form>")

    @app.get("/login", response_class=HTMLResponse)
    async def login():
        return HTMLResponse("<!doctype html><p>floor</p>")

    return app


def main() -> None:
    """Serve the floor app on loopback until killed."""
    import uvicorn

    from quiz_bank.instructor.server.serving import KEEP_ALIVE_S

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(create_floor_app(args.db), host="127.0.0.1", port=args.port, log_level="warning",
                timeout_keep_alive=KEEP_ALIVE_S)


if __name__ == "__main__":
    main()
