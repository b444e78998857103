"""YAML data files: errors come out as file:line:col: field: message."""

from __future__ import annotations

import pytest

from lumi_scaffold.datafile import load_data_file
from lumi_scaffold.errors import DataFileError
from lumi_scaffold.models import ContainerImage, Partition, Profiler

PARTITION = """\
name: small-g
allocation: by-resource
max_nodes: four
max_walltime: 3-00:00:00
"""


def test_line_and_column_of_bad_value(tmp_path):
    path = tmp_path / "part.yaml"
    path.write_text(PARTITION)
    with pytest.raises(DataFileError) as info:
        load_data_file(path, Partition)
    assert info.value.lines == [f"{path}:3:12: max_nodes: Input should be a valid integer, unable to parse string as an integer"]


def test_unknown_key_and_missing_key(tmp_path):
    path = tmp_path / "part.yaml"
    path.write_text("name: small-g\nallocation: by-resource\nmax_node: 4\nmax_walltime: 3-00:00:00\n")
    with pytest.raises(DataFileError) as info:
        load_data_file(path, Partition)
    text = str(info.value)
    assert f"{path}:1:1: max_nodes: Field required" in text
    assert f"{path}:3:11: max_node: Extra inputs are not permitted" in text


def test_list_file_locates_item(tmp_path):
    path = tmp_path / "images.yaml"
    path.write_text(
        "- id: good\n  site: s\n  framework: f\n  title: t\n  path: /a.sif\n  generation: g\n  status: legacy\n"
        "- id: bad\n  site: s\n  framework: f\n  title: t\n  path: a.sif\n  generation: g\n  status: gone\n"
    )
    with pytest.raises(DataFileError) as info:
        load_data_file(path, ContainerImage, many=True)
    assert info.value.lines == [
        f"{path}:12:9: 1.path: 'a.sif' must be an absolute path",
        f"{path}:14:11: 1.status: Input should be 'recommended', 'legacy' or 'removed'",
    ]


def test_nested_list_error_points_at_item(tmp_path):
    path = tmp_path / "prof.yaml"
    path.write_text("name: p\ntitle: t\nkind: command\ncommand:\n  - rocprof\n  - $(evil)\n")
    with pytest.raises(DataFileError, match=rf"{path}:6:5: command.1: '\$\(evil\)' may only contain"):
        load_data_file(path, Profiler)


def test_yaml_syntax_error_and_missing_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(DataFileError, match=rf"{path}:2:1: not valid YAML"):
        load_data_file(path, Partition)
    with pytest.raises(DataFileError, match="cannot read: No such file"):
        load_data_file(tmp_path / "nope.yaml", Partition)


def test_duplicate_keys_are_refused(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text(PARTITION.replace("four", "4") + "max_nodes: 5\n")
    with pytest.raises(DataFileError, match="not valid YAML"):
        load_data_file(path, Partition)


def test_overrides_fill_fields(tmp_path):
    path = tmp_path / "part.yaml"
    path.write_text(PARTITION.replace("four", "4"))
    assert load_data_file(path, Partition, max_nodes=2).max_nodes == 2
