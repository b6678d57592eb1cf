"""The stop 1-8 question bank (one YAML file per stop) and its engine."""
