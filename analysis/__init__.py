"""Tables and figures from the study's records (the package netpipe_runs
writes them), and the summary of a ./run.sh.  Run from the repository's root
with Debian's Python, whose pandas and matplotlib they need:
`/usr/bin/python3 -m analysis.<module> ...`.  The plotting tools for users,
live_plot and events_plot, and microbench_table import nothing of the study
and also run by path (spc-record's help and the tools' tests run the plots
so); keep them that way."""
