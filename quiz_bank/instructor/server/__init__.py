"""The quiz server: ``ppo-course quiz serve`` (keys stay on the server; instructor side only).

- ``app``: the FastAPI application and the student routes; ``instructor``: the
  dashboard and gradebook downloads; ``interactive_routes``/``interactives``:
  the chapter's four interactives computed with ``ppo_reference``.
- ``quiz``: attempts, one question at a time, the 100% rule; ``policy``: the
  per-stop attempt policy; ``db``: the store (one transaction per answer) on
  SQLite or PostgreSQL, ``schema``/``database``/``migrations``: its tables,
  engines and Alembic revisions; ``backup``: backup and restore;
  ``serving``: uvicorn with ``--workers N``; ``pg_local``: a throw-away
  PostgreSQL for the tests and the benchmark.
- ``auth``: roster and signed tokens; ``limits``: the request-size limit;
  ``stats``: the dashboard's numbers; ``gradebook``: CSV, Canvas and Moodle
  layouts; ``cli``: the ``serve``/``tokens``/``revoke``/``export``/``migrate``/``backup``/``restore`` verbs.

Not part of the student bundle: ``quiz_bank.export.export_public`` copies only
the top-level modules of ``quiz_bank``.
"""
