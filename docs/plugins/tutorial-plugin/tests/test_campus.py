import lumi_site_campus
from lumi_scaffold.testing import catalogue_fixture, check_conformance

PLUGIN = "lumi-site-campus"

catalogue = catalogue_fixture(lumi_site_campus)


def test_campus_offers_pytorch(catalogue):
    assert catalogue.provenance[("site", "campus")] == PLUGIN
    assert catalogue.frameworks_for("campus") == ["pytorch"]


def test_long_jobs_only_on_few_nodes(catalogue):
    large = catalogue.sites["campus"].partition("gpu-large")
    assert large.walltime_limit(2) == "2-00:00:00"
    assert large.walltime_limit(3) == "12:00:00"


def test_conformance(catalogue):
    assert check_conformance(catalogue, PLUGIN) == []
