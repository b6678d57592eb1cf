"""The grading kit: what the public tests and the hidden graders share to test a student's module.

Ships in the student bundle (it holds no secret: no reference, no hidden
input, no expected value), so it imports only torch, pytest, hypothesis and
`ppo_course`; never `grader`, `ppo_reference` or `solutions`. The public tests
(`ppo_course/public_tests/`, run by `ppo-course check`) and the hidden ones
(`grader/hidden/`, run by `ppo-course grade`) stand on it, so that both read
alike:

- `provider`: how a test reaches the student's module (the provider protocol);
- `inputs`: input makers (prefix masks, junk in padding, hypothesis strategies) and `fresh_copy` of call arguments;
- `compare`: numeric comparisons no NaN or inf passes;
- `feedback`: comparisons that fail with a diagnosis (`expect_close`, `Mismatch`);
- `diagnoses`: the diagnosis ids and their plain-words messages;
- `signatures`: the stubs' signatures, compared with a module's by `ast`;
- `collect`: the pytest plugin that records outcomes, and the one argument list of a grading run.
"""
