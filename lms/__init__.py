"""The instructor side's floor: what the course exchanges with its learning-management system.

Below both the grader (``grader/``) and the quiz server (``quiz_bank/instructor/``), which import it and
which it never imports: the course roster (``roster``), the one writer of the LMS gradebook-import files
(``gradebook_csv``: Canvas, Moodle), the SQL engine of the course's store (``engine``) and LTI 1.3
(``lti/``). Instructor side only: the student bundle does not ship it.
"""
