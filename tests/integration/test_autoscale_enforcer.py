"""AutoscaleEnforcer on a real API server with our minimal NeonVM CRDs: VM pods
placed by their current size and never onto a node without room; a simulated
autoscaler-agent speaking v1.1, v2.0, v2.1, v4.0 and v5.0 over real HTTP gets
grants, partial grants and denials consistent with the node's capacity; a bad
ConfigMap update is refused with an Event while the last good config stays;
a restart loses no reservation; without the NeonVM CRDs start-up fails
naming the missing resource."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import signal
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from kubernetes_asyncio import client

from plugins.autoscale_enforcer import CONFIG_MAP_KEY
from plugins.autoscale_enforcer.plugin import AGENT_LISTENER, NAME, STATE_DUMP_PATH
from scheduler.app import cli
from scheduler.app.flags import apply_flags, parse_args
from scheduler.app.root import AppOptions, SchedulerApp
from scheduler.config import parse_config
from scheduler.engine import core as engine_module
from scheduler.informers import FactoryInformerAccess
from scheduler.kube.client import KubeClient
from scheduler.kube.resources import KNOWN_RESOURCES, VIRTUAL_MACHINES
from tests.support.builders import make_config_map, make_node, make_pod, make_vm
from tests.support.cluster import Cluster, NodePool
from tests.support.kubeapi import condition, read_json, read_pod
from tests.support.neonvm import GROUP, VERSION, enforcer_config, install_neonvm_crds
from tests.support.ops import kubeconfig_token, ops_get
from tests.support.scheduler import running_scheduler, scheduler_config, unique_scheduler_name
from tests.support.wait import eventually

GI = 2**30
CONFIG_NAMESPACE = "kube-system"


class Env:
    def __init__(self, kube: client.ApiClient, namespace: str, name: str) -> None:
        self.core = client.CoreV1Api(kube)
        self.custom = client.CustomObjectsApi(kube)
        self.events = client.EventsV1Api(kube)
        self.namespace = namespace
        self.name = name
        self.config_map = f"enforcer-{secrets.token_hex(3)}"

    def scheduler_config(self, extra_args: str = "") -> str:
        """The profile with the AutoscaleEnforcer; ``extra_args``: more of its
        args, as YAML lines indented for the args mapping."""
        profile = f"""  plugins:
    multiPoint:
      enabled:
      - name: {NAME}
  pluginConfig:
  - name: {NAME}
    args:
      configMapName: {self.config_map}
      agentPort: 0
{extra_args}"""
        return scheduler_config(self.name, profile)

    async def put_config(self, text: str) -> None:
        body = make_config_map(self.config_map, CONFIG_NAMESPACE, {CONFIG_MAP_KEY: text})
        del body["metadata"]["uid"]
        try:
            await self.core.create_namespaced_config_map(CONFIG_NAMESPACE, body)
        except client.ApiException as error:
            if error.status != 409:
                raise
            await self.core.replace_namespaced_config_map(self.config_map, CONFIG_NAMESPACE, body)

    async def create_vm(
        self,
        vm: str,
        *,
        cpus: tuple[Any, Any, Any],
        slots: tuple[int, int, int],
        autoscaling: bool = True,
    ) -> None:
        """A VM (with an agent: labelled autoscaling-enabled, unless told not)."""
        builder = make_vm(vm, self.namespace).cpus(*cpus).memory_slots(*slots)
        if autoscaling:
            builder = builder.label("autoscaling.neon.tech/enabled", "true")
        body = builder.pod_name(f"{vm}-pod").obj()
        body["spec"]["schedulerName"] = self.name
        await self.custom.create_namespaced_custom_object(
            GROUP, VERSION, self.namespace, "virtualmachines", body
        )

    async def create_vm_pod(self, vm: str, node: str = "") -> None:
        builder = (
            make_pod(f"{vm}-pod", self.namespace)
            .scheduler(self.name)
            .label("vm.neon.tech/name", vm)
        )
        if node:
            builder = builder.node(node)
        await self.core.create_namespaced_pod(self.namespace, builder.obj())

    async def is_rejected(self, pod: str) -> bool:
        """Whether the pod's PodScheduled condition says it could not be placed."""
        cond = condition(await read_pod(self.core, self.namespace, pod), "PodScheduled")
        return bool(cond and cond["status"] == "False")

    async def node_of(self, pod: str) -> str:
        return str((await read_pod(self.core, self.namespace, pod))["spec"].get("nodeName", ""))


