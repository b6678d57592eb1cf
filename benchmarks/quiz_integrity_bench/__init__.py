"""Parts of ``benchmarks/bench_quiz_integrity.py`` (the quiz-integrity benchmark); not part of the installed package.

* ``bots``: the bots that take the quiz, and the chapter index the text-matching bot reads.
"""
