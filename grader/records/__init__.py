"""What a grading leaves: the typed result of one submission (``results``), one student's outcome (``outcome``), the
records and gradebooks of a batch (``gradebook``), and the batch's output folder (``out_folder``).
"""
