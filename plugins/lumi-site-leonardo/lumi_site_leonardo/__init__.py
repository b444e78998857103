"""lumi-scaffold site plugin: CINECA Leonardo Booster (4x NVIDIA A100 per node).

Leonardo documents no central AI image: users bring their own ``.sif`` [AIAT6]. So this
plugin registers the site (leonardo.yaml) and the sources its data cites (sources.yaml),
no container image; the site offers every framework with the user's own image
(``own_image_frameworks: all``).
"""

from pathlib import Path

from lumi_scaffold import Site, Source, hookimpl, load_data_file

__version__ = "0.1.0"
# The lumi-scaffold plugin API this plugin was written for: node.gpu_vendor needs 1.3.
LUMI_SCAFFOLD_API = "1.3"
HERE = Path(__file__).parent


@hookimpl
def register_sites(register):
    register(load_data_file(HERE / "leonardo.yaml", Site))


@hookimpl
def register_sources(register):
    for source in load_data_file(HERE / "sources.yaml", Source, many=True):
        register(source)
