"""The runners: where one staged submission is graded (a fresh worker, a warm worker, a Dask cluster node) and the
worker's own side of each process boundary. TA side, trusted; none of it decides a score.
"""
