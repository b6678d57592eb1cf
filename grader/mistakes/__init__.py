"""The catalogue of known mistakes (buggy variants of the exercises and of the PPO step) and the diagnoses built on
it. Trusted, grade-deciding: the hidden tests name a student's mistake from these.
"""
