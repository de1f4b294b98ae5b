"""The chart as helm sees it: lint, render with default and non-default values, refuse bad values."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.apiserver import REPO_ROOT
from install.kit import CHART, find, kinds, run, template

import hami_core

DEFAULT_KINDS = sorted(
    [
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "PodDisruptionBudget",
        "Role",
        "Role",
        "Role",
        "RoleBinding",
        "RoleBinding",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
)

EVERYTHING_ON = [
    "--set", "reporter.enabled=true",
    "--set", "scheduler.serviceMonitor.enabled=true",
    "--set", "scheduler.prometheusRule.enabled=true",
    "--set", "scheduler.networkPolicy.enabled=true",
    "--set-json", 'scheduler.networkPolicy.from=[{"podSelector":{}}]',
]  # fmt: skip


def container(obj: dict[str, Any]) -> dict[str, Any]:
    (only,) = obj["spec"]["template"]["spec"]["containers"]
    return dict(only)


def test_lint_is_clean_with_default_and_with_every_option_on(helm: Path) -> None:
    for extra in ([], EVERYTHING_ON, [*EVERYTHING_ON, "--set", "scheduler.readOnly=true"]):
        done = run([helm, "lint", "--strict", CHART, *extra])
        assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


def test_defaults_install_the_scheduler_only(helm: Path) -> None:
    objects = template(helm, namespace="gpu-system")
    assert kinds(objects) == DEFAULT_KINDS
    for obj in objects:
        if obj["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert "namespace" in obj["metadata"], f"{obj['kind']} {obj['metadata']['name']} has no namespace"
    deployment = find(objects, "Deployment", "hami-core-scheduler")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    assert deployment["metadata"]["namespace"] == "gpu-system"
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == "hami-core-scheduler"
    term = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == spec["selector"]["matchLabels"]
    assert pod["securityContext"]["runAsNonRoot"] is True

    main = container(deployment)
    assert main["image"] == f"hami-core:{hami_core.__version__}"
    assert main["args"][:2] == ["scheduler", "run"]
    args = main["args"][2:]
    # Not HAMi's Lease or port; the Lease in the release namespace (downward API).
    assert "--lease-name=hami-core-scheduler" in args
    assert "--lease-namespace=$(POD_NAMESPACE)" in args
    assert "--http-listen=:9396" in args
    assert "--check-hami-lease=kube-system/hami-scheduler" in args
    env = {
        e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] if "valueFrom" in e else e["value"]
        for e in main["env"]
    }
    # MALLOC_ARENA_MAX is the daemon's own business (scheduler/allocator.py) and the image's.
    assert env == {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}
    assert main["ports"] == [{"name": "http", "containerPort": 9396, "protocol": "TCP"}]
    assert main["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "http"}
    # The follower must stay Ready (rollouts, the PodDisruptionBudget): readiness is not leadership.
    assert main["readinessProbe"]["httpGet"] == {"path": "/livez", "port": "http"}
    assert main["resources"]["requests"] and main["resources"]["limits"]["memory"]

    pdb = find(objects, "PodDisruptionBudget")
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": spec["selector"]["matchLabels"]}}
    service = find(objects, "Service")
    assert service["spec"]["selector"] == spec["selector"]["matchLabels"]
    port = {"name": "http", "port": 9396, "targetPort": "http", "protocol": "TCP"}
    assert service["spec"]["ports"] == [port]

    roles = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects if o["kind"] == "Role"}
    assert set(roles) == {
        ("gpu-system", "hami-core-scheduler-leases"),
        ("default", "hami-core-scheduler-events"),
        ("kube-system", "hami-core-scheduler-check-hami"),
    }
    assert roles["kube-system", "hami-core-scheduler-check-hami"]["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["hami-scheduler"],
            "verbs": ["get"],
        }
    ]
    for binding in (o for o in objects if o["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "hami-core-scheduler", "namespace": "gpu-system"}
        ]
        assert binding["roleRef"]["name"] == binding["metadata"]["name"]


def test_non_default_values_reach_the_objects(helm: Path, tmp_path: Path) -> None:
    values = {
        "image": {"repository": "registry.example.com/hami-core", "tag": "1.2.3"},
        "vendors": ["nvidia", "iluvatar"],
        "countResources": {"nvidia": "nvidia.com/gpu-shared"},
        "log": {"format": "text", "level": "debug"},
        "commonLabels": {"team": "gpu"},
        "scheduler": {
            "replicas": 3,
            "leaderElection": {"leaseName": "registrar", "leaseDuration": 30, "renewDeadline": "20"},
            "nodeSelectorLabels": {"gpu": "yes", "accelerator": "on"},
            "qps": 50,
            "checkHamiLease": "off",
            "port": 9500,
            "readinessPath": "/readyz",
            "podAntiAffinity": "hard",
            "podDisruptionBudget": {"enabled": False},
            "serviceMonitor": {"enabled": True, "interval": "15s", "labels": {"release": "prom"}},
            "prometheusRule": {"enabled": True},
        },
        "reporter": {
            "enabled": True,
            "interval": 10,
            "nodeSelector": {"hami.io/reporter": "on"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "extraEnv": [{"name": "HAMI_FAKE_DEVICES", "value": "/etc/hami/devices.json"}],
            "admissionPolicy": {
                "driverAnnotations": {
                    "iluvatar": [
                        {
                            "register": "hami.io/node-iluvatar-register",
                            "handshake": "hami.io/node-handshake-iluvatar",
                        }
                    ]
                },
                "maxValueBytes": 65536,
            },
        },
    }
    file = tmp_path / "values.yaml"
    file.write_text(yaml.safe_dump(values))
    objects = template(helm, "--values", str(file), release="gpu", namespace="accel")

    deployment = find(objects, "Deployment", "gpu-hami-core-scheduler")
    assert deployment["metadata"]["labels"]["team"] == "gpu"
    assert deployment["spec"]["replicas"] == 3
    pod = deployment["spec"]["template"]["spec"]
    hard = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert hard[0]["topologyKey"] == "kubernetes.io/hostname"
    main = container(deployment)
    assert main["image"] == "registry.example.com/hami-core:1.2.3"
    assert main["args"] == [
        "scheduler", "run",
        "--vendors=nvidia,iluvatar", "--count-resource=nvidia=nvidia.com/gpu-shared",
        "--log-format=text", "--log-level=debug",
        "--lease-namespace=$(POD_NAMESPACE)", "--lease-name=registrar",
        "--lease-duration=30", "--renew-deadline=20", "--qps=50",
        "--node-selector=accelerator=on,gpu=yes",
        "--check-hami-lease=off", "--http-listen=:9500",
    ]  # fmt: skip
    assert main["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert not [o for o in objects if o["kind"] == "PodDisruptionBudget"]
    assert not [o for o in objects if o["metadata"]["name"].endswith("check-hami")]

    monitor = find(objects, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["spec"]["endpoints"] == [{"port": "http", "path": "/metrics", "interval": "15s"}]
    rules = find(objects, "PrometheusRule")["spec"]["groups"][0]["rules"]
    assert {r["alert"] for r in rules} >= {
        "HamiCoreSchedulerNotScraped",
        "HamiCoreSchedulerDown",
        "HamiCoreSchedulerReplicaDown",
        "HamiCoreSchedulerNoLeader",
        "HamiCoreSchedulerTwoLeaders",
        "HamiCoreSchedulerLeaderNotReady",
    }
    assert all('job="gpu-hami-core-scheduler", namespace="accel"' in r["expr"] for r in rules)

    daemonset = find(objects, "DaemonSet", "gpu-hami-core-reporter")
    reporter_pod = daemonset["spec"]["template"]["spec"]
    assert reporter_pod["serviceAccountName"] == "gpu-hami-core-reporter"
    assert reporter_pod["nodeSelector"] == {"hami.io/reporter": "on"}
    assert reporter_pod["tolerations"] == values["reporter"]["tolerations"]  # type: ignore[index]
    reporter = container(daemonset)
    assert reporter["args"] == [
        "reporter", "run",
        "--vendors=nvidia,iluvatar", "--count-resource=nvidia=nvidia.com/gpu-shared",
        "--log-format=text", "--log-level=debug",
        "--node-name=$(NODE_NAME)", "--interval=10", "--http-listen=:9397",
    ]  # fmt: skip
    node_name = {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert reporter["env"][0] == {"name": "NODE_NAME", "valueFrom": node_name}
    assert reporter["env"][1] == {"name": "HAMI_FAKE_DEVICES", "value": "/etc/hami/devices.json"}
    assert reporter["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "http"}
    assert reporter["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    policy = find(objects, "ValidatingAdmissionPolicy", "gpu-hami-core-reporter-own-node")
    assert policy["spec"]["matchConditions"] == [
        {
            "name": "is-the-reporter",
            "expression": "request.userInfo.username == 'system:serviceaccount:accel:gpu-hami-core-reporter'",
        }
    ]
    # Exactly the selected drivers' keys, a driver of another package's from the values.
    assert policy["spec"]["variables"][:3] == [
        {
            "name": "registerKeys",
            "expression": '["hami.io/node-iluvatar-register","hami.io/node-nvidia-register"]',
        },
        {
            "name": "handshakeKeys",
            "expression": '["hami.io/node-handshake","hami.io/node-handshake-iluvatar"]',
        },
        {"name": "maxValueBytes", "expression": "65536"},
    ]
    binding = find(objects, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"] == {"policyName": "gpu-hami-core-reporter-own-node", "validationActions": ["Deny"]}
    reporter_binding = find(objects, "ClusterRoleBinding", "gpu-hami-core-reporter")
    assert reporter_binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "gpu-hami-core-reporter", "namespace": "accel"}
    ]


READ_ONLY_KINDS = sorted(
    ["ClusterRole", "ClusterRoleBinding", "Deployment", "PodDisruptionBudget", "Service", "ServiceAccount"]
)
READ_VERBS = {"get", "list", "watch"}


def test_refuse_beside_hami_is_passed_only_when_on_and_needs_the_check(helm: Path) -> None:
    def args(*values: str) -> list[str]:
        return list(container(find(template(helm, *values), "Deployment", "hami-core-scheduler"))["args"])

    assert "--refuse-beside-hami" not in args()  # off: the command's own default, not restated
    on = args("--set", "scheduler.refuseBesideHami=true")
    assert on[on.index("--check-hami-lease=kube-system/hami-scheduler") + 1] == "--refuse-beside-hami"
    # Read-only writes nothing anyway and checks no Lease: nothing to refuse.
    assert "--refuse-beside-hami" not in args(
        "--set", "scheduler.refuseBesideHami=true", "--set", "scheduler.readOnly=true"
    )
    alert = {
        r["alert"]: r
        for g in find(
            template(
                helm,
                "--set",
                "scheduler.refuseBesideHami=true",
                "--set",
                "scheduler.prometheusRule.enabled=true",
            ),
            "PrometheusRule",
        )["spec"]["groups"]
        for r in g["rules"]
    }["HamiCoreSchedulerBesideHami"]
    assert alert["labels"]["severity"] == "warning"  # one registrar writes: HAMi's
    done = run(
        [helm, "template", "x", CHART, "--namespace", "x",
         "--set", "scheduler.refuseBesideHami=true", "--set", "scheduler.checkHamiLease=off"],
        check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "scheduler.refuseBesideHami: true needs scheduler.checkHamiLease (it is off)" in done.stderr, (
        done.stderr
    )


PROMETHEUS_PEER = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
}


def test_the_network_policy_is_off_by_default_and_when_on_admits_only_the_listed_peers(helm: Path) -> None:
    assert "NetworkPolicy" not in kinds(template(helm))
    peers = [PROMETHEUS_PEER, {"ipBlock": {"cidr": "10.0.0.0/8"}}]
    objects = template(
        helm,
        "--set", "scheduler.networkPolicy.enabled=true",
        "--set-json", f"scheduler.networkPolicy.from={json.dumps(peers)}",
        "--set", "scheduler.port=9500",
        namespace="gpu-system",
    )  # fmt: skip
    policy = find(objects, "NetworkPolicy", "hami-core-scheduler")
    assert policy["metadata"]["namespace"] == "gpu-system"
    pods = find(objects, "Deployment", "hami-core-scheduler")["spec"]["template"]["metadata"]["labels"]
    selector = policy["spec"]["podSelector"]["matchLabels"]
    assert selector and selector.items() <= pods.items()  # the scheduler's pods, and only theirs
    assert policy["spec"]["policyTypes"] == ["Ingress"]  # egress (the API server) left alone
    assert policy["spec"]["ingress"] == [{"ports": [{"port": 9500, "protocol": "TCP"}], "from": peers}]
    # On with no peer listed: no ingress rule at all, so nobody reaches the endpoint through the network.
    closed = find(template(helm, "--set", "scheduler.networkPolicy.enabled=true"), "NetworkPolicy")
    assert closed["spec"]["ingress"] == []
    assert "NetworkPolicy" not in kinds(
        template(helm, "--set", "scheduler.networkPolicy.enabled=true", "--set", "scheduler.replicas=0")
    )


def test_read_only_runs_the_observer_and_grants_no_write(helm: Path) -> None:
    objects = template(helm, "--set", "scheduler.readOnly=true", namespace="gpu-system")
    assert kinds(objects) == READ_ONLY_KINDS
    main = container(find(objects, "Deployment", "hami-core-scheduler"))
    # No Lease options and no look for HAMi's Lease: a read-only replica takes no Lease.
    assert main["args"] == [
        "scheduler", "run", "--log-format=json", "--log-level=info", "--read-only", "--http-listen=:9396",
    ]  # fmt: skip
    # Every read-only replica is ready once its cache is synced: /readyz is the readiness.
    assert main["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "http"}
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    # Nothing the chart renders grants a write: no Lease or Event Role, no HAMi-Lease get, no node patch.
    roles = [o for o in objects if o["kind"] in ("ClusterRole", "Role")]
    assert [(o["kind"], o["metadata"]["name"]) for o in roles] == [("ClusterRole", "hami-core-scheduler")]
    assert roles[0]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}
    ]
    granted = {verb for role in roles for rule in role["rules"] for verb in rule["verbs"]}
    assert granted <= READ_VERBS, granted - READ_VERBS
    (binding,) = [o for o in objects if o["kind"] in ("ClusterRoleBinding", "RoleBinding")]
    assert binding["roleRef"]["name"] == "hami-core-scheduler"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "hami-core-scheduler", "namespace": "gpu-system"}
    ]
    # The rest of a scheduler install stays: two replicas, anti-affinity, the PodDisruptionBudget.
    deployment = find(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    assert "podAntiAffinity" in deployment["spec"]["template"]["spec"]["affinity"]
    assert find(objects, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1


def test_read_only_ignores_the_lease_values_and_keeps_the_others(helm: Path) -> None:
    main = container(
        find(
            template(
                helm, "--set", "scheduler.readOnly=true",
                "--set", "scheduler.leaderElection.leaseName=registrar",
                "--set", "scheduler.leaderElection.leaseDuration=30s",
                "--set", "scheduler.checkHamiLease=hami/hami-scheduler",
                "--set", "scheduler.handshakeWindow=90s", "--set", "scheduler.resync=30s",
                "--set", "scheduler.nodeSelectorLabels.gpu=yes", "--set", "scheduler.readinessPath=/livez",
                "--set-json", 'vendors=["dcu"]',
            ),
            "Deployment",
        )
    )  # fmt: skip
    assert main["args"] == [
        "scheduler", "run", "--vendors=dcu", "--log-format=json", "--log-level=info", "--read-only",
        "--handshake-window=90s", "--resync=30s", "--node-selector=gpu=yes", "--http-listen=:9396",
    ]  # fmt: skip
    assert main["readinessProbe"]["httpGet"]["path"] == "/livez"  # an explicit choice wins


def test_read_only_alerts_on_no_ready_replica_not_on_leadership(helm: Path) -> None:
    objects = template(
        helm, "--set", "scheduler.readOnly=true", "--set", "scheduler.prometheusRule.enabled=true"
    )
    rules = {r["alert"]: r for r in find(objects, "PrometheusRule")["spec"]["groups"][0]["rules"]}
    assert not [name for name in rules if "Leader" in name]
    job = 'job="hami-core-scheduler", namespace="hami-core"'
    assert rules["HamiCoreSchedulerReadOnlyNotReady"]["expr"] == f"sum(hami_scheduler_ready{{{job}}}) < 1"
    assert rules["HamiCoreSchedulerNotScraped"]["expr"] == f"absent(up{{{job}}})"


def test_read_only_with_the_reporter_keeps_the_reporters_access(helm: Path) -> None:
    """Read-only is the scheduler's mode: a reporter turned on still publishes its own Node."""
    objects = template(helm, "--set", "scheduler.readOnly=true", "--set", "reporter.enabled=true")
    assert find(objects, "ClusterRole", "hami-core-reporter")["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}
    ]
    assert find(objects, "ValidatingAdmissionPolicy")
    scheduler = find(objects, "ClusterRole", "hami-core-scheduler")
    assert {v for rule in scheduler["rules"] for v in rule["verbs"]} == READ_VERBS


