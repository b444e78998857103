"""lumi_scaffold/requirements.py: requirements merged by package name, and the conflicts it
judges (only certain ones: a pin the other excludes, bounds with nothing between them)."""

from __future__ import annotations

import pytest

from lumi_scaffold.requirements import conflict, merged


@pytest.mark.parametrize("first, second, why", [
    ("flax==0.8.3", "flax>=0.10", "flax>=0.10 admits no 0.8.3"),
    ("Flax>=0.10", "flax<0.9", "no version lies between their bounds"),
    ("flax>=0.10", "flax<0.10", "no version lies between their bounds"),
    ("jax~=0.4.30", "jax>=0.5", "no version lies between their bounds"),
    ("jax==0.4.*", "jax>=0.5", "no version lies between their bounds"),
    ("a!=1", "a==1", "a!=1 admits no 1"),
    ("flax==0.10.4", "flax>=0.10", ""),
    ("flax<=0.10", "flax>=0.10", ""),
    ("jax==0.4.*", "jax==0.4.35", ""),
    ("a", "a==1", ""),
    ("a[x]>1", "a[y]<3", ""),
    ("a==1", "b==2", ""),  # other packages
    ("a===1", "a==2", "a===1 admits no 2"),  # an arbitrary-equality pin: the other's pin is judged
    ("a~1", "a==2", ""),  # not a requirement packaging reads: never judged
])
def test_conflicts_are_judged_only_where_certain(first, second, why):
    assert conflict(first, second) == why
    assert bool(conflict(second, first)) == bool(why)


def test_a_package_named_twice_is_one_line_and_others_keep_their_text():
    assert merged(["flax>=0.10", "numpy", "flax==0.10.4", "", "A[x]>1", "a[y]<3", "numpy", "wandb"]) == [
        "A[x,y]<3,>1", "flax==0.10.4,>=0.10", "numpy", "wandb"]
