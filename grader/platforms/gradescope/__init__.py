"""The Gradescope autograder bundle: templates (``setup.sh``, ``run_autograder``) and its entry point (``run``).

``ppo-course gradescope-bundle OUT.zip`` (``grader/commands/gradescope_bundle.py``)
zips these templates with the grader's source; on Gradescope, ``run_autograder``
calls ``python -m grader.platforms.gradescope.run``. Specification followed:
https://gradescope-autograders.readthedocs.io/en/latest/specs/ (results.json
fields, test visibility ``hidden`` / ``after_due_date`` / ``after_published`` /
``visible``, the /autograder tree).
"""

from pathlib import Path

TEMPLATES = Path(__file__).parent
SETUP_SH = TEMPLATES / "setup.sh"
RUN_AUTOGRADER = TEMPLATES / "run_autograder"
CONFIG_NAME = "gradescope_config.json"

