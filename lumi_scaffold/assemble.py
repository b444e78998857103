"""plugin_data for a set of answers: the values the templates take from the catalogue.

:func:`build_plugin_data` assembles the validated
:class:`~lumi_scaffold.plugin_data.PluginData` part by part (the site, the partition, the
job fields of :mod:`lumi_scaffold.jobs`, the container, the environment, the caches, the
storage paths); :func:`resolve` gives it as the dict the answers file records, so that
``copier update`` replays the old project exactly and brings in only what changed in the
catalogue. The answers were checked by :mod:`lumi_scaffold.questions` before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from . import jobs, sources
from . import plugin_data as _plugin_data
from .known_issues import affected_image_issues, split_env
from .models import ContainerImage, EnvSetting, Framework, NodeLayout, Partition, Site
from .plugin_data import SCHEMA, ContainerFacts, JobFields, PartitionFacts, PluginData, PluginDataError, SiteFacts
from .plugins import Catalogue
from .defaults import Answers, answered_partition, chosen_image, default_walltime, split_requirements
from .requirements import merged
from .tracking import TRACKERS
from .gpu_vendors import container_gpu_flag

__all__ = ["build_plugin_data", "resolve"]


def resolve(answers: Mapping[str, Any], cat: Catalogue) -> dict[str, Any]:
    """plugin_data for these answers, as the JSON-able dict the answers file records
    ({} before the site and framework are known)."""
    data = build_plugin_data(answers, cat)
    return data.dump() if data is not None else {}


def _part(name: str, build: Any, *args: Any, **kwargs: Any) -> Any:
    """``build(*args)``, one part of plugin_data. The answers were checked and the catalogue
    validated before, so a value that does not fit plugin_data's rules comes from a plugin
    (or an answer the checks let through): say which field, in one line."""
    try:
        return build(*args, **kwargs)
    except ValidationError as exc:
        raise PluginDataError(_plugin_data.one_line_message(
            exc, None, f"plugin_data.{name}" if name else "plugin_data",
            fix="report it to the plugin that supplies this value (lumi-scaffold plugins lists them)")) from None


def build_plugin_data(answers: Mapping[str, Any], cat: Catalogue) -> PluginData | None:
    """The validated :class:`PluginData` for these answers, built part by part below."""
    a = Answers(answers, cat)
    site = a.site
    fw = cat.frameworks.get(str(a.get("framework")))
    if site is None or fw is None:
        return None
    nodes = a.int("nodes", 1)
    account = str(a.get("account"))
    group = site.account.project_of(account)  # the project the account belongs to, for {project} in paths
    part = answered_partition(a, site)
    image = chosen_image(a)
    container = _part("container", _container_facts, a, site, image, multi=nodes > 1)
    cache_area = site.storage_area(site.cache_area)
    assert cache_area is not None  # the site model checks cache_area names an area
    user_dir = cache_area.user_dir(account, group)
    profiler = cat.profilers.get(str(a.get("profiler") or "none")) or cat.profilers["none"]
    data_area = site.storage_area(str(a.get("data_location"))) or next(s for s in site.storage if s.data)
    project = str(a.get("project_name"))
    tracking = _tracking_facts(site, str(a.get("tracking") or "none"))
    return _part(
        "", PluginData,
        schema=SCHEMA,
        package=project.replace("-", "_"),
        plugins=dict(sorted(cat.plugin_versions().items())),
        site=_part("site", _site_facts, site, site.node_of(part.name), multi=nodes > 1,
                   prestage=bool(a.get("prestage"))),
        partition=_part("partition", _partition_facts, part, nodes),
        job=_part("job", _job_fields, a, site, part, container, fw),
        container=container,
        pins=dict(sorted(image.versions.items())) if image else {},  # your own image: versions unknown
        framework=dict(name=fw.name, title=fw.title, needs_master_addr=fw.needs_master_addr,
                                 distributed_init=fw.distributed_init, pinned_packages=fw.pinned_packages,
                                 train_args=fw.train_args),
        **_env(site, fw, nodes, container.generation),
        caches=[dict(name=v, value=f"{user_dir}/cache/{v.lower()}") for v in fw.cache_vars],
        **_kernel_caches(site, fw, f"{user_dir}/cache/kernels/{project}"),
        data_dir=data_area.resolve(account, group),
        dataset_dir=f"{data_area.resolve(account, group)}/datasets/{project}",
        output_root=f"{user_dir}/{project}/outputs",
        storage=[dict(name=s.name, path=s.resolve(account, group), note=s.note) for s in site.storage],
        **_placement(site, account, group),
        profiler=dict(name=profiler.name, title=profiler.title, kind=profiler.kind,
                               command=profiler.command, env=profiler.env, view=profiler.view),
        tracking=tracking,
        requirements=merged(fw.requirements + (image.requirements if image else [])
                            + [tracking["package"] if tracking else ""] + split_requirements(a.get("extra_requirements"))),
        readme=[s.model_dump() for s in site.readme + fw.readme],
    )


def _tracking_facts(site: Site, name: str) -> dict[str, Any] | None:
    """The tracker the jobs log to, and how the site's users look at its runs (None: none)."""
    if name == "none" or name not in TRACKERS:
        return None
    viewer = next((v for v in site.tracking_viewers if v.name == name), None)
    # The site's viewer may need a version of the tracker's package (LUMI's MLflow app).
    return dict(name=name, title=TRACKERS[name].title, package=(viewer.package if viewer else "") or TRACKERS[name].package,
                viewer=viewer.text if viewer else "", source=viewer.source if viewer else "")


