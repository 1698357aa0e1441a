"""numsweep's records contract, the ground floor every other package stands on: the metric names
and their better directions (`metric_names`), the results store's layout, schemas and row keys
(`layout`), its writer (`writer`) and its reader (`reader`), and the error a reader raises
(`errors`).

It imports no other numsweep package. `metric_names`, `layout` and `errors` import neither torch
nor polars, so a trial's worker names its metrics without the analysis stack; the reader needs
polars, the writer and the layout pyarrow.
"""
