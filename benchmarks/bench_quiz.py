"""Throughput and latency of the quiz server on loopback, SQLite and PostgreSQL, 1 and 2 server processes.

    python benchmarks/bench_quiz.py --quick         # 50 and 500 students, 1 process (make bench, a few minutes)
    python benchmarks/bench_quiz.py                 # fast profile: 50, 500, 2,000 students, 1 and 2 processes
    python benchmarks/bench_quiz.py --full          # every question of stop 1 per student
    python benchmarks/bench_quiz.py --students 500 --stores postgresql --workers 2

For each store (an SQLite file; a PostgreSQL server started for the run from
the system's binaries, fsync on: ``quiz_bank.instructor.server.pg_local``) and each
number of server processes (``quiz serve --workers N``), one server is started
with a roster of every simulated student, and each load level (50, 500 and
2,000 concurrent students by default) uses fresh students: each starts stop 1
(not timed), then all are released at once and each answers its next ``K``
questions right, as a browser does: POST the answer, then GET the next
question's page. Printed per run: answers per second (answers stored / wall
time of the answering phase, page loads included), the median and p95
latency of an answer POST (each is one committed transaction before the
reply), the server's CPU-ms per answer with its next page (user + system
time of the server's processes, read from the OS before and after the
answering phase, so the machine's other load does not count), and a check in
the database that every answer was stored once. The answers are built with
the server's variant key (derived from its secret, ``app.variant_key``), so
every one is right.

The floor (``benchmarks/quiz_floor_app.py``: FastAPI under uvicorn, one insert
per request through the same store engine) is driven by the same clients at the
same load levels in the same run, and the script prints, per store,
``ratio quiz/floor CPU per answer: X`` (the quiz's CPU-ms per answer and page
over the floor's, single-process runs; lower is better).

The clients are one asyncio process (httpx) on the same machine as the
server, so they share its cores; ``uptime``'s load is printed with the
figures. ``--profile`` (on by default where py-spy is installed: the ``bench``
extra, ``pip install -e .[bench]``) samples the server processes with py-spy during
one run (PostgreSQL, most workers, the middle load) and prints where their time
goes. For the CPU cost of one answer in process, with a cProfile of it, see
``benchmarks/profile_quiz_answer.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

import psutil

from quiz_bank.engine import expected_answer
from quiz_bank.loader import load_bank
from quiz_bank.instructor.server.app import variant_key
from quiz_bank.instructor.server.auth import TokenSigner
from quiz_bank.instructor.server.quiz import QuizService

SECRET = "bench-secret-" + "0" * 40
COOKIE = "ppo_quiz_token"
FAST_K = {50: 6, 500: 2, 2000: 1}  # answers per student in the fast profile, by load level
STOP = 1
FLOOR = Path(__file__).with_name("quiz_floor_app.py")


def server_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its living descendants (uvicorn's workers)."""
    total = 0.0
    try:
        root = psutil.Process(pid)
        for proc in [root, *root.children(recursive=True)]:
            try:
                times = proc.cpu_times()
                total += times.user + times.system
            except psutil.NoSuchProcess:
                continue
    except psutil.NoSuchProcess:
        pass
    return total


