"""Built-in profilers: none, rocprof, rocprofv3 and the framework's own profiler."""

from pathlib import Path

from lumi_scaffold import Profiler, hookimpl, load_data_file


@hookimpl
def register_profilers(register):
    for profiler in load_data_file(Path(__file__).with_name("profilers.yaml"), Profiler, many=True):
        register(profiler)
