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


def test_misspelled_key_gets_did_you_mean_instead_of_field_required(tmp_path):
    path = tmp_path / "part.yaml"
    path.write_text("name: small-g\nallocation: by-resource\nmax_node: 4\nmax_walltime: 3-00:00:00\n")
    with pytest.raises(DataFileError) as info:
        load_data_file(path, Partition)
    assert info.value.lines == [f"{path}:3:1: max_node: unknown key; did you mean 'max_nodes'?"]


def test_unknown_key_without_a_close_match_lists_the_keys_and_missing_ones_stay(tmp_path):
    path = tmp_path / "part.yaml"
    path.write_text("name: small-g\nallocation: by-resource\ncolour: blue\nmax_walltime: 3-00:00:00\n")
    with pytest.raises(DataFileError) as info:
        load_data_file(path, Partition)
    assert f"{path}:1:1: max_nodes: Field required" in info.value.lines
    unknown = next(line for line in info.value.lines if "colour" in line)
    assert unknown.startswith(f"{path}:3:1: colour: unknown key; Partition has name, slurm_partition, qos, allocation,")


def test_every_error_of_a_file_in_one_run_each_located(tmp_path):
    """Three mistakes in different places, nested ones included: three located lines."""
    path = tmp_path / "prof.yaml"
    path.write_text("name: p\ntitle: t\nkind: comand\ncommand:\n  - rocprof\n  - $(evil)\nenv:\n  - name: X\n    why: w\n    valeu: 1\n")
    with pytest.raises(DataFileError) as info:
        load_data_file(path, Profiler)
    assert len(info.value.lines) == 3, info.value.lines
    assert info.value.lines[0].startswith(f"{path}:3:7: kind: Input should be 'none', 'command' or 'framework'")
    assert info.value.lines[1].startswith(f"{path}:6:5: command.1: '$(evil)' may only contain")
    assert info.value.lines[2] == f"{path}:10:5: env.0.valeu: unknown key; did you mean 'value'?"
    assert str(info.value) == "\n".join(info.value.lines)


def test_did_you_mean_in_a_list_file(tmp_path):
    path = tmp_path / "images.yaml"
    path.write_text("- id: a\n  site: s\n  framework: f\n  title: t\n  path: /a.sif\n  generation: g\n  status: legacy\n"
                    "  version: {torch: '2.1'}\n")
    with pytest.raises(DataFileError) as info:
        load_data_file(path, ContainerImage, many=True)
    assert info.value.lines == [f"{path}:8:3: 0.version: unknown key; did you mean 'versions'?"]


def test_list_file_locates_item(tmp_path):
    path = tmp_path / "images.yaml"
    path.write_text(
        "- id: good\n  site: s\n  framework: f\n  title: t\n  path: /a.sif\n  generation: g\n  status: legacy\n"
        "- id: bad\n  site: s\n  framework: f\n  title: t\n  path: a.sif\n  generation: g\n  status: gone\n"
    )
    with pytest.raises(DataFileError) as info:
        load_data_file(path, ContainerImage, many=True)
    assert info.value.lines == [
        f"{path}:12:9: 1.path: 'a.sif' must be an absolute path, or start with an environment variable ($NAME/... or ${{NAME}}/...)",
        f"{path}:14:11: 1.status: Input should be 'recommended', 'available', 'observed', 'legacy' or 'removed'",
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


# --- one parser: ruamel's YAML 1.2 meaning everywhere ------------------------------------

YAML_12 = [("a: yes", "yes"), ("a: on", "on"), ("a: 0o17", 15), ("a: 1_000", 1000), ("a: 2026-05-13", __import__("datetime").date(2026, 5, 13)),
           ("a: '02:00:00'", "02:00:00"), ("a: 3-00:00:00", "3-00:00:00"), ("a: 2.10.*", "2.10.*"), ("a: ~", None)]


@pytest.mark.parametrize(("text", "value"), YAML_12)
def test_data_files_and_answers_files_read_yaml_1_2(tmp_path, text, value):
    """A plugin's data file and a project's answers file mean the same: YAML 1.2 (`yes`
    is text, as a Slurm time is), read by the one parser."""
    from lumi_scaffold.answers import load_yaml

    path = tmp_path / "a.yaml"
    path.write_text(text + "\n")
    loaded = load_yaml(path, "answers file")["a"]
    assert loaded == value and type(loaded) is type(value)


def _data_files():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    return sorted(p for pattern in ("lumi_scaffold/default_plugins/*.yaml", "plugins/*/*/*.yaml", "docs/plugins/**/*.yaml")
                  for p in root.glob(pattern))


def test_shipped_data_files_found():
    names = {p.name for p in _data_files()}
    assert {"lumi.yaml", "pytorch.yaml", "jax.yaml", "profilers.yaml", "frontier.yaml", "deepspeed.yaml"} <= names


def test_the_package_has_one_yaml_parser():
    """No module reads YAML through PyYAML or libyaml (lumi_yaml writes the answers file
    with PyYAML's emitter, as Copier's own filter does: a writer, not a second meaning)."""
    from pathlib import Path

    package = Path(__file__).resolve().parents[1] / "lumi_scaffold"
    for path in package.rglob("*.py"):
        text = path.read_text()
        for reader in ("CSafeLoader", "yaml.safe_load", "yaml.load(", "yaml.parse(", "SafeLoader"):
            assert reader not in text, f"{path.relative_to(package)} reads YAML with {reader}"


def test_validation_error_has_positions(tmp_path):
    path = tmp_path / "part.yaml"
    path.write_text("name: small-g\nallocation: by-resource\nmax_nodes: 0\nmax_walltime: '3-00:00:00'\n")
    with pytest.raises(DataFileError) as info:
        load_data_file(path, Partition)
    assert info.value.lines[0].startswith(f"{path}:3:12: max_nodes: ")


def test_not_utf8(tmp_path):
    path = tmp_path / "part.yaml"
    path.write_bytes(b"name: sm\xe4ll-g\n")
    with pytest.raises(DataFileError) as info:
        load_data_file(path, Partition)
    assert info.value.lines == [f"{path}: not UTF-8 text (invalid continuation byte at byte 8); save it as UTF-8"]


def test_very_deep_nesting_does_not_crash(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("name: " + "[" * 100000 + "]" * 100000 + "\n")
    with pytest.raises(DataFileError) as info:
        load_data_file(path, Partition)
    assert info.value.lines[0].startswith(f"{path}")


def test_ruamel_slip_is_a_clean_error(tmp_path):
    path = tmp_path / "slip.yaml"
    path.write_text("name: -_\n")
    with pytest.raises(DataFileError) as info:
        load_data_file(path, Partition)
    assert "not valid YAML" in info.value.lines[0]
