#!/bin/bash
# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
# The network preflight's library (jobs/preflight.sbatch sources it after scripts/lib/job.sh).
# what it runs and
# compares with are the preflight_ values in scripts/values.sh, with their reasons.

# The project's values (job.sh has read them already: reading them again changes nothing).
# shellcheck source=../values.sh
source "$(dirname "${BASH_SOURCE[0]}")/../values.sh"

# The preflight job: [all_reduce_perf options...]. It measures the all-reduce bus bandwidth
# (busbw = algbw x 2(n-1)/n) between the job's nodes, one task per GPU, each bound to cores
# as cpu_bind in values.sh says (where it says nothing, Slurm places them):
#   - with rccl-tests' all_reduce_perf where the image ships it (preflight_all_reduce_perf:
#     where it is looked up when the job starts; ALL_REDUCE_PERF=/path sbatch ... names it,
#     =none skips it), run with preflight_options and then the job's arguments;
#   - otherwise with the project's own benchmark (preflight_benchmark, which prints the same
#     table) where it has one; otherwise it stops.
# It prints the busbw per size, the largest message's and the average, into the job's log
# and logs/preflight-<job id>.txt, and compares it with the site's published figure
# (preflight_reference; none: no verdict). RCCL logs its setup to
# OUTPUT_ROOT/logs/rccl-<job id>-rank<N>.txt, one file per rank (scripts/lib/run.sh); where values.sh names
# a network check (net_check), the job fails when those logs show that RCCL talks between
# the nodes over TCP sockets instead.
preflight_job() {
    # RCCL's init and network setup, one file per rank (scripts/lib/run.sh): what the check reads.
    export RCCL_DEBUG_FILES=1 NCCL_DEBUG_SUBSYS=INIT,NET
    local report="${PROJECT_DIR}/logs/preflight-${SLURM_JOB_ID}.txt"
    local bench="${ALL_REDUCE_PERF:-}" benchmark usage option name value status=0
    local bench_args=() command=() mpi=()
    check_known_issues   # (scripts/lib/job.sh)
    start_nodes   # (scripts/lib/job.sh: every node's energy, and nothing of the job left on them)
    if [ -z "${bench}" ]; then
        # shellcheck disable=SC2016  # expanded by the bash in the image
        bench="$(RCCL_NET_CHECK=0 "${CONTAINER[@]}" "${LIB}/run.sh" \
            bash -c 'for path; do command -v "${path}" && exit; done; true' bash "${preflight_all_reduce_perf[@]}" | tail -n 1)"
    fi
    if [ -n "${bench}" ] && [ "${bench}" != none ]; then
        echo "preflight: all_reduce_perf (rccl-tests) in the image: ${bench}"
        benchmark=all_reduce_perf   # for the verdict below
        # An option this all_reduce_perf does not know (an older rccl-tests) is left out, and
        # then there is no verdict; its usage (-h) lists the ones it knows.
        usage="$(RCCL_NET_CHECK=0 "${CONTAINER[@]}" "${LIB}/run.sh" "${bench}" -h 2>&1 || true)"
        for option in "${preflight_options[@]}"; do
            read -r name value <<<"${option}"
            if [[ "${usage}" != *"[-b,"* || "${usage}" == *"[${name},"* ]]; then
                bench_args+=("${name}" ${value:+"${value}"})
            else
                echo "preflight: ${bench} has no ${name} option: left out"
            fi
        done
        bench_args+=("$@")
        command=("${bench}" "${bench_args[@]}")
        mpi=("${preflight_mpi[@]}")   # how the image's MPI programs get their ranks from srun
    elif [ -n "${preflight_benchmark}" ]; then
        echo "preflight: no all_reduce_perf in the image; ${preflight_benchmark} instead"
        benchmark="$(basename "${preflight_benchmark}")"   # for the verdict below
        bench_args=("${preflight_benchmark_args[@]}" "$@")
        command=(python -u "${PROJECT_DIR}/${preflight_benchmark}" "${bench_args[@]}")
    else
        echo "preflight: no all_reduce_perf in the image, and ${preflight_framework} has no benchmark here." >&2
        exit 1
    fi

    STEP=(srun --kill-on-bad-exit=1 ${cpu_bind:+"--cpu-bind=${cpu_bind}"} "${srun_options[@]}" "${mpi[@]}" "${CONTAINER[@]}"
        "${LIB}/run.sh" "${command[@]}")
    echo "step: $(shell_line "${STEP[@]}")"
    "${STEP[@]}" | tee "${report}" || status=$?

    local ranks largest average
    ranks="$(grep -oE '^# +Rank +[0-9]+' "${report}" | awk '{print $3}' | sort -u | wc -l)"
    largest="$(awk '$1 ~ /^[0-9]+$/ && NF >= 8 {size = $1; busbw = $8} END {if (size) printf "%.0f MiB: %s GB/s", size / 1048576, busbw}' "${report}")"
    average="$(awk -F: '/^# Avg bus bandwidth/ {gsub(/ /, "", $2); print $2}' "${report}")"
    echo
    echo "preflight: ${SLURM_JOB_NUM_NODES} nodes, ${SLURM_NTASKS} ranks (${ranks} in the benchmark's table)"
    if [ "${status}" != 0 ] || [ -z "${largest}" ]; then
        echo "ERROR: the benchmark failed (status ${status}, above; ${report})." >&2
        status=1
    elif [ "${ranks}" != "${SLURM_NTASKS}" ]; then
        echo "ERROR: the benchmark ran as ${ranks} group(s), not one of ${SLURM_NTASKS} ranks: an MPI program started without its MPI launch (srun --mpi=...). ALL_REDUCE_PERF=none sbatch ... uses the framework benchmark." >&2
        status=1
    else
        echo "preflight: bus bandwidth ${largest} (largest message), average ${average} GB/s"
        if [ -n "${preflight_reference}" ]; then
            # (in the image, with the job's settings: what the benchmark ran with)
            local setting settings=()
            for setting in "${preflight_reference_env[@]}"; do
                settings+=("--reference-env=${setting}")
            done
            LUMI_SCAFFOLD_HELPER=1 "${CONTAINER[@]}" "${LIB}/run.sh" python "${LIB}/rccl_net.py" busbw \
                --reference "${preflight_reference}" --size "${preflight_reference_size}" \
                --tolerance "${preflight_reference_tolerance}" --nodes "${preflight_reference_nodes}" \
                --job-nodes "${SLURM_JOB_NUM_NODES}" --column "${preflight_reference_column}" \
                --benchmark "${benchmark}" --ran="${bench_args[*]}" \
                ${preflight_reference_args:+"--reference-args=${preflight_reference_args}"} \
                --image="${SIF}" --reference-image="${preflight_reference_image}" "${settings[@]}" \
                --shape "${preflight_reference_shape}" --source "${preflight_reference_source}" "${report}" || status=1
        else
            echo "preflight: no published all-reduce figure for ${site} to compare with (no verdict)"
        fi
    fi

    # RCCL's network, from every rank's log (scripts/lib/rccl_net.py, as in training): TCP, or
    # any other final choice than the fast network where net_check_final names RCCL's final
    # choice, fails the job; no choice at all is reported.
    if [ -n "${net_check}" ]; then
        local rccl_logs=("${LUMI_SCAFFOLD_LOG_DIR}/rccl-${SLURM_JOB_ID}-rank"*.txt) net=0
        RCCL_NET_CHECK=0 "${CONTAINER[@]}" "${LIB}/run.sh" python "${LIB}/rccl_net.py" check \
            --fast "${net_check_fast}" --tcp "${net_check_tcp}" ${net_check_final:+--final "${net_check_final}"} \
            --name "${net_check}" --fix "${net_check_fix}" "${rccl_logs[@]}" || net=$?
        if [ "${net}" = 1 ]; then
            status=1
        elif [ "${net}" = 3 ]; then
            echo "preflight: the benchmark did not use RCCL between nodes (no GPUs?)" >&2
        fi
    fi
    end_nodes
    exit "${status}"
}
