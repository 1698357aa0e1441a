"""The error every reader of a results store raises for input it cannot use."""


class ResultsError(ValueError):
    """The input cannot be analysed as asked (missing folder, unknown experiment, column or metric,
    unreadable file). The CLI prints the message and exits with status 2."""