def right_answer(service: QuizService, student: str, question_id: str, attempt: int):
    """The form value(s) a student who knows the answer posts (labels as shown)."""
    variant = service.variant(student, question_id, attempt)
    key = expected_answer(variant)
    label_of = {option_id: label for label, option_id, _ in variant.choices}
    kind = variant.question.type
    if kind == "single":
        return label_of[key]
    if kind == "multi":
        return sorted(label_of[i] for i in key)
    if kind == "true_false":
        return "true" if key else "false"
    if kind == "ordering":
        return " ".join(label_of[i] for i in key)
    return repr(float(key)) if kind == "numeric" else str(key)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(workdir: Path, db: str, students: list[str], workers: int,
                 floor: bool = False) -> tuple[subprocess.Popen, int]:
    """``ppo-course quiz serve --workers N`` (or the floor app) on a free loopback port; returns once a page is served."""
    (workdir / "quiz.secret").write_text(SECRET + "\n")
    (workdir / "policy.yaml").write_text("default: {mode: cooldown, cooldown_s: 0}\n")
    with open(workdir / "roster.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student_id"])
        writer.writerows([s] for s in students)
    port = _free_port()
    argv = [sys.executable, "-c", "import sys; from ppo_course.cli import main; sys.exit(main())", "quiz", "serve",
            "--port", str(port), "--db", db, "--secret-file", str(workdir / "quiz.secret"),
            "--roster", str(workdir / "roster.csv"), "--policy", str(workdir / "policy.yaml"),
            "--workers", str(workers)]
    if floor:
        argv = [sys.executable, str(FLOOR), "--db", db, "--port", str(port)]
    log = open(workdir / f"server-{port}.log", "wb")
    proc = subprocess.Popen(argv, cwd=workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env=dict(os.environ, OMP_NUM_THREADS="1"))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}: {(workdir / log.name).read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/login", timeout=2).status_code == 200:
                return proc, port
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    stop_server(proc)
    raise SystemExit("the server did not start within 300 s")


def stop_server(proc: subprocess.Popen) -> None:
    """SIGKILL the server's process group (supervisor and workers)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _orders(db: str, students: list[str]) -> dict[str, tuple[int, list[str]]]:
    from quiz_bank.instructor.server.db import QuizDB

    store = QuizDB(db, migrate=False, pool_size=1)
    try:
        return {a.student_id: (a.attempt, list(a.question_order)) for a in store.all_attempts()
                if a.stop == STOP and a.is_open and a.student_id in set(students)}
    finally:
        store.close()


async def _load(port: int, students: list[str], plan: dict[str, list[dict]], pages: bool, pid: int):
    """Release every student at once; returns (answer latencies, wall time, failures, acknowledged answers)."""
    signer = TokenSigner(SECRET.encode())
    latencies: list[float] = []
    failures = acknowledged = 0
    limits = httpx.Limits(max_connections=len(students) + 10, max_keepalive_connections=len(students) + 10)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=300.0) as client:
        cookies = {s: {"Cookie": f"{COOKIE}={signer.issue(s)}"} for s in students}
        release = asyncio.Event()

        async def run(s: str) -> None:
            nonlocal failures, acknowledged
            await release.wait()
            for data in plan[s]:
                t0 = time.perf_counter()
                try:
                    response = await client.post(f"/stop/{STOP}/answer", data=data, headers=cookies[s])
                except httpx.TransportError:
                    failures += 1
                    continue
                latencies.append(time.perf_counter() - t0)
                if response.status_code != 200 or "Right." not in response.text:
                    failures += 1
                else:
                    acknowledged += 1
                if pages:
                    for _ in range(3):  # a page load is idempotent: retried on a dropped connection
                        try:
                            await client.get(f"/stop/{STOP}", headers=cookies[s])
                            break
                        except httpx.TransportError:
                            continue

        tasks = [asyncio.create_task(run(s)) for s in students]
        await asyncio.sleep(0)
        t0, cpu0 = time.perf_counter(), server_cpu_s(pid)
        release.set()
        await asyncio.gather(*tasks)
        return latencies, time.perf_counter() - t0, failures, acknowledged, server_cpu_s(pid) - cpu0


def one_level(port: int, db: str, service: QuizService, students: list[str], k: int, pages: bool,
              pid: int) -> dict:
    """Start stop 1 for every student, plan their next ``k`` right answers, then time the storm."""
    async def starts_only() -> None:
        signer = TokenSigner(SECRET.encode())
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=300.0) as client:
            gate = asyncio.Semaphore(50)

            async def start(s: str) -> None:
                async with gate:
                    await client.post(f"/stop/{STOP}/start", headers={"Cookie": f"{COOKIE}={signer.issue(s)}"})

            await asyncio.gather(*(start(s) for s in students))

    asyncio.run(starts_only())
    orders = _orders(db, students)
    plan = {s: [{"student": s, "attempt": str(orders[s][0]), "question": q,
                 "answer": right_answer(service, s, q, orders[s][0])} for q in orders[s][1][:k]] for s in students}
    return _figures(students, *asyncio.run(_load(port, students, plan, pages, pid)))


def floor_level(port: int, pid: int, students: list[str], k: int, pages: bool) -> dict:
    """The same storm against the floor app: ``k`` answers per student, forms of the quiz's shape."""
    plan = {s: [{"student": s, "attempt": "1", "question": f"stop{STOP}.q{i}", "answer": "b"} for i in range(k)]
            for s in students}
    return _figures(students, *asyncio.run(_load(port, students, plan, pages, pid)))


def _figures(students, latencies, wall, failures, acknowledged, cpu_s) -> dict:
    ordered = sorted(latencies)
    return {"students": len(students), "answers": len(latencies), "wall_s": wall,
            "cpu_ms_per_answer": 1000 * cpu_s / max(1, len(latencies)),
            "answers_per_s": len(latencies) / wall, "p50_ms": 1000 * statistics.median(ordered),
            "p95_ms": 1000 * ordered[max(0, int(round(0.95 * len(ordered))) - 1)], "failures": failures,
            "acknowledged": acknowledged}


def _stored(db: str) -> tuple[int, int]:
    from sqlalchemy import text

    from lms.engine import engine_for

    engine = engine_for(db)
    with engine.connect() as conn:
        total = conn.execute(text("SELECT COUNT(*) FROM answers")).scalar()
        distinct = conn.execute(text("SELECT COUNT(*) FROM (SELECT DISTINCT student_id, stop, attempt, question_id "
                                     "FROM answers) AS d")).scalar()
    engine.dispose()
    return total, distinct


def profile_summary(raw: Path, top: int = 12) -> list[str]:
    """Where the server's samples went: by layer (the innermost one on each stack) and by leaf function (self time)."""
    layers = {"database driver (sqlite3/psycopg)": ("sqlite3", "psycopg"),
              "SQLAlchemy": ("sqlalchemy/",), "templates (jinja2)": ("jinja2/",),
              "quiz engine (render, check)": ("quiz_bank/engine", "quiz_bank/variants", "quiz_bank/parsing",
                                               "quiz_bank/mastery"),
              "web framework (starlette/fastapi/uvicorn/h11/anyio)": ("starlette/", "fastapi/", "uvicorn/", "h11/",
                                                                      "anyio/", "multipart/"),
              "token signing (itsdangerous)": ("itsdangerous/",)}
    by_layer, by_leaf, total = Counter(), Counter(), 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n, frames = int(count), stack.split(";")
        total += n
        by_leaf[frames[-1]] += n
        # Each sample counts once, for the innermost layer on its stack (the framework is at every stack's root).
        layer = next((name for frame in reversed(frames) for name, needles in layers.items()
                      if any(needle in frame for needle in needles)), "other (idle waits, the event loop, Python)")
        by_layer[layer] += n
    if not total:
        return ["  (no samples)"]
    lines = [f"  {100 * c / total:5.1f}%  {name}" for name, c in by_layer.most_common()]
    lines.append("  top functions by own time:")
    lines += [f"  {100 * c / total:5.1f}%  {leaf[:110]}" for leaf, c in by_leaf.most_common(top)]
    return lines


def run_server(args, store: str, workers: int, workdir: Path, db: str, service: QuizService,
               profiler) -> tuple[list[dict], list[str]]:
    """One server (``store``, ``workers``) through every load level; returns (results, profile lines)."""
    n_questions = len(service.bank.questions(STOP))
    warm = [f"warm-{i:02d}" for i in range(4 * workers)]
    everyone = warm + [f"b{n}-{i:04d}" for n in args.students for i in range(n)]
    results, profile_lines = [], []
    proc, port = start_server(workdir, db, everyone, workers)
    try:
        # Untimed warm-up: each worker's first answers import and compile what the answer path uses.
        warm_answers = one_level(port, db, service, warm, 3, pages=True, pid=proc.pid)["acknowledged"]
        for n in args.students:
            k = args.answers or (n_questions if args.full else FAST_K.get(n, 1))
            spy = None
            if profiler is not None and (store, workers, n) == profiler[1]:
                raw = workdir / "profile.txt"
                spy = subprocess.Popen([profiler[0], "record", "--pid", str(proc.pid), "--subprocesses", "--format",
                                        "raw", "--rate", "200", "--nonblocking", "-o", str(raw)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            result = one_level(port, db, service, [f"b{n}-{i:04d}" for i in range(n)], k, pages=not args.no_pages,
                               pid=proc.pid)
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(timeout=60)
                profile_lines = [f"where the server's time goes (py-spy, {store}, {workers} process(es), "
                                 f"{n} students):"] + profile_summary(raw)
            result.update(store=store, workers=workers, per_student=k, load1=round(os.getloadavg()[0], 2))
            results.append(result)
            _print_level("quiz", result)
    finally:
        stop_server(proc)
    stored, distinct = _stored(db)
    expected = warm_answers + sum(r["acknowledged"] for r in results)  # HTTP 200 "Right." replies
    print(f"{store:10s} workers={workers}: stored {stored} answers ({distinct} distinct, expected {expected})",
          flush=True)
    if results and not stored == distinct == expected:
        results[-1]["failures"] += 1
    return results, profile_lines


def _print_level(app: str, r: dict) -> None:
    print(f"{app:5s} {r['store']:10s} workers={r['workers']} students={r['students']:5d} answers={r['answers']:6d} "
          f"answers/s={r['answers_per_s']:7.1f} p50={r['p50_ms']:7.1f} ms p95={r['p95_ms']:7.1f} ms "
          f"CPU/answer={r['cpu_ms_per_answer']:6.2f} ms failures={r['failures']} load={r['load1']}", flush=True)


def run_floor(args, store: str, workdir: Path, db: str) -> list[dict]:
    """The floor app (one process) through the same load levels, with fresh students and the same answers per student."""
    results = []
    proc, port = start_server(workdir, db, [], 1, floor=True)
    try:
        floor_level(port, proc.pid, [f"warm-{i:02d}" for i in range(4)], 3, pages=True)
        for n in args.students:
            k = args.answers or (len(load_bank().questions(STOP)) if args.full else FAST_K.get(n, 1))
            result = floor_level(port, proc.pid, [f"f{n}-{i:04d}" for i in range(n)], k, pages=not args.no_pages)
            result.update(store=store, workers=1, per_student=k, load1=round(os.getloadavg()[0], 2))
            results.append(result)
            _print_level("floor", result)
    finally:
        stop_server(proc)
    return results


def cpu_ratios(results: list[dict], floors: list[dict]) -> list[str]:
    """Per store: the quiz's CPU-ms per answer (single-process runs, all levels pooled) over the floor's."""
    lines = []
    for store in dict.fromkeys(r["store"] for r in floors):
        quiz = [r for r in results if r["store"] == store and r["workers"] == 1] or \
            [r for r in results if r["store"] == store]
        floor = [r for r in floors if r["store"] == store]
        per = [sum(r["cpu_ms_per_answer"] * r["answers"] for r in rows) / max(1, sum(r["answers"] for r in rows))
               for rows in (quiz, floor)]
        if quiz and floor and per[1] > 0:
            lines.append(f"CPU per answer and page ({store}): quiz {per[0]:.2f} ms, floor {per[1]:.2f} ms")
            lines.append(f"ratio quiz/floor CPU per answer: {per[0] / per[1]:.2f} ({store})")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the matrix and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="every question of stop 1 per student (slow)")
    parser.add_argument("--quick", action="store_true", help="50 and 500 students, 1 server process (make bench)")
    parser.add_argument("--no-floor", action="store_true", help="skip the floor app")
    parser.add_argument("--students", type=int, nargs="+", default=[50, 500, 2000])
    parser.add_argument("--stores", nargs="+", choices=("sqlite", "postgresql"), default=["sqlite", "postgresql"])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--answers", type=int, default=None, help="answers per student (default: the profile's)")
    parser.add_argument("--no-pages", action="store_true", help="answer POSTs only (no page load between answers)")
    parser.add_argument("--profile", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    if args.quick:
        args.students, args.workers = [50, 500], [1]
    bank = load_bank()
    service = QuizService(bank, db=None, policy=None, variant_key=variant_key(SECRET.encode()))
    py_spy = shutil.which("py-spy") or (str(Path(sys.executable).with_name("py-spy"))
                                        if Path(sys.executable).with_name("py-spy").exists() else None)
    want_profile = args.profile == "on" or (args.profile == "auto" and py_spy is not None)
    profiled = (("postgresql" if "postgresql" in args.stores else args.stores[0]), max(args.workers),
                sorted(args.students)[len(args.students) // 2])
    profiler = (py_spy, profiled) if want_profile and py_spy else None
    results, profile_lines, floors = [], [], []
    print(f"load before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} "
          f"(1/5/15 min) on {os.cpu_count()} cores", flush=True)
    pg = None
    with tempfile.TemporaryDirectory(prefix="bench_quiz_") as tmp:
        try:
            for store in args.stores:
                if store == "postgresql" and pg is None:
                    from quiz_bank.instructor.server.pg_local import LocalPostgres

                    pg = LocalPostgres(durable=True, max_connections=400).start()
                for workers in args.workers:
                    workdir = Path(tempfile.mkdtemp(dir=tmp))
                    db = (str(workdir / "quiz.sqlite") if store == "sqlite"
                          else pg.create_database(f"bench_{store}_{workers}_{int(time.time() * 1000) % 10**8}"))
                    found, lines = run_server(args, store, workers, workdir, db, service, profiler)
                    results += found
                    profile_lines = profile_lines or lines
                if not args.no_floor:
                    workdir = Path(tempfile.mkdtemp(dir=tmp))
                    db = (str(workdir / "floor.sqlite") if store == "sqlite"
                          else pg.create_database(f"floor_{int(time.time() * 1000) % 10**8}"))
                    floors += run_floor(args, store, workdir, db)
        finally:
            if pg is not None:
                pg.stop()
    for line in profile_lines or (["profile: py-spy not installed (pip install -e .[bench]) or --profile off"]
                                  if args.profile != "off" else []):
        print(line)
    for line in cpu_ratios(results, floors):
        print(line)
    goal = [r for r in results if r["store"] == "postgresql" and r["students"] == 500]
    for r in goal:
        ok = r["answers_per_s"] >= 1000 and r["p95_ms"] <= 150
        print(f"goal (PostgreSQL, 500 students, {r['workers']} process(es)): >= 1000 answers/s and p95 <= 150 ms: "
              f"{'met' if ok else 'NOT met'} ({r['answers_per_s']:.0f}/s, p95 {r['p95_ms']:.0f} ms)")
    if args.json:
        args.json.write_text(json.dumps({"quiz": results, "floor": floors}, indent=1))
    return 0 if results and not any(r["failures"] for r in results + floors) else 1


if __name__ == "__main__":
    sys.exit(main())