@contextlib.asynccontextmanager
async def enforcer(
    control_plane: Cluster, env: Env, extra_args: str = ""
) -> AsyncIterator[tuple[SchedulerApp, aiohttp.ClientSession, str]]:
    async with running_scheduler(
        control_plane.kubeconfig, env.name, config_text=env.scheduler_config(extra_args)
    ) as app:
        port = app.listeners.port(AGENT_LISTENER)
        async with aiohttp.ClientSession() as session:
            yield app, session, f"http://127.0.0.1:{port}/"


@pytest.fixture
async def env(kube: client.ApiClient, namespace: str) -> AsyncIterator[Env]:
    await install_neonvm_crds(kube)
    each = Env(kube, namespace, unique_scheduler_name())
    await each.put_config(enforcer_config(each.name))
    yield each
    with contextlib.suppress(client.ApiException):
        await each.core.delete_namespaced_config_map(each.config_map, CONFIG_NAMESPACE)


async def test_vm_pods_are_placed_by_current_size_and_never_onto_a_full_node(
    control_plane: Cluster, env: Env, nodes: NodePool
) -> None:
    for index in range(2):
        await nodes.create(make_node(f"vm{index}").capacity(cpu="4", memory="4Gi", pods="20").obj())
    async with enforcer(control_plane, env):
        # maximum 4/4 each: by maximum only two could ever run; by use, three fit
        for vm in ("a", "b", "c"):
            await env.create_vm(vm, cpus=(1, 4, 2), slots=(1, 4, 2))
            await env.create_vm_pod(vm)
        placed = await eventually(
            lambda: _all_placed(env, ("a-pod", "b-pod", "c-pod")), what="three VM pods placed"
        )
        assert set(placed.values()) <= set(nodes.names)
        # a VM of use 3/3 cannot fit anywhere now (2 + 2 on one node, 2 + 1 room on the other)
        await env.create_vm("big", cpus=(1, 4, 3), slots=(1, 4, 3))
        await env.create_vm_pod("big")

        async def rejected() -> dict[str, Any] | None:
            raw = await read_pod(env.core, env.namespace, "big-pod")
            cond = condition(raw, "PodScheduled")
            return cond if cond and cond["status"] == "False" else None

        cond = await eventually(rejected, what="big VM pod rejected")
        assert "Not enough resources for pod" in cond["message"]
        assert await env.node_of("big-pod") == ""
        # freeing the lone VM's node makes room
        lone = next(pod for pod, node in placed.items() if list(placed.values()).count(node) == 1)
        await env.core.delete_namespaced_pod(lone, env.namespace, grace_period_seconds=0)
        await eventually(lambda: env.node_of("big-pod"), what="big VM pod placed after room freed")


async def _all_placed(env: Env, pods: tuple[str, ...]) -> dict[str, str] | None:
    placed = {pod: await env.node_of(pod) for pod in pods}
    return placed if all(placed.values()) else None


