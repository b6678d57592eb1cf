"""What a TA reads after a batch: the class report, per-test analytics, regrades, LMS exports, similarity.
TA side; reads the records, never decides a score.
"""
