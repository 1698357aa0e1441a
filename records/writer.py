"""The results store's writer: one experiment's immutable Parquet parts (written under a
temporary name and renamed, so a reader never sees half a file), their compaction, and the
experiment's manifest, under a results root (a local path or a pyarrow filesystem URI). What it
writes where is `records.layout`."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from records.layout import (
    METRIC_KEY,
    METRIC_VERSION,
    METRICS_SCHEMA,
    PART_PREFIX,
    PART_SUFFIX,
    TRIAL_KEY,
    TRIAL_VERSION,
    ExperimentPaths,
)


class ResultsStore:
    """Writes and reads one experiment's immutable Parquet parts and its manifest under a results
    root (a local path or a pyarrow filesystem URI)."""

    def __init__(self, root: str, experiment: str) -> None:
        if "://" in root:
            self.fs, base = pafs.FileSystem.from_uri(root)
        else:
            self.fs, base = pafs.LocalFileSystem(), root
        self.base = base.rstrip("/")
        self.experiment = experiment
        self.paths = ExperimentPaths(self.base, experiment)

    def write_part(
        self, table: str, rows: Sequence[Mapping[str, Any]] | pa.Table, schema: pa.Schema
    ) -> str:
        """One new immutable part file with `rows`; returns its path. A row key that `schema`
        lacks is an error (it would be dropped silently)."""
        if isinstance(rows, pa.Table):
            data = rows
        else:
            extra = sorted({k for row in rows for k in row} - set(schema.names))
            if extra:
                raise ValueError(f"{table} rows have column(s) {extra} that its schema lacks")
            data = pa.Table.from_pylist(list(rows), schema=schema)
        directory = self.paths.table(table)
        self.fs.create_dir(directory, recursive=True)
        name = f"{PART_PREFIX}{time.time_ns():020d}-{uuid.uuid4().hex[:12]}{PART_SUFFIX}"
        final, temporary = f"{directory}/{name}", f"{directory}/.{name}.tmp"
        with self.fs.open_output_stream(temporary) as stream:
            pq.write_table(data, stream)
        self.fs.move(temporary, final)  # readers never see a half-written part
        return final

    def list_parts(self, table: str) -> list[str]:
        directory = self.paths.table(table)
        if self.fs.get_file_info(directory).type != pafs.FileType.Directory:
            return []
        infos = self.fs.get_file_info(pafs.FileSelector(directory))
        return sorted(
            i.path
            for i in infos
            if i.base_name.startswith(PART_PREFIX) and i.base_name.endswith(PART_SUFFIX)
        )

    def read_table(self, table: str, columns: Sequence[str] | None = None) -> pa.Table | None:
        """Every part of `table` (None if there is none), `columns` only when given. Trials parts
        may carry different parameter columns: they are aligned by name (null where absent)."""
        parts = self.list_parts(table)
        if not parts:
            return None
        if table == "metrics":
            read = [pq.read_table(p, filesystem=self.fs, schema=METRICS_SCHEMA) for p in parts]
        else:
            read = [pq.read_table(p, filesystem=self.fs) for p in parts]
        merged = pa.concat_tables(read, promote_options="permissive")
        return merged if columns is None else merged.select(list(columns))

    def compact(self, table: str) -> tuple[int, int]:
        """Merge the current parts of `table` into one (same rows, sorted by key and version);
        returns (parts merged, rows). The merged part is written (atomically) before the old ones
        are deleted, so a crash in between leaves duplicates, which readers drop, never a loss."""
        parts = self.list_parts(table)
        if len(parts) < 2:
            rows = 0 if not parts else pq.read_metadata(parts[0], filesystem=self.fs).num_rows
            return len(parts), rows
        merged = self.read_table(table)
        assert merged is not None
        keys = (
            (*METRIC_KEY, *METRIC_VERSION) if table == "metrics" else (*TRIAL_KEY, *TRIAL_VERSION)
        )
        merged = merged.sort_by([(k, "ascending") for k in keys])
        self.write_part(table, merged, merged.schema)
        for path in parts:
            self.fs.delete_file(path)
        return len(parts), merged.num_rows

    def read_manifest(self) -> dict[str, Any] | None:
        path = self.paths.manifest
        if self.fs.get_file_info(path).type != pafs.FileType.File:
            return None
        with self.fs.open_input_stream(path) as stream:
            return json.loads(stream.read().decode())

    def write_manifest(self, manifest: dict[str, Any]) -> str:
        """Write the experiment's manifest once (a resumed or extended sweep keeps the first)."""
        final = self.paths.manifest
        if self.fs.get_file_info(final).type == pafs.FileType.File:
            return final
        directory = final.rsplit("/", 1)[0]
        self.fs.create_dir(directory, recursive=True)
        temporary = f"{directory}/.manifest.json.tmp"
        with self.fs.open_output_stream(temporary) as stream:
            stream.write(json.dumps(manifest, indent=2, sort_keys=True, default=str).encode())
        self.fs.move(temporary, final)
        return final