async def post(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> tuple[int, Any]:
    async with session.post(url, data=orjson.dumps(body)) as response:
        text = await response.read()
        if response.headers["Content-Type"].startswith("application/json"):
            return response.status, orjson.loads(text)
        return response.status, text.decode()


async def test_a_simulated_agent_of_every_protocol_version_gets_grants_consistent_with_capacity(
    control_plane: Cluster, env: Env, nodes: NodePool
) -> None:
    node = await nodes.create(make_node("agent").capacity(cpu="4", memory="4Gi", pods="20").obj())
    filler = make_pod("filler", env.namespace).node(node).requests(cpu="1", memory="1Gi")
    await env.core.create_namespaced_pod(env.namespace, filler.obj())  # another scheduler's pod
    async with enforcer(control_plane, env) as (app, session, url):
        await env.create_vm("x", cpus=(1, 4, 1), slots=(1, 4, 1))
        await env.create_vm_pod("x")
        assert await eventually(lambda: env.node_of("x-pod"), what="VM pod placed") == node
        pod = {"namespace": env.namespace, "name": "x-pod"}
        metrics = {"loadAvg1M": 0.5, "loadAvg5M": 0.4}

        # v1.1, whole units: 1 -> 2 fits (filler 1 + VM 2 of 4)
        assert await post(
            session,
            url,
            {"protoVersion": 2, "pod": pod, "resources": {"vCPUs": 2, "mem": 2}, "metrics": None},
        ) == (
            200,
            {"permit": {"vCPUs": 2, "mem": 2}, "resourceUnit": {"vCPUs": 1, "mem": 1}},
        )
        # v2.0, millicpu: to 3 fits exactly
        status, body = await post(
            session,
            url,
            {
                "protoVersion": 3,
                "pod": pod,
                "resources": {"vCPUs": "3", "mem": 3},
                "metrics": metrics,
            },
        )
        assert (status, body["permit"]) == (200, {"vCPUs": 3, "mem": 3})
        # v2.1: to 4 is denied, the node is full (the permit stays at the reservation)
        status, body = await post(
            session,
            url,
            {
                "protoVersion": 4,
                "pod": pod,
                "resources": {"vCPUs": 4, "mem": 4},
                "lastPermit": {"vCPUs": 3, "mem": 3},
                "metrics": metrics,
            },
        )
        assert (status, body["permit"]) == (200, {"vCPUs": 3, "mem": 3})
        # v4.0, bytes: a decrease is always accepted
        unit = {"vCPUs": "500m", "mem": "1Gi"}
        status, body = await post(
            session,
            url,
            {
                "protoVersion": 6,
                "pod": pod,
                "resources": {"vCPUs": 2, "mem": "2Gi"},
                "computeUnit": unit,
                "metrics": metrics,
            },
        )
        assert (status, body) == (200, {"permit": {"vCPUs": 2, "mem": "2Gi"}})
        # v5.0: to 3.5 CPU / 4Gi with 1 CPU / 1Gi left: partial, in whole units
        status, body = await post(
            session,
            url,
            {
                "protoVersion": 7,
                "pod": pod,
                "resources": {"vCPUs": "3500m", "mem": "4Gi"},
                "computeUnit": unit,
                "metrics": {"loadAvg1M": 0.2},
            },
        )
        assert (status, body) == (200, {"permit": {"vCPUs": 3, "mem": "3Gi"}})

        # refusals, as documented
        assert await post(session, url, {"protoVersion": 8, "pod": pod}) == (
            400,
            "Protocol version mismatch: Need v1.0 to v5.0 but got <unknown = v5.0 + 1>",
        )
        assert await post(
            session,
            url,
            {
                "protoVersion": 2,
                "pod": {"namespace": env.namespace, "name": "filler"},
                "resources": {"vCPUs": 1, "mem": 1},
                "metrics": None,
            },
        ) == (404, "pod not found")
        async with session.get(url) as response:
            assert (response.status, await response.text()) == (400, "must be POST")

        status, text = await ops_get(
            f"https://127.0.0.1:{app.server.bound_port}",
            f"/debug/plugins/{STATE_DUMP_PATH}",
            kubeconfig_token(control_plane.kubeconfig),
        )
        assert status == 200, text
        state = orjson.loads(text)
        assert state["nodes"][node]["reserved"] == {"cpu": 4000, "mem": 4 * GI}
        assert state["nodes"][node]["pressure"] == {"cpu": 500, "mem": GI}


async def test_a_bad_config_update_is_refused_with_an_event_and_the_last_good_one_stays(
    control_plane: Cluster, env: Env, nodes: NodePool
) -> None:
    node = await nodes.create(make_node("cfg").capacity(cpu="4", memory="4Gi", pods="20").obj())
    async with enforcer(control_plane, env):
        await env.put_config(enforcer_config(env.name, watermark=7))

        async def warned() -> list[dict[str, Any]] | None:
            listed = await read_json(
                await env.events.list_namespaced_event(CONFIG_NAMESPACE, _preload_content=False)
            )
            found = [
                e
                for e in listed["items"]
                if e["regarding"]["name"] == env.config_map and e["reason"] == "InvalidConfig"
            ]
            return found or None

        (event, *_) = await eventually(warned, what="Warning event on the ConfigMap")
        assert event["type"] == "Warning"
        assert "at nodeDefaults.cpu.watermark" in event["note"]
        # the last good config still schedules VM pods
        await env.create_vm("y", cpus=(1, 4, 1), slots=(1, 4, 1))
        await env.create_vm_pod("y")
        assert await eventually(lambda: env.node_of("y-pod"), what="VM pod placed") == node


async def test_a_restart_loses_no_reservation(
    control_plane: Cluster, env: Env, nodes: NodePool
) -> None:
    node = await nodes.create(make_node("rs").capacity(cpu="4", memory="4Gi", pods="20").obj())
    await env.create_vm("z", cpus=(1, 3, 1), slots=(1, 3, 1))
    async with enforcer(control_plane, env) as (_, session, url):
        await env.create_vm_pod("z")
        assert await eventually(lambda: env.node_of("z-pod"), what="VM pod placed") == node
        pod = {"namespace": env.namespace, "name": "z-pod"}
        status, body = await post(
            session,
            url,
            {"protoVersion": 2, "pod": pod, "resources": {"vCPUs": 3, "mem": 3}, "metrics": None},
        )
        assert (status, body["permit"]) == (200, {"vCPUs": 3, "mem": 3})
    async with enforcer(control_plane, env) as (_, session, url):
        # after the restart the VM is held at its maximum: a 2/2 VM cannot fit beside it
        await env.create_vm("w", cpus=(1, 2, 2), slots=(1, 2, 2))
        await env.create_vm_pod("w")

        await eventually(
            lambda: env.is_rejected("w-pod"), what="second VM pod rejected after the restart"
        )
        # the agent reports it uses 1/1: its buffer goes, and the other VM fits
        status, body = await post(
            session,
            url,
            {
                "protoVersion": 4,
                "pod": pod,
                "resources": {"vCPUs": 1, "mem": 1},
                "lastPermit": {"vCPUs": 3, "mem": 3},
                "metrics": None,
            },
        )
        assert (status, body["permit"]) == (200, {"vCPUs": 1, "mem": 1})
        assert (
            await eventually(lambda: env.node_of("w-pod"), timeout=60, what="second VM placed")
            == node
        )


async def test_the_agent_process_dying_is_restarted_with_its_grant_kept_and_the_daemon_goes_on(
    control_plane: Cluster, env: Env, nodes: NodePool
) -> None:
    node = await nodes.create(make_node("ad").capacity(cpu="4", memory="4Gi", pods="20").obj())
    await env.create_vm("y", cpus=(1, 3, 1), slots=(1, 3, 1))
    config = parse_config(env.scheduler_config())
    kube = await KubeClient.connect(
        kubeconfig=str(control_plane.kubeconfig), qps=50, burst=100, user_agent="pyscheduler-test"
    )
    app = SchedulerApp(config, kube, AppOptions(bind_address="127.0.0.1", port=0))
    task = asyncio.create_task(app.run(), name="scheduler-app")
    try:

        async def ready() -> bool:
            return app.ready

        await eventually(ready, timeout=30, what="scheduler ready")
        await env.create_vm_pod("y")
        assert await eventually(lambda: env.node_of("y-pod"), what="VM pod placed") == node
        port = app.listeners.port(AGENT_LISTENER)
        pod = {"namespace": env.namespace, "name": "y-pod"}
        grow = {"protoVersion": 2, "pod": pod, "resources": {"vCPUs": 3, "mem": 3}}
        grow["metrics"] = None
        async with aiohttp.ClientSession() as session:
            status, body = await post(session, f"http://127.0.0.1:{port}/", grow)
            assert (status, body["permit"]) == (200, {"vCPUs": 3, "mem": 3})
            (agents,) = app.plugin_services.process_listeners
            pid = agents.pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)  # the grant is held by the agent process only

            async def restarted() -> bool:
                return agents.restarts >= 1 and agents.pid != pid and app.ready

            await eventually(restarted, timeout=60, what="agent process restarted")
            assert not task.done()  # the daemon went on

            # Rebuilt: the VM is held at its maximum (3/3) until its agent
            # reports, so the grant the agent holds is still accounted for...
            async def reserved_on_node() -> object:
                status, text = await ops_get(
                    f"https://127.0.0.1:{app.server.bound_port}",
                    f"/debug/plugins/{STATE_DUMP_PATH}",
                    kubeconfig_token(control_plane.kubeconfig),
                )
                dump = orjson.loads(text) if status == 200 else None
                return dump and dump["nodes"].get(node, {}).get("reserved")

            reserved = await eventually(reserved_on_node, timeout=60, what="state rebuilt")
            assert reserved == {"cpu": 3000, "mem": 3 * GI}
            # ... and a 2/2 VM does not fit beside it.
            await env.create_vm("x", cpus=(1, 2, 2), slots=(1, 2, 2))
            await env.create_vm_pod("x")
            await eventually(
                lambda: env.is_rejected("x-pod"), what="second VM pod rejected after the restart"
            )
            # The same agent is answered again on the same port.
            status, body = await post(session, f"http://127.0.0.1:{port}/", grow)
            assert (status, body["permit"]) == (200, {"vCPUs": 3, "mem": 3})
    finally:
        app.stop()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(task, timeout=60)