def _placement(site: Site, account: str, group: str | None) -> dict[str, Any]:
    """Where the project's checkout belongs (the user's directory in the site's project
    area) and the home area it should stay out of, where the site names them."""
    area = site.storage_area(site.project_area) if site.project_area else None
    home = next((s for s in site.storage if s.kind == "home"), None)
    return {
        "project_area": dict(name=area.name, path=area.user_dir(account, group), note=area.note) if area else None,
        "home_area": dict(name=home.name, path=home.resolve(account, group), note=home.note) if home else None,
    }


def _env(site: Site, fw: Framework, nodes: int, generation: str) -> dict[str, Any]:
    """The settings run.sh exports (their known issues stay in the catalogue), and those a
    known issue leaves out for this image and shape. A framework's settings are shared by
    every site: their sources as lumi_cite leaves them."""
    settings = [e for e in site.env + [_cited_for(e, site.name) for e in fw.env] if e.scope == "all" or nodes > 1]
    kept, left_out = split_env(settings, nodes, generation)
    return {"env": [e.model_copy(update={"known_issues": []}) for e in kept], "env_left_out": left_out}


def _cited_for(setting: EnvSetting, site: str) -> EnvSetting:
    return setting.model_copy(update={"source": sources.field_for_site(setting.source, site)})


def _kernel_caches(site: Site, fw: Framework, store: str) -> dict[str, Any]:
    """Compiler caches kept in node-local tmp during a job (MIOpen's where the site sets its
    directory, Triton's and TorchInductor's where the framework compiles with torch.compile)
    and their archives' directory in the project's cache area, which carries them from job
    to job."""
    caches = []
    if site.miopen_cache:
        caches.append(dict(name="miopen", title="MIOpen's kernel cache", path=site.miopen_cache))
    if fw.triton_cache:
        for name, title in (("triton", "Triton's kernel cache"), ("inductor", "TorchInductor's cache")):
            caches.append(dict(name=name, title=title,
                               path=f"{site.node_local_tmp.rstrip('/')}/${{USER}}-{name}-cache-${{SLURM_JOB_ID}}-${{SLURM_NODEID}}"))
    return {"kernel_caches": caches, "kernel_cache_store": store if caches else ""}


def _site_facts(site: Site, node: NodeLayout, multi: bool, prestage: bool = False) -> SiteFacts:
    """The site, with the nodes of the job's partition (and how to lay out the archive where
    the project pre-stages one)."""
    return SiteFacts(
        name=site.name, title=site.title, display_name=site.display_name or site.name,
        runtime=site.container_runtime, module_reset=site.module_reset or "",
        rccl_check=site.rccl_check if multi else None,
        allreduce_reference=site.allreduce_reference if multi else None,
        gpus_per_node=node.gpus, gpu_type=node.gpu_type, gpu_vendor=node.gpu_vendor,
        container_gpu_flag=container_gpu_flag(site, node), cpus_per_gpu=node.cpus_per_gpu, cpu_masks=node.cpu_masks,
        mem_per_gpu_gb=node.mem_per_gpu_gb, mem_per_node_gb=node.mem_per_node_gb,
        node_local_tmp=site.node_local_tmp, node_local_tmp_note=site.node_local_tmp_note, support=site.support,
        archive_striping=site.archive_striping if prestage else None, bind_roots=site.bind_roots, miopen_cache=site.miopen_cache or "",
        memory_follows_gpus=site.memory_follows_gpus, gpu_numa=node.gpu_numa, gpu_nic=node.gpu_nic,
        interconnect=site.interconnect, reserved_cores=node.reserved_cores,
        reserved_cores_note=node.reserved_cores_note, gpu_power=node.gpu_power,
        rccl_debug_alias=site.rccl_debug_alias or "", energy_counters=site.energy_counters,
    )


