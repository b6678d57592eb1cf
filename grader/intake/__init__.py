"""What comes in: one submission staged by the one intake (``submission``), the class of a batch, the roster, and
which folders are whose attempts.
"""