async def test_a_node_over_its_watermark_gets_a_migration_that_is_cleaned_up_when_it_finishes(
    control_plane: Cluster, env: Env, nodes: NodePool
) -> None:
    await env.put_config(enforcer_config(env.name, watermark=0.5, doMigration=True))
    node = await nodes.create(make_node("mig").capacity(cpu="4", memory="4Gi", pods="20").obj())
    body = make_vm("m", env.namespace).cpus(1, 4, 3).memory_slots(1, 4, 3).pod_name("m-pod")
    body = body.label("autoscaling.neon.tech/auto-migration-enabled", "true")
    body = body.label("autoscaling.neon.tech/enabled", "true")
    vm = body.obj()
    vm["spec"]["schedulerName"] = env.name
    await env.custom.create_namespaced_custom_object(
        GROUP, VERSION, env.namespace, "virtualmachines", vm
    )
    async with enforcer(control_plane, env) as (_, session, url):
        await env.create_vm_pod("m")
        assert await eventually(lambda: env.node_of("m-pod"), what="VM pod placed") == node
        pod = {"namespace": env.namespace, "name": "m-pod"}
        request = {"protoVersion": 3, "pod": pod, "resources": {"vCPUs": 3, "mem": 3}}
        request["metrics"] = {"loadAvg1M": 0.3, "loadAvg5M": 0.2}
        status, body_out = await post(session, url, request)
        assert (status, "migrate" in body_out) == (200, False)  # enters the migration queue
        status, body_out = await post(session, url, request)
        assert (status, "migrate" in body_out) == (200, False)  # asked for, not yet created

        async def migration() -> dict[str, Any] | None:
            try:
                return dict(
                    await env.custom.get_namespaced_custom_object(
                        GROUP,
                        VERSION,
                        env.namespace,
                        "virtualmachinemigrations",
                        "schedplugin-m-pod",
                    )
                )
            except client.ApiException as error:
                if error.status == 404:
                    return None
                raise

        created = await eventually(migration, what="VirtualMachineMigration created")
        assert created["spec"]["vmName"] == "m"
        assert created["metadata"]["labels"] == {
            "autoscaling.neon.tech/created-by-scheduler": "true"
        }

        async def told() -> bool:
            status, answer = await post(session, url, request)
            return status == 200 and answer.get("migrate") == {}

        await eventually(told, what="agent told to migrate")
        # NeonVM finishes the migration: the plugin deletes what it created
        await env.custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            env.namespace,
            "virtualmachinemigrations",
            "schedplugin-m-pod",
            [{"op": "add", "path": "/status", "value": {"phase": "Succeeded"}}],
        )

        async def gone() -> bool:
            return await migration() is None

        await eventually(gone, what="finished migration deleted")


