"""Built-in profilers: none, rocprof, rocprofv3 and the framework's own profiler."""

from pathlib import Path

from .. import hookimpl
from ..datafile import load_data_file
from ..models import Profiler


@hookimpl
def register_profilers(register):
    for profiler in load_data_file(Path(__file__).with_name("profilers.yaml"), Profiler, many=True):
        register(profiler)
