"""The one error a study command refuses with (exit 2): bad input, a design over its budget, a
registered study whose file changed. Nothing is launched or written once it is raised."""


class StudyError(ValueError):
    """A study that cannot go on as asked; the message says why, with the numbers or keys."""
