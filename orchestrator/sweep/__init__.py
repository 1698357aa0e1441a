"""The sweep, before anything runs: the sweep file and its schema (`sweep_file`: where a sweep
option goes), the metrics it reports and the objectives checked against them (`objectives`), the
trial paths made absolute (`local_paths`), Optuna's conditional space, the grid's arms and each
trial's `TrialConfig` (`search_space`), the Tune runs, Optuna studies and concurrency a sweep
plans (`plan`), and the checks run before launch (`preflight`). Nothing here imports Ray
(tests/project/test_import_graph.py)."""
