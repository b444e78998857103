"""Built-in site plugin: LUMI-G."""

from pathlib import Path

from lumi_scaffold import Site, hookimpl, load_data_file


@hookimpl
def register_sites(register):
    register(load_data_file(Path(__file__).with_name("lumi.yaml"), Site))
