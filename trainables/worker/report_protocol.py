"""What a trial's worker and the sweep's driver agree on about a report, in one module both
import (neither imports the other, and neither needs torch for it).

A report is a flat dict of metrics (`records.metric_names`) plus `step`; these names mark
the two reports that are not an ordinary step's.
"""

from __future__ import annotations

REPLAYED_KEY = "replayed"
"""Set (True) in a report the worker sends again after a resume (`trainables.worker.checkpoint`):
its step was trained before. The Parquet sink stores each step once anyway; Tune's scheduler and
searcher skip these (`orchestrator.run.partial_reports`)."""

STOPPED_KEY = "train/stopped"
"""The reason a worker stopped its trial cleanly (a non-finite loss); the Tune driver fails the
trial with it (`orchestrator.run.driver`)."""

STOPPED_FILE = "numsweep-stopped.json"
"""A checkpoint holding only this file: the trial stopped, and stays stopped if resumed."""
