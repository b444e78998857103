# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
"""Imported by Python at start in every process of a watched training step (run.sh puts this
directory on PYTHONPATH), whatever the command: on SIGUSR2 the process writes its stacks
(faulthandler) to $TMPDIR/stacks-<pid>, node-local, which the watchdog prints with the rank's
name before it stops a stalled step (scripts/lib/watchdog.py dump). A script that registers
SIGUSR2 itself (heartbeat.py does, to stderr) replaces this. Then the next sitecustomize on
sys.path (the image's, if it has one) runs as it would have without this file."""

import os
import sys

if os.environ.get("LUMI_SCAFFOLD_HEARTBEAT") and os.environ.get("LUMI_SCAFFOLD_HELPER") != "1":
    try:
        import faulthandler
        import signal

        _stacks_path = os.path.join(os.environ.get("TMPDIR") or "/tmp", "stacks-{}".format(os.getpid()))
        _stacks = open(_stacks_path, "w")
        faulthandler.register(signal.SIGUSR2, file=_stacks, all_threads=True)
    except (OSError, AttributeError, ValueError):
        pass
    else:
        # A process that ends of itself needs its file no more (outside a job, TMPDIR is
        # nobody's to clean: /tmp of a login node).
        import atexit

        def _remove_stacks(path=_stacks_path):
            try:
                os.remove(path)
            except OSError:
                pass

        atexit.register(_remove_stacks)


def _next_sitecustomize():
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec and spec.loader and spec.origin != os.path.abspath(__file__):
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_next_sitecustomize()
