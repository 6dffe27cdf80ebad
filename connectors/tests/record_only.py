"""A scheduler that knows an attempt's record and nothing else, for tests of log and metric sources."""

from engine.context import AttemptContext


class RecordOnly:
    name = "record"
    skipped: list[str] = []

    def attempt_context(self, discovered):
        return AttemptContext(attempt=discovered.attempt)
