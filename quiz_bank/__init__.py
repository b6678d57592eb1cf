"""The stop 1-8 question bank (one YAML file per stop) and its engine.

- ``stop1.yaml`` … ``stop8.yaml``: the questions (Book ch. 5, §5.1–§5.9), schema in ``models``.
- ``loader``: validation with file/line/question id; ``engine``: variants,
  checking, grading and the 100% rule; ``variants``: the per-student draws;
  ``keys``: parametric keys via ``ppo_reference`` (instructor side only, not exported);
  ``parsing``/``symbolic``: safe numeric and symbolic answers; ``storage``:
  attempts in SQLite; ``take``/``commands``: ``ppo-course quiz ...``.
- ``server/``: ``ppo-course quiz serve`` (FastAPI; keys stay on the server), instructor side only.
- :func:`export_public` writes the key-less bank for the student bundle.
"""

from quiz_bank.export import export_public

__all__ = ["export_public"]
