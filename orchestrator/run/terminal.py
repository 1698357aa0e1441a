"""Where a running sweep's output goes: numsweep's own lines to the terminal, the libraries' to
log files.

Quiet (the default): the driver's library loggers (Ray, Ray Tune, Optuna, transformers, Python
warnings) write to `<experiment>/logs/driver.log`, and what Ray forwards from the cluster's
processes (Tune trial actors, Ray Train controllers and workers, DeepSpeed) to
`<experiment>/logs/workers.log`; the terminal gets numsweep's set-up lines, the progress line,
a line per failed trial, the final table and the "Next:" block. `--verbose`: everything on the
terminal, as Ray prints it. Either way no ANSI escape code is written where the output is not a
terminal (a pipe, a file, `ray job submit`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from records.layout import ExperimentPaths

LIBRARY_LOGGERS = ("ray", "optuna", "transformers", "py.warnings")
"""The driver's library loggers (and their children) that quiet mode sends to driver.log."""

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def plain(text: str) -> str:
    """`text` without ANSI escape codes (colours, cursor moves)."""
    return ANSI.sub("", text)


def is_terminal(stream: TextIO | None = None) -> bool:
    """Whether `stream` (default: stdout) is a terminal, not a pipe or a file."""
    stream = stream or sys.stdout
    return hasattr(stream, "isatty") and stream.isatty()


@dataclass(frozen=True)
class SweepLogs:
    """The log files of one experiment's runs (appended to when it resumes)."""

    directory: Path

    @property
    def driver(self) -> Path:
        """The driver's library loggers: Ray, Ray Tune, Optuna, transformers, Python warnings."""
        return self.directory / "driver.log"

    @property
    def workers(self) -> Path:
        """What Ray forwards from the trials' processes: Tune trial actors, Ray Train
        controllers and workers (DeepSpeed's and the worker's own lines among them)."""
        return self.directory / "workers.log"


def log_directory(root: str, experiment: str) -> Path:
    """`<root>/experiments/<E>/logs` for a local results root; for a URI root (the store is
    remote, the logs are this machine's) `<tmp>/numsweep/<E>/logs`."""
    paths = ExperimentPaths(root, experiment)
    if paths.is_local:
        return Path(paths.directory.removeprefix("file://")) / "logs"
    return Path(tempfile.gettempdir()) / "numsweep" / experiment / "logs"


class _PlainFormatter(logging.Formatter):
    """A formatter that writes what `inner` writes, less its ANSI codes."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        return plain(self.inner.format(record))


def _library_loggers() -> list[logging.Logger]:
    found = [logging.getLogger(name) for name in LIBRARY_LOGGERS]
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and name.startswith(
            tuple(f"{p}." for p in LIBRARY_LOGGERS)
        ):
            found.append(logger)
    return found


def _to_terminal(handler: logging.Handler) -> bool:
    """A handler that writes to a stream (the terminal, whatever sys.stderr is now), not a file."""
    return isinstance(handler, logging.StreamHandler) and not isinstance(
        handler, logging.FileHandler
    )


class _LogFile(logging.FileHandler):
    """A file handler that keeps its own format: `ray.init` sets the formatter of every handler
    of the `ray` logger to Ray's (with its colour codes)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, encoding="utf-8")
        fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s"
        self.formatter = _PlainFormatter(logging.Formatter(fmt))

    def setFormatter(self, fmt: logging.Formatter | None) -> None:
        pass


class _LoggerSwap:
    """Replaces the library loggers' terminal handlers with one file handler; `restore` puts
    them back. `scan` again after a library configured more loggers (Ray at `ray.init`)."""

    def __init__(self, path: Path) -> None:
        self.handler = _LogFile(path)
        self.saved: dict[logging.Logger, tuple[list[logging.Handler], bool]] = {}

    def scan(self) -> None:
        for logger in _library_loggers():
            own = [h for h in logger.handlers if _to_terminal(h)]
            top = logger.name in LIBRARY_LOGGERS
            if logger in self.saved or not (own or top):
                continue
            self.saved[logger] = (list(logger.handlers), logger.propagate)
            logger.handlers = [h for h in logger.handlers if h not in own] + [self.handler]
            logger.propagate = False

    def restore(self) -> None:
        for logger, (handlers, propagate) in self.saved.items():
            logger.handlers, logger.propagate = handlers, propagate
        self.saved = {}
        self.handler.close()


@contextlib.contextmanager
def _env(key: str, value: str) -> Iterator[None]:
    """Environment variable `key` set to `value` inside, as it was after."""
    saved = os.environ.get(key)
    os.environ[key] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = saved


@contextlib.contextmanager
def _plain_terminal() -> Iterator[None]:
    """--verbose into a pipe or file: Ray's colour codes left out (its worker-line prefixes by
    RAY_COLOR_PREFIX=0, its driver log lines by a stripping formatter)."""
    stripped: list[tuple[logging.Handler, logging.Formatter | None]] = []
    for logger in _library_loggers():
        for handler in logger.handlers:
            if _to_terminal(handler) and not isinstance(handler.formatter, _PlainFormatter):
                stripped.append((handler, handler.formatter))
                handler.setFormatter(_PlainFormatter(handler.formatter))
    try:
        with _env("RAY_COLOR_PREFIX", "0"):
            yield
    finally:
        for handler, formatter in stripped:
            handler.setFormatter(formatter)


class SweepOutput:
    """The output of one `numsweep sweep` or `extend` (a context manager; see the module)."""

    def __init__(self, root: str, experiment: str, verbose: bool) -> None:
        self.logs = None if verbose else SweepLogs(log_directory(root, experiment))
        self._stack = contextlib.ExitStack()
        self._swap: _LoggerSwap | None = None

    def __enter__(self) -> SweepOutput:
        if self.logs is None:
            if not is_terminal():
                self._stack.enter_context(_plain_terminal())
            return self
        self.logs.directory.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        for path in (self.logs.driver, self.logs.workers):
            with path.open("a", encoding="utf-8") as fh:
                fh.write(f"==== numsweep {' '.join(sys.argv[1:])} started {stamp}\n")
        import optuna  # its own stderr handler, configured at import

        optuna.logging.disable_default_handler()
        self._stack.callback(optuna.logging.enable_default_handler)
        logging.captureWarnings(True)
        self._stack.callback(logging.captureWarnings, False)
        self._swap = _LoggerSwap(self.logs.driver)
        self._swap.scan()
        self._stack.callback(self._swap.restore)
        # Tune's newer output engine prints an experiment box at every verbosity, 0 included;
        # the legacy one prints nothing at 0 (its logger lines go to driver.log).
        self._stack.enter_context(_env("RAY_AIR_NEW_OUTPUT", "0"))
        return self

    def connected(self) -> None:
        """Ray is initialised: its loggers configured at `ray.init` and the output it forwards
        from the cluster's processes go to the files too (with --verbose into a pipe: to
        stdout, as Ray prints it less any ANSI code the processes themselves wrote)."""
        from compat.ray_private import route_worker_output

        if self.logs is None or self._swap is None:
            if self.logs is None and not is_terminal():
                self._stack.callback(route_worker_output(lambda line: print(plain(line))))
            return
        self._swap.scan()

        workers = self.logs.workers.open("a", encoding="utf-8", buffering=1)
        self._stack.callback(workers.close)

        def write(line: str) -> None:
            workers.write(f"{time.strftime('%H:%M:%S')} {plain(line)}\n")

        self._stack.callback(route_worker_output(write))

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
