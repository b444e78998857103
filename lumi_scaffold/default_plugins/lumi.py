"""Built-in site plugin: LUMI-G."""

from pathlib import Path

from .. import hookimpl
from ..datafile import load_data_file
from ..models import Site


@hookimpl
def register_sites(register):
    register(load_data_file(Path(__file__).with_name("lumi.yaml"), Site))
