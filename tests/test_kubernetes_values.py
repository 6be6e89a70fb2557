"""deploy/values.yaml, the Zero to JupyterHub values for the course, checked offline: each profile's pod is rendered
by KubeSpawner (``jupyterhub-kubespawner``, the spawner the chart runs) as the Hub would render it for a learner who
chose that profile, with no cluster (a kubeconfig that points nowhere; nothing is sent). The checks: GPU limits per
profile, the CPU profile's ``NVIDIA_VISIBLE_DEVICES=void``, the memory-backed ``/dev/shm``, culling, and every
``kubespawner_override`` key a KubeSpawner trait. KubeSpawner sets overrides as attributes when a learner chooses
the profile, so a misspelt key would otherwise be found only then, as that learner's failed spawn. The chart maps
``singleuser`` keys onto KubeSpawner's as below (its ``jupyterhub_config.py``); only the keys these values use are
mapped."""

from __future__ import annotations

import asyncio
import copy
import functools
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
kubespawner = pytest.importorskip("kubespawner", reason="jupyterhub-kubespawner (the kubernetes extra) not installed")
from traitlets.config import Config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
VALUES = yaml.safe_load((ROOT / "deploy" / "values.yaml").read_text())
PROFILES = {p["slug"]: p for p in VALUES["singleuser"]["profileList"]}
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: offline, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: offline, user: {token: none}}]
contexts: [{name: offline, context: {cluster: offline, user: offline}}]
current-context: offline
"""


def unknown_overrides(profiles: list[dict]) -> list[str]:
    """Each ``kubespawner_override`` key that is not a configurable KubeSpawner trait, as 'slug: key'."""
    traits = set(kubespawner.KubeSpawner.class_trait_names(config=True))
    return [f"{p['slug']}: {k}" for p in profiles for k in p.get("kubespawner_override", {}) if k not in traits]


def _config(values: dict) -> Config:
    single = values["singleuser"]
    c = Config()
    k = c.KubeSpawner
    k.image = f"{single['image']['name']}:{single['image']['tag']}"
    k.default_url = single["defaultUrl"]
    k.cpu_guarantee, k.cpu_limit = single["cpu"]["guarantee"], single["cpu"]["limit"]
    k.mem_guarantee, k.mem_limit = single["memory"]["guarantee"], single["memory"]["limit"]
    k.volumes = single["storage"]["extraVolumes"]
    k.volume_mounts = single["storage"]["extraVolumeMounts"]
    k.profile_list = single["profileList"]
    return c


def render(slug: str, values: dict = VALUES) -> dict:
    """The pod KubeSpawner would create for a learner who chose profile ``slug``, as a dict."""

    async def go():
        spawner = kubespawner.KubeSpawner(_mock=True, config=_config(values))
        spawner.user_options = {"profile": slug}
        await spawner.load_user_options()
        pod = await spawner.get_pod_manifest()
        return spawner.api.api_client.sanitize_for_serialization(pod)

    return asyncio.run(go())


@pytest.fixture(autouse=True)
def offline_kubeconfig(tmp_path, monkeypatch):
    """The kubeconfig that points nowhere. The client library read ``$KUBECONFIG`` when it was imported, so its
    loader is pointed at this file instead."""
    import kubernetes_asyncio.config

    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    load = kubernetes_asyncio.config.load_kube_config
    monkeypatch.setattr(kubernetes_asyncio.config, "load_kube_config", functools.partial(load, config_file=str(path)))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)  # not in a pod: take the kubeconfig


def _container(pod: dict) -> dict:
    [container] = pod["spec"]["containers"]
    return container


@pytest.mark.parametrize(
    ("slug", "gpu_limit"),
    [
        ("cpu", {}),
        ("gpu-1", {"nvidia.com/gpu": "1"}),
        ("gpu-2", {"nvidia.com/gpu": "2"}),
        ("mig-1g", {"nvidia.com/mig-1g.10gb": "1"}),
    ],
)
def test_each_profiles_pod_has_its_gpus_and_a_memory_backed_shm(slug, gpu_limit):
    container = _container(render(slug))
    limits = container["resources"]["limits"]
    assert {k: v for k, v in limits.items() if k.startswith("nvidia.com/")} == gpu_limit
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert (env.get("NVIDIA_VISIBLE_DEVICES") == "void") is (slug == "cpu")  # a pod without a limit sees every GPU
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in render(slug)["spec"]["volumes"]}
    assert volumes[mounts["/dev/shm"]]["emptyDir"] == {"medium": "Memory", "sizeLimit": "2Gi"}


def test_the_two_gpu_profile_raises_cpu_and_memory_with_its_gpus():
    limits = _container(render("gpu-2"))["resources"]["limits"]
    assert float(limits["cpu"]) == 8 and int(limits["memory"]) == 16 * 2**30  # KubeSpawner writes bytes
    assert float(_container(render("gpu-1"))["resources"]["limits"]["cpu"]) == 4


def test_every_override_is_a_kubespawner_trait_and_a_misspelt_one_is_caught():
    assert unknown_overrides(VALUES["singleuser"]["profileList"]) == []
    misspelt = copy.deepcopy(VALUES)
    override = misspelt["singleuser"]["profileList"][1]["kubespawner_override"]
    override["extra_resource_limit"] = override.pop("extra_resource_limits")  # one letter short
    assert unknown_overrides(misspelt["singleuser"]["profileList"]) == ["gpu-1: extra_resource_limit"]
    # KubeSpawner itself refuses it only when a learner chooses that profile: their spawn fails
    with pytest.raises(AttributeError, match="extra_resource_limit"):
        render("gpu-1", misspelt)


def test_idle_servers_are_culled():
    cull = VALUES["cull"]
    assert cull["enabled"] is True and 0 < cull["timeout"] <= 4 * 3600 and cull["every"] < cull["timeout"]
