"""Exercise 5: a buffer whose answers break the tests' own code, to make the grader blame itself.

Tries: the twin stores the autograd graph (the catalogue's `stores_graph`
mistake). This buffer is the twin's, except that `len()` answers 2**70 (Python's
`len()` raised OverflowError inside the test), `minibatches()` yields
(ids, logp_old) tuples instead of dicts (the tests' `mb["ids"]` raised
TypeError) and, after purge(), returns None instead of an iterator (the
tests' `next()` raised TypeError). Each of those rose in the grader's own
test code, so the tests were diagnosed `grader_error` and a batch recorded
the student "crashed: the grader itself failed ... fix the grader, then rerun
the batch" on every rerun.
Must achieve: nothing. `RemoteObject.__len__` raises `StudentProtocolError`
(the student's TypeError) for a length that is not an int in 0..sys.maxsize,
and exercise 5's tests read every mini-batch through
`ppo_course.grading_kit.buffer_data` (`drain`, `advance`): a wrong structure
is the student's `wrong_type`, never the grader's error.
"""

TARGET = "ex5_rollout_buffer"
TWIN = "ex5_stores_graph.py"

import twin_code


class RolloutBuffer(twin_code.RolloutBuffer):
    def __len__(self):
        return 2**70

    def minibatches(self, mini_batch_size, generator=None):
        if self.phase != "train":
            return None
        return [(mb.get("ids"), mb.get("logp_old")) for mb in super().minibatches(mini_batch_size, generator)]
