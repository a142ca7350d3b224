"""Tables and figures from the study's records (the package netpipe_runs
writes them), and the summary of a ./run.sh.  Run from the repository's root
with Debian's Python, whose pandas and matplotlib they need:
`/usr/bin/python3 -m analysis.<module> ...`."""
