"""The sweep running on Ray: the Tune driver (`driver`: a Ray Tune experiment whose trials each
run a Ray Train run) and what it attaches to Tune: the Parquet sink, tracking, the progress line,
the terminal's routing of Ray's output, the trials' placement, bounds and the reaper of lost
placement groups, the hand-over of a trial's last report, the searcher and scheduler that accept
partial reports, and the connection to a local or remote Ray."""
