#!/bin/sh
# Runs one rank's command and records its own exit status in DIR/rank.<rank>
# (128 + N when signal N ended it), so that a test can check every rank's
# status and not only mpirun's or what was printed: a rank that died before
# it could say anything, or was killed by mpirun, leaves its file missing
# or not 0.
#
# usage: mpirun -np N rank_status.sh DIR COMMAND [ARGS...]
dir=$1
shift
# Open MPI 4.1 and 5.0 both give each rank OMPI_COMM_WORLD_RANK
rank=${OMPI_COMM_WORLD_RANK:?rank_status.sh: no OMPI_COMM_WORLD_RANK: not started by mpirun}
"$@"
status=$?
echo "$status" >"$dir/rank.$rank"
exit "$status"
