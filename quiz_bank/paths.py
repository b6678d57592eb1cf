"""Where the question bank lives: the folder of this package (its ``stop{n}.yaml`` files).

One constant that both ``quiz_bank.loader`` (reading the bank) and
``quiz_bank.instructor.keys`` (the fixed answers of the source questions of derived items)
need, in a module that imports nothing of the package, so that neither of the
two imports the other for it.
"""

from __future__ import annotations

from pathlib import Path

#: The installed bank's folder (instructor install: with answers; student bundle: without).
BANK_DIR = Path(__file__).resolve().parent
