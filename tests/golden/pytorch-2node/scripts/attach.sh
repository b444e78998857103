#!/bin/bash
# Open a shell inside a running job, or watch its GPUs.
# Usage: scripts/attach.sh JOBID          a shell on the job's first node
#        scripts/attach.sh JOBID --smi    rocm-smi every second (power is the best
#                                          utilisation sign: ~300 W one busy GCD, ~500 W both GCDs of an MI250X) [AIG-06]
set -euo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 JOBID [--smi]   (squeue --me lists your jobs)" >&2
    exit 2
fi
jobid="$1"
if [ "${2:-}" = "--smi" ]; then
    exec srun --jobid "${jobid}" --interactive --pty watch -n1 rocm-smi
fi
exec srun --jobid "${jobid}" --interactive --pty /bin/bash
