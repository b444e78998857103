from lumi_scaffold.plugins import get_catalogue


def test_local_site_is_registered_with_fitting_masks():
    cat = get_catalogue()
    site = cat.sites["local"]
    assert site.node.cpu_masks == ["0x1", "0x2"]
    assert cat.provenance[("site", "local")] == "lumi-site-local"
    assert cat.recommended_image("local", "pytorch").path == "/opt/containers/pytorch-cpu.sif"
    assert [p for p in cat.problems if p.plugin == "lumi-site-local"] == []
