"""Throughput and latency of the quiz server on loopback (a script, not a test).

    python benchmarks/bench_quiz.py [--students 50] [--stops 1 2] [--port 0]

Starts ``ppo-course quiz serve`` in a child process (fresh database in a
temporary folder, cooldown 0), signs ``--students`` students in, releases them
at once, and has each answer every question of ``--stops`` right, one
question at a time exactly as a browser does: GET the question page, POST the
answer. Prints the answers per second the server sustained (answers stored /
wall time of the answering phase) and the median and p95 latency of an answer
POST (each answer is one committed SQLite transaction before the reply), then
checks in the database that every answer was stored once.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from quiz_bank.engine import expected_answer
from quiz_bank.loader import load_bank
from quiz_bank.instructor.server.auth import TokenSigner
from quiz_bank.instructor.server.quiz import QuizService

SECRET = "bench-secret-" + "0" * 40


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


def start_server(workdir: Path, students: list[str], port: int) -> subprocess.Popen:
    """``ppo-course quiz serve`` on 127.0.0.1:port; returns once it accepts connections."""
    (workdir / "quiz.secret").write_text(SECRET + "\n")
    (workdir / "policy.yaml").write_text("default: {mode: cooldown, cooldown_s: 0}\n")
    with open(workdir / "roster.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student_id"])
        writer.writerows([s] for s in students)
    argv = [sys.executable, "-c", "import sys; from ppo_course.cli import main; sys.exit(main())", "quiz", "serve",
            "--port", str(port), "--db", str(workdir / "quiz.sqlite"), "--secret-file", str(workdir / "quiz.secret"),
            "--roster", str(workdir / "roster.csv"), "--policy", str(workdir / "policy.yaml")]
    proc = subprocess.Popen(argv, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, OMP_NUM_THREADS="1"))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not start within 120 s")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=50)
    parser.add_argument("--stops", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    args = parser.parse_args(argv)
    bank = load_bank()
    service = QuizService(bank, db=None, policy=None)
    students = [f"bench{i:03d}" for i in range(args.students)]
    port = args.port
    if port == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    signer = TokenSigner(SECRET.encode())
    latencies: list[float] = []
    lock = threading.Lock()
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench_quiz_") as tmp:
        workdir = Path(tmp)
        proc = start_server(workdir, students, port)
        try:
            clients = {}
            for s in students:
                c = httpx.Client(base_url=f"http://127.0.0.1:{port}", follow_redirects=True, timeout=120.0)
                c.post("/login", data={"token": signer.issue(s)})
                clients[s] = c
            barrier = threading.Barrier(len(students) + 1)

            def run(student: str) -> None:
                client = clients[student]
                try:
                    barrier.wait()
                    for stop in args.stops:
                        page = client.post(f"/stop/{stop}/start").text
                        while 'name="question"' in page:
                            attempt = int(re.search(r'name="attempt" value="(\d+)"', page).group(1))
                            qid = re.search(r'name="question" value="([^"]+)"', page).group(1)
                            data = {"student": student, "attempt": str(attempt), "question": qid,
                                    "answer": right_answer(service, student, qid, attempt)}
                            t0 = time.perf_counter()
                            response = client.post(f"/stop/{stop}/answer", data=data)
                            dt = time.perf_counter() - t0
                            if response.status_code != 200 or "Right." not in response.text:
                                raise RuntimeError(f"{qid}: HTTP {response.status_code}")
                            with lock:
                                latencies.append(dt)
                            page = client.get(f"/stop/{stop}").text
                except Exception as exc:  # reported below
                    errors.append(f"{student}: {exc}")

            threads = [threading.Thread(target=run, args=(s,)) for s in students]
            [t.start() for t in threads]
            barrier.wait()
            t0 = time.perf_counter()
            [t.join() for t in threads]
            wall = time.perf_counter() - t0
        finally:
            proc.kill()
            proc.wait()
        with sqlite3.connect(workdir / "quiz.sqlite") as db:
            stored = db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
            distinct = db.execute("SELECT COUNT(*) FROM (SELECT DISTINCT student_id, question_id FROM answers)").fetchone()[0]
    expected = len(students) * sum(len(bank.questions(s)) for s in args.stops)
    ordered = sorted(latencies)
    p95 = ordered[max(0, int(round(0.95 * len(ordered))) - 1)] if ordered else float("nan")
    print(f"quiz server on loopback: {len(students)} concurrent students, stops {args.stops}, "
          f"{len(latencies)} answers in {wall:.2f} s (each answer also loads its question page)")
    print(f"answers per second: {len(latencies) / wall:.1f}")
    print(f"answer latency: median {1000 * statistics.median(ordered):.1f} ms, p95 {1000 * p95:.1f} ms "
          f"at {len(students)} concurrent students")
    print(f"stored {stored} answers ({distinct} distinct, expected {expected}); errors: {len(errors)}")
    for e in errors[:5]:
        print("  " + e)
    return 0 if not errors and stored == distinct == expected else 1


if __name__ == "__main__":
    sys.exit(main())