def owner(kind: str, raw: dict[str, Any], *, controller: bool) -> dict[str, Any]:
    metadata = raw["metadata"]
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": kind,
        "name": metadata["name"],
        "uid": metadata["uid"],
        "controller": controller,
    }


async def test_after_a_failed_live_migration_the_source_scales_again(
    control_plane: Cluster, env: Env, nodes: NodePool
) -> None:
    """Migration state per pod (issue 25 #2): NeonVM's target pod, controlled
    by the migration, never takes the source's state; once the migration
    failed, the source's agent is answered again (before: 400 on every
    resize, its migrating state stuck on the source)."""
    await env.put_config(enforcer_config(env.name, watermark=0.5, doMigration=True))
    source_node = await nodes.create(
        make_node("lm-a").capacity(cpu="4", memory="4Gi", pods="20").obj()
    )
    body = make_vm("lm", env.namespace).cpus(1, 4, 3).memory_slots(1, 4, 3).pod_name("lm-pod")
    body = body.label("autoscaling.neon.tech/auto-migration-enabled", "true")
    body = body.label("autoscaling.neon.tech/enabled", "true")
    raw_vm = body.obj()
    raw_vm["spec"]["schedulerName"] = env.name
    vm = await env.custom.create_namespaced_custom_object(
        GROUP, VERSION, env.namespace, "virtualmachines", raw_vm
    )
    async with enforcer(control_plane, env) as (app, session, url):
        await env.create_vm_pod("lm")
        placed = await eventually(lambda: env.node_of("lm-pod"), what="VM pod placed")
        assert placed == source_node
        target_node = await nodes.create(
            make_node("lm-b").capacity(cpu="4", memory="4Gi", pods="20").obj()
        )
        pod = {"namespace": env.namespace, "name": "lm-pod"}
        request = {"protoVersion": 3, "pod": pod, "resources": {"vCPUs": 3, "mem": 3}}
        request["metrics"] = {"loadAvg1M": 0.3, "loadAvg5M": 0.2}
        assert (await post(session, url, request))[0] == 200

        async def told() -> bool:
            status, answer = await post(session, url, request)
            return status == 200 and answer.get("migrate") == {}

        await eventually(told, what="agent told to migrate")
        migration = await env.custom.get_namespaced_custom_object(
            GROUP, VERSION, env.namespace, "virtualmachinemigrations", "schedplugin-lm-pod"
        )
        # NeonVM: the source stays controlled by its VM and is owned by the
        # migration too; the target pod is controlled by the migration.
        source = await read_pod(env.core, env.namespace, "lm-pod")
        refs = [
            owner("VirtualMachine", vm, controller=True),
            owner("VirtualMachineMigration", migration, controller=False),
        ]
        await env.core.patch_namespaced_pod(
            "lm-pod", env.namespace, {"metadata": {"ownerReferences": refs}}
        )
        target = (
            make_pod("lm-pod-target", env.namespace)
            .scheduler(env.name)
            .label("vm.neon.tech/name", "lm")
            .node(target_node)
            .obj()
        )
        target["metadata"]["ownerReferences"] = [
            owner("VirtualMachineMigration", migration, controller=True)
        ]
        await env.core.create_namespaced_pod(env.namespace, target)
        token = kubeconfig_token(control_plane.kubeconfig)
        ops = f"https://127.0.0.1:{app.server.bound_port}"

        async def pod_state(name: str) -> dict[str, Any] | None:
            status, text = await ops_get(ops, f"/debug/plugins/{STATE_DUMP_PATH}", token)
            if status != 200:
                return None
            for node in orjson.loads(text)["nodes"].values():
                if f"{env.namespace}/{name}" in node["pods"]:
                    return dict(node["pods"][f"{env.namespace}/{name}"])
            return None

        seen = await eventually(lambda: pod_state("lm-pod-target"), what="target pod seen")
        assert (seen["migrationTarget"], seen["migrating"]) == (True, False)
        source_state = await pod_state("lm-pod")
        assert source_state is not None
        assert source_state["migrating"] is True
        await env.custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            env.namespace,
            "virtualmachinemigrations",
            "schedplugin-lm-pod",
            [
                {
                    "op": "add",
                    "path": "/status",
                    "value": {"phase": "Failed", "sourcePodName": source["metadata"]["name"]},
                }
            ],
        )
        grow = {**request, "resources": {"vCPUs": 4, "mem": 4}}

        async def scales_again() -> bool:
            status, _ = await post(session, url, grow)
            return status == 200

        await eventually(scales_again, what="the source's agent answered after the failure")
        after = await pod_state("lm-pod")
        assert after is not None
        assert after["migrating"] is False


