"""The overhead study's package: what it compares, how it runs and records
every run, and the drivers of its campaigns.  Run its modules from the
repository's root, `python3 -m netpipe_runs.<module>` (the study's Python
needs nothing outside the standard library; the reports in analysis/ need
Debian's /usr/bin/python3 for pandas and matplotlib).

  study            the one list of builds, counter configurations and
                   transports, and the project's contracts it reads
                   (table4.counters, run_as_root.env, names.h, mpi_bench.h)
  campaign         the toolkit every driver runs its campaign with: plans,
                   environment pads, the one way a run is started and ended
                   (run_tree), the one record format (runs.jsonl, meta.json,
                   raw.tar.xz), and `check DIR` / `meta FILE` for run.sh
  netpipe          NetPIPE's source, its build per Open MPI build, its output
  drivers          netpipe_sweep, callgrind_counts, ab_runs, pairwise_runs,
                   lammps_runs (run.sh's steps); live_runs, monitoring_runs,
                   event_cost, app_runs (the README's other measurements);
                   live_read_cost (a program live_runs runs)

The MPI programs the drivers compile are C, in bench/; the reports that read
the records are the package analysis."""
