"""Hidden graders, the isolated runner, batch grading and reports (instructor side)."""