def _partition_facts(part: Partition, nodes: int) -> PartitionFacts:
    return PartitionFacts(
        name=part.name, slurm_partition=part.slurm_name, qos=part.qos or "", allocation=part.allocation,
        max_walltime=part.walltime_limit(nodes), purpose=part.purpose, chains=part.chains, arrays=part.arrays,
        billing=part.billing,
        source=part.source,
    )


def _container_facts(a: Answers, site: Site, image: ContainerImage | None, multi: bool) -> ContainerFacts:
    if image is not None:
        generation = site.generation(image.generation)
        assert generation is not None  # the catalogue checks each image's generation
        facts: dict[str, Any] = dict(
            id=image.id, title=image.title, path=image.path, status=image.status,
            replaced_by=image.replaced_by or "", source=image.source, numa_binding=image.numa_binding,
            # Names whose exact version string the catalogue does not know (a wildcard never does).
            versions_unconfirmed=sorted(set(image.versions_unconfirmed) | {n for n, v in image.versions.items() if "*" in v}),
            pull_from=image.pull_from or "",
            known_issues=[dict(key=i.key, title=i.title, instead=i.instead, conditional=i.conditional)
                          for i in affected_image_issues(image, 2 if multi else 1)],
        )
    else:
        facts = _own_image(a, site)
        # A cotainr build runs as its base image's generation (LUMI: a LAIF image).
        generation = site.cotainr_generation if facts["status"] == "cotainr" else site.own_generation
    modules = generation.load_modules
    # Template versions before `modules` load one module: the bindings module, else the last.
    single = next((m for m in modules if m.sets_binds), modules[-1] if modules else None)
    return ContainerFacts(
        **facts,
        generation=generation.name,
        run_verb=generation.run_verb,
        activate_var=generation.activate_var or "",
        module_use=single.use or "" if single else "",
        module=single.name if single else "",
        modules=modules,
        binds=list(dict.fromkeys(generation.binds + (generation.multi_node_binds if multi else []))),
        mpi_srun_options=generation.mpi_srun_options if multi else [],
        relative=facts["path"].startswith("container/"),
    )


def _own_image(a: Answers, site: Site) -> dict[str, Any]:
    """Container facts of the user's own image: ``custom`` (a .sif path) or a cotainr build."""
    choice = str(a.get("container"))
    if choice == "cotainr" and site.cotainr:
        return {"id": choice, "title": "cotainr image", "path": f"container/{a.get('project_name')}.sif",
                "status": choice, "cotainr": site.cotainr}
    return {"id": "custom", "title": "custom image", "path": str(a.get("container_path")), "status": "custom"}


def _job_fields(a: Answers, site: Site, part: Partition, container: ContainerFacts, fw: Framework) -> JobFields:
    """The job model (lumi_scaffold.jobs) for these answers."""
    node = site.node_of(part.name)
    smoke = site.partition(site.smoke_partition or site.partial_node_partition)
    assert smoke is not None  # the site model checks its partition names
    request = jobs.Request(
        project=str(a.get("project_name")), account=str(a.get("account")), nodes=a.int("nodes", 1),
        gpus=a.int("gpus_per_node", node.gpus), launcher=str(a.get("launcher") or "srun"),
        # The training job's time limit (copier.yml's default before it is answered).
        walltime=str(a.get("walltime") or default_walltime(a)), site=site, part=part, smoke=smoke,
        numa_binding=container.numa_binding, own_image=container.status in ("custom", "cotainr"))
    return JobFields(**jobs.fields(request, container_binds=container.binds, allreduce_bench=_allreduce_bench(fw, a.cat)))


def _allreduce_bench(fw: Framework, cat: Catalogue) -> str:
    """The framework benchmark the preflight falls back on (the image has no all_reduce_perf),
    which imports the image's framework: JAX's psum for a framework that pins ``jax`` in its
    images, torch.distributed's all_reduce for one on torch.distributed's env:// rendezvous
    (PyTorch, DeepSpeed); a framework that runs on another's images (Flax on JAX's) has that
    one's; none for others."""
    if "jax" in fw.pinned_packages:
        return "jax"
    if fw.needs_master_addr:
        return "torch"
    base = cat.frameworks.get(fw.runs_on) if fw.runs_on else None
    return _allreduce_bench(base, cat) if base is not None and base.name != fw.name else ""
