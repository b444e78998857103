"""The real Flight Recorder path on a GPU (issue 44), run from the repository's root on a
machine with one NVIDIA GPU and PyTorch: two NCCL ranks (rank.py beside this file), rank 1
hangs before all_reduce #3, rank 0 waits in it.
  pipe:    scripts/lib/watchdog.py dump (the template's own file) asks both ranks through
           their dump pipes, as the job's watchdog does before it stops a step; then
           fault.py reads the dumps PyTorch wrote.
  timeout: the process group's timeout (20 s) runs out; PyTorch dumps on its own.
BACKEND=gloo: the pipe scenario over gloo on the CPU (no GPU needed; gloo makes no pipe).
Each scenario's dumps are copied to $OUT as <scenario>-rank-<R>; the ranks' logs are printed."""
import os, pickle, subprocess, sys, time, glob, shutil
REPO = os.getcwd()
LIB = os.path.join(REPO, "project-templates/project/scripts/lib")
OUT = os.environ.get("OUT", "/tmp/out")
NODE = "gpunode"

def scenario(name, timeout_s, ask):
    base = f"/tmp/fr-{name}"
    shutil.rmtree(base, ignore_errors=True)
    hb, fr, tmp = base + "/hb", base + "/fr", base + "/tmp"
    for d in (hb, fr, tmp):
        os.makedirs(d)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29500 + len(name)), WORLD_SIZE="2",
               NCCL_SOCKET_IFNAME="lo", NCCL_IB_DISABLE="1", NCCL_DEBUG="WARN", TIMEOUT_S=str(timeout_s),
               TORCH_NCCL_DEBUG_INFO_PIPE_FILE=tmp + "/flight-recorder-pipe-", TORCH_FR_DUMP_TEMP_FILE=fr + "/rank-",
               TORCH_FR_BUFFER_SIZE="2000", TORCH_NCCL_DUMP_ON_TIMEOUT="1", TMPDIR=tmp,
               PYTHONPATH=os.path.join(LIB, "python"), LUMI_SCAFFOLD_FLIGHT="1", SLURMD_NODENAME=NODE)
    procs, logs = [], []
    for r in (0, 1):
        log = open(f"{base}/rank{r}.log", "w")
        logs.append(log)
        procs.append(subprocess.Popen([sys.executable, "-u", os.path.join(os.path.dirname(os.path.abspath(__file__)), "rank.py")], stdout=log, stderr=subprocess.STDOUT,
                                      env=dict(env, RANK=str(r), LOCAL_RANK="0", NCCL_HOSTID=f"fakehost{r}",
                                               LUMI_SCAFFOLD_HEARTBEAT=f"{hb}/rank{r}@{NODE}")))
    t0 = time.time()
    while time.time() - t0 < 120:
        text = open(f"{base}/rank0.log").read()
        if "step 2 done" in text or any(p.poll() is not None for p in procs):
            break
        time.sleep(1)
    print(f"=== {name}: ranks up after {time.time() - t0:.0f} s; pipes: {sorted(os.listdir(tmp))}", flush=True)
    time.sleep(8)
    if ask:
        t1 = time.time()
        run = subprocess.run([sys.executable, f"{LIB}/watchdog.py", "dump", "--dir", hb], env=env, capture_output=True,
                             text=True, timeout=120)
        print(f"--- watchdog dump ({time.time() - t1:.1f} s, rc {run.returncode}):\n{run.stdout}{run.stderr}", flush=True)
    else:
        t1 = time.time()
        while time.time() - t1 < timeout_s + 90 and len(os.listdir(fr)) < 2:
            time.sleep(2)
        time.sleep(5)
        print(f"--- waited {time.time() - t1:.0f} s for the timeout dumps", flush=True)
    print(f"--- files: {sorted(os.listdir(fr))}", flush=True)
    for f in sorted(glob.glob(fr + "/rank-*")):
        try:
            d = pickle.load(open(f, "rb"))
            print(f"{os.path.basename(f)}: keys {sorted(d)}; version {d.get('version')}; pg_config {d.get('pg_config')}")
            for e in d.get("entries", [])[-3:]:
                print("   ", {k: e.get(k) for k in ("collective_seq_id", "p2p_seq_id", "state", "profiling_name",
                                                   "process_group", "is_p2p", "pg_id")})
        except Exception as exc:
            print(f"{f}: {exc!r}")
    run = subprocess.run([sys.executable, f"{LIB}/fault.py", "flight", fr], capture_output=True, text=True)
    print(f"--- fault.py flight:\n{run.stdout}{run.stderr}", flush=True)
    sys.path.insert(0, LIB)
    import fault
    print("--- flight_evidence:", fault.flight_evidence(fr), flush=True)
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()
    for r in (0, 1):
        text = open(f"{base}/rank{r}.log").read()
        print(f"--- rank {r} log (last 3000 chars):\n{text[-3000:]}", flush=True)
        if os.path.exists(f"{fr}/rank-{r}"):
            shutil.copy(f"{fr}/rank-{r}", f"{OUT}/{name}-rank-{r}")

if os.environ.get("BACKEND") == "gloo":
    scenario("gloo", 600, True)
    sys.exit()
print(subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__, torch.cuda.nccl.version(), "
                      "torch.cuda.get_device_name())"], capture_output=True, text=True).stdout, flush=True)
scenario("pipe", 600, True)
scenario("timeout", 20, False)
