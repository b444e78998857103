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
        f"{path}:14:11: 1.status: Input should be 'recommended', 'available', 'legacy' or 'removed'",
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


# --- the libyaml fast path must mean what ruamel's loader means -------------------------

def _plain(value):
    """ruamel's CommentedMap/CommentedSeq/Scalar* as plain Python, for comparison."""
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    for kind in (int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def _both(text):
    """(fast path result, ruamel's data or the exception it raised)."""
    from lumi_scaffold import datafile

    try:
        careful = _plain(datafile._yaml().load(text))
    except Exception as exc:  # e.g. DuplicateKeyError: the fast path must decline
        careful = exc
    return datafile._fast_load(text), careful


TRICKY = [
    "a: yes", "a: on", "a: No", "a: true", "a: FALSE", "a: ~", "a:", "a: null", "a: Null",
    "a: 0", "a: -7", "a: +7", "a: 007", "a: 0o17", "a: 0x1F", "a: 0b101", "a: 1_000",
    "a: 1.5", "a: -0.25", "a: 1.", "a: .5", "a: 1e3", "a: 1.0e-3", "a: .inf", "a: .NaN",
    "a: 2026-05-13", "a: 2026-05-13 12:14:30", "a: 1:00:00", "a: 3-00:00:00", "a: '02:00:00'",
    "a: 2.10.*", "a: 0.4.35", "a: 0x00fe000000000000", "a: '0x00fe000000000000'", "a: v1.2",
    "a: =", "a: [1, b, 2.5, 'c']", "a: {b: 1}", "- 1\n- x\n- {y: z}", "a: !!str 5", "a: !!int '7'",
    "a: !!float '1.5'", "a: !custom x", "a: !!binary aGk=", "a: &x 1\nb: *x", "base: &b {x: 1}\nm:\n  <<: *b\n  y: 2",
    "a: 1\na: 2", "? [1, 2]\n: x", "1: one\n2.5: two\ntrue: three", "a: |\n  line 1\n  line 2\n", "a: >-\n  folded\n  text\n",
    "a: \"tab\\there\"", "a: ünïcode", "a: 'it''s'", "a: '  spaced  '", "",
]


@pytest.mark.parametrize("text", TRICKY)
def test_fast_path_agrees_with_ruamel_or_declines(text):
    from lumi_scaffold import datafile

    fast, careful = _both(text)
    assert fast is datafile._DECLINED or fast == careful, (fast, careful)


def test_fast_path_takes_the_common_cases():
    """Guards the speed-up itself: the scalars our data files use are not declined."""
    from lumi_scaffold import datafile

    text = "a: yes\nb: 2\nc: 1.5\nd: true\ne: ~\nf: '02:00:00'\ng: 2.10.*\nh: [x, 'y']\ni: {j: k}\n"
    assert datafile._fast_load(text) == {"a": "yes", "b": 2, "c": 1.5, "d": True, "e": None, "f": "02:00:00",
                                         "g": "2.10.*", "h": ["x", "y"], "i": {"j": "k"}}
    for declined in ("a: 0o17", "a: 2026-05-13", "a: 1\na: 2", "a: !custom x"):
        assert datafile._fast_load(declined) is datafile._DECLINED, declined


def _data_files():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    return sorted(p for pattern in ("lumi_scaffold/default_plugins/*.yaml", "plugins/*/*/*.yaml", "docs/plugins/**/*.yaml")
                  for p in root.glob(pattern))


@pytest.mark.parametrize("path", _data_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_shipped_data_file_reads_the_same_both_ways(path):
    from lumi_scaffold import datafile

    fast, careful = _both(path.read_text(encoding="utf-8"))
    assert fast == careful


def test_shipped_data_files_found():
    names = {p.name for p in _data_files()}
    assert {"lumi.yaml", "pytorch.yaml", "jax.yaml", "profilers.yaml", "frontier.yaml", "deepspeed.yaml"} <= names


def test_validation_error_after_the_fast_path_still_has_positions(tmp_path):
    """The fast path parses this file fine; validation fails; the message comes from ruamel's parse."""
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


# Found in review: inputs where libyaml and ruamel part ways; each must be declined.
REVIEW = [
    "a: -_1", "a: +_0", "-_1: a", "%YAML 1.1\n---\na: yes", "%YAML 1.1\n---\na: 1:20", "%TAG !l! tag:x:\n---\na: !l!x 1",
    "a: !", "- !", "! : x", "a: ! 5", "a: !<lumi-fast:int> 1_0", "a:\t1", "a: b\tc", "a: 1\n\ufeff", "- a\x85- b",
    "a: |\n  x\u2028y\n", "&a [*a]", "  > #c+|\r#", "\n|\n#+! 1#", "a: " + "[" * 300 + "]" * 300, "---\na: 1\n---\nb: 2",
]


@pytest.mark.parametrize("text", REVIEW, ids=range(len(REVIEW)))
def test_review_cases_are_declined(text):
    from lumi_scaffold import datafile

    assert datafile._fast_load(text) is datafile._DECLINED


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
