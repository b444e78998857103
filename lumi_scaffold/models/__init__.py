"""Catalogue models: sites, container images, frameworks, profilers.

Plugins register instances of these (or plain dicts that validate into them). Every
model forbids unknown keys, so a misspelled key in plugin data fails loudly, and the
checks that keep generated jobs correct (masks against reserved cores, partition
limits, account patterns) live here rather than in templates.
"""

from __future__ import annotations

# The models by what they describe, in the order of the reference page (lumi_scaffold.reference);
# every name is importable from lumi_scaffold.models, as before 0.4.
from .base import Model, JobShape, KnownIssue, EnvSetting, ProfilerWord, ProfilerEnvSetting, ExtraOption
from .resources import BillingRule, SiteNote, WalltimeBin, NodeLayout, Partition, StorageArea
from .runtime import EnvModule, BindingsModule, ContainerGeneration, CotainrSupport, LogPattern, RcclCheck, AllreduceReference
from .site import AccountRule, ReadmeSection, TrackingViewer, Site
from .software import ContainerImage, check_pull_address, TrainArg, Framework, Profiler, Source, TemplateFile

__all__ = [
    "AccountRule",
    "BillingRule",
    "BindingsModule",
    "ContainerGeneration",
    "CotainrSupport",
    "ContainerImage",
    "EnvModule",
    "EnvSetting",
    "Framework",
    "KnownIssue",
    "NodeLayout",
    "Partition",
    "Profiler",
    "RcclCheck",
    "ReadmeSection",
    "Site",
    "SiteNote",
    "StorageArea",
    "WalltimeBin",
    "Source",
    "TemplateFile",
]