async def test_only_the_leader_answers_agents_and_a_follower_takes_over(
    control_plane: Cluster, env: Env, nodes: NodePool
) -> None:
    await nodes.create(make_node("le").capacity(cpu="4", memory="4Gi", pods="20").obj())
    lease = f"enforcer-{secrets.token_hex(3)}"
    election = f"""leaderElection:
  leaderElect: true
  resourceNamespace: {env.namespace}
  resourceName: {lease}
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 500ms
"""
    text = env.scheduler_config().replace("leaderElection:\n  leaderElect: false\n", election)
    assert "leaderElect: true" in text
    probe = {"protoVersion": 2, "pod": {"namespace": env.namespace, "name": "nobody"}}
    probe |= {"resources": {"vCPUs": 1, "mem": 1}, "metrics": None}
    async with contextlib.AsyncExitStack() as stack, aiohttp.ClientSession() as session:
        first = await stack.enter_async_context(
            running_scheduler(control_plane.kubeconfig, env.name, config_text=text)
        )
        assert first.elector is not None
        await eventually(lambda: _leading(first), what="first scheduler leads")
        second = await stack.enter_async_context(
            running_scheduler(control_plane.kubeconfig, env.name, config_text=text)
        )

        def url(app: SchedulerApp) -> str:
            return f"http://127.0.0.1:{app.listeners.port(AGENT_LISTENER)}/"

        async def answers(app: SchedulerApp, expected: tuple[int, str]) -> tuple[int, str]:
            # The agent process learns readiness and leadership from the
            # daemon's gate, pushed every 20 ms: wait for the push.
            async def answer() -> tuple[int, str] | None:
                got = await post(session, url(app), probe)
                return got if got == expected else None

            return await eventually(answer, what=f"agent answer {expected}")

        await answers(first, (404, "pod not found"))
        await answers(second, (503, "not the leader: ask the leading scheduler"))
        first.stop()  # releases the lease
        await eventually(lambda: _leading(second), what="second scheduler takes over")
        await answers(second, (404, "pod not found"))


