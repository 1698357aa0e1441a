"""The error every reader of a results store raises for input it cannot use."""


class ResultsError(ValueError):
    """The input cannot be analysed as asked (missing folder, unknown experiment, column or metric,
    unreadable file). The CLI prints the message and exits with status 2."""


class NothingStored(ResultsError):
    """The store, or the experiment asked for, has nothing written yet: no results folder, no
    trial or metric part under it. Readers that count progress take it as none done; every other
    reader reports it like any ResultsError."""