def test_reporter_probes_and_endpoint_can_be_turned_off(helm: Path) -> None:
    no_probes = container(
        find(template(helm, "--set", "reporter.enabled=true", "--set", "reporter.probes.enabled=false"),
             "DaemonSet")
    )  # fmt: skip
    assert "livenessProbe" not in no_probes and "readinessProbe" not in no_probes
    assert "--http-listen=:9397" in no_probes["args"]
    no_http = container(
        find(template(helm, "--set", "reporter.enabled=true", "--set", "reporter.http.enabled=false"),
             "DaemonSet")
    )  # fmt: skip
    assert "ports" not in no_http and "livenessProbe" not in no_http
    assert not [a for a in no_http["args"] if a.startswith("--http-listen")]
    no_policy = template(
        helm, "--set", "reporter.enabled=true", "--set", "reporter.admissionPolicy.enabled=false"
    )
    assert not [o for o in no_policy if o["kind"].startswith("ValidatingAdmissionPolicy")]


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        (["--set", "scheduler.port=9395"], "scheduler.port: 9395 is HAMi's scheduler metrics port; pick"),
        (
            ["--set", "reporter.enabled=true", "--set", "reporter.http.port=9395"],
            "reporter.http.port: 9395 is HAMi's scheduler metrics port",
        ),
        (
            ["--set", "scheduler.leaderElection.leaseName=hami-scheduler"],
            "scheduler.leaderElection.leaseName: hami-scheduler is HAMi's own scheduler Lease; sharing it",
        ),
        (
            ["--set", "scheduler.checkHamiLease=x/hami-core-scheduler"],
            "scheduler.checkHamiLease: x/hami-core-scheduler is this release's own Lease, not HAMi's",
        ),
        (
            ["--set", "scheduler.serviceAccount.create=false"],
            "scheduler.serviceAccount.name: name the existing ServiceAccount to run as",
        ),
        (
            ["--set", "reporter.enabled=true", "--set", "reporter.serviceAccount.create=false"],
            "reporter.serviceAccount.name: name the existing ServiceAccount",
        ),
        (
            [
                "--set",
                "reporter.enabled=true",
                "--set",
                "reporter.podMonitor.enabled=true",
                "--set",
                "reporter.http.enabled=false",
                "--set",
                "reporter.probes.enabled=false",
            ],
            "reporter.podMonitor.enabled: the PodMonitor scrapes the reporter's /metrics on reporter.http",
        ),
        (
            ["--set", "scheduler.podDisruptionBudget.maxUnavailable=0"],
            "scheduler.podDisruptionBudget.maxUnavailable: 0 lets no scheduler replica be evicted, so every",
        ),
        (
            ["--set", "scheduler.podDisruptionBudget.maxUnavailable=0%"],
            "scheduler.podDisruptionBudget.maxUnavailable: 0% lets no scheduler replica be evicted",
        ),
        (["--set", "scheduler.podDisruptionBudget.minAvailable=1"], "additional properties 'minAvailable'"),
        (["--set", "image.digest=latest"], "/image/digest"),
        (["--set", "scheduler.probes.liveness.periodSeconds=0"], "/scheduler/probes/liveness/periodSeconds"),
        (["--set", "scheduler.leaderElection.leaseName=Not_A_Name"], "/leaderElection/leaseName"),
        (["--set", "scheduler.checkHamiLease=kube-system"], "/scheduler/checkHamiLease"),
        (["--set", "scheduler.readinessPath=/status"], "/scheduler/readinessPath"),
        (["--set", "log.level=loud"], "/log/level"),
        (["--set", "scheduler.replica=2"], "additional properties 'replica' not allowed"),
        (["--set", "reporter.enabled=yes"], "/reporter/enabled"),
        (["--set", "scheduler.readOnly=yes"], "/scheduler/readOnly"),
        (["--set", "scheduler.refuseBesideHami=yes"], "/scheduler/refuseBesideHami"),
        (
            ["--set-json", 'scheduler.networkPolicy.from=[{"namespace":"monitoring"}]'],
            "/scheduler/networkPolicy/from/0",
        ),
        (["--set", "scheduler.leaderElection.leaseDuration=soon"], "/scheduler/leaderElection/leaseDuration"),
    ],
)
def test_bad_values_are_refused_naming_the_value(helm: Path, values: list[str], complaint: str) -> None:
    done = run([helm, "template", "x", CHART, "--namespace", "x", *values], check=False)
    assert done.returncode != 0
    assert complaint in done.stderr, done.stderr


def test_chart_versions_and_links_match_the_package() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["appVersion"] == hami_core.__version__
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert chart["home"] == project["urls"]["Homepage"]
    assert chart["sources"] == [project["urls"]["Source"]]
    assert chart["annotations"]["licenses"] == project["license"]


def test_hamis_device_config_map_is_mounted_and_read(helm: Path) -> None:
    objects = template(
        helm, "--set", "scheduler.deviceConfigMap=hami-scheduler-device", namespace="gpu-system"
    )
    deployment = find(objects, "Deployment", "hami-core-scheduler")
    main = container(deployment)
    assert "--device-config=/etc/hami-device-config/device-config.yaml" in main["args"]
    assert main["volumeMounts"] == [
        {"name": "device-config", "mountPath": "/etc/hami-device-config", "readOnly": True}
    ]
    assert deployment["spec"]["template"]["spec"]["volumes"] == [
        {"name": "device-config", "configMap": {"name": "hami-scheduler-device"}}
    ]
    plain = container(find(template(helm, namespace="gpu-system"), "Deployment", "hami-core-scheduler"))
    assert "volumeMounts" not in plain and not any(a.startswith("--device-config") for a in plain["args"])