async def _leading(app: SchedulerApp) -> bool:
    return app.elector is not None and app.elector.is_leader


async def test_missing_neonvm_crds_fail_start_up_naming_the_resource(
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Other tests of the session install the CRDs, so the plugin is pointed at a
    # version of the group that no CRD serves: the API server answers the same
    # 404 as for an uninstalled CRD.
    missing = dataclasses.replace(VIRTUAL_MACHINES, version="v1missing")
    resources = {**KNOWN_RESOURCES, "virtualmachines": missing}
    monkeypatch.setattr(
        engine_module,
        "FactoryInformerAccess",
        lambda factory: FactoryInformerAccess(factory, resources),
    )
    env = Env(kube, namespace, unique_scheduler_name())
    await env.put_config(enforcer_config(env.name))
    args = parse_args(
        [
            f"--kubeconfig={control_plane.kubeconfig}",
            "--bind-address=127.0.0.1",
            "--secure-port=0",
            "--bind-grace-seconds=5",
        ]
    )
    config = apply_flags(parse_config(env.scheduler_config()), args)
    try:
        code = await asyncio.wait_for(cli._run(config, args), timeout=60)
    finally:
        with contextlib.suppress(client.ApiException):
            await env.core.delete_namespaced_config_map(env.config_map, CONFIG_NAMESPACE)
    assert code == cli.EXIT_RESOURCE_NOT_SERVED
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert any(
        "does not serve virtualmachines.vm.neon.tech (vm.neon.tech/v1missing" in message
        for message in errors
    ), errors
