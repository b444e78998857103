"""lumi-scaffold site plugin: OLCF Frontier (facts from lumi-facts.md section 8.1).

Frontier has no central directory of AI images: users pull their own [OLCF-CT]. So this
plugin registers the site only, no container image; the site offers every framework
with the user's own image (``own_image_frameworks: all`` in frontier.yaml).
"""

from pathlib import Path

from lumi_scaffold import Site, hookimpl, load_data_file

__version__ = "0.2.0"
DATA = Path(__file__).with_name("frontier.yaml")


@hookimpl
def register_sites(register):
    register(load_data_file(DATA, Site))
