"""The one exception type for mistakes a person can fix; the CLI prints it as one line, exit 2."""


class UsageError(Exception):
    pass
