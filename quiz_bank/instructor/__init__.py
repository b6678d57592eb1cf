"""The instructor side of the quiz: never ships to students.

``keys.py`` computes the parametric answer keys (``key_registry``, ``formula_keys`` with ``ppo_reference``,
``case_keys``); ``server/`` is the quiz in a browser
(keys stay on the server). The student bundle's ``quiz_bank`` is written by ``quiz_bank.export.export_public``,
which copies only the top-level modules and the key-less stop files, so nothing under this folder reaches it
(``tests/platforms/test_release.py`` checks the bundle).
"""
