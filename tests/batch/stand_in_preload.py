"""Dask worker preload (tests only): the grading processes this Dask worker starts use the stand-in grader.

``LocalCluster(preload=[this file])`` or ``dask worker --preload this_file``; the worker's
``PYTHONPATH`` must hold tests/batch (``stand_in_grader``). Production code has no switch for it.
"""

import stand_in_grader

stand_in_grader.install()
