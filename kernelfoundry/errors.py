"""Errors a user can act on: printed as one paragraph, exit code 2, no traceback."""


class UserError(Exception):
    """A problem with the user's input (file, field, option, environment).

    The message must name the file, field or cause and say what to do.
    """

    exit_code = 2


class TaskError(UserError):
    """A task file is missing or malformed."""


class HardwareError(UserError):
    """A hardware spec is missing or malformed, or a name is unknown."""
