#!/usr/bin/env python3
"""Checks the Kubernetes manifests in deploy/k8s/ without a cluster (docs/deploy.md, "Checks").

usage: check_manifests.py [--dir deploy/k8s] [--require-config-check]

1. yamllint (Debian's yamllint) with deploy/k8s/.yamllint.
2. Every object against a compact schema of the kinds used: known apiVersion/kind pairs, required
   fields, value types, and no field the schema does not know (a typo such as `readinesProbe`
   would otherwise be dropped silently by a lenient apply).
3. What kubectl cannot check offline: the references between objects and the config (selectors
   and pod labels, probe / Service / PodMonitor ports, the HPA's target and metric, the mounted
   ConfigMap key, the drain arithmetic, the backend key variables, the engines' headless Services).
4. The config in the ConfigMap through `$INFERGATE_BIN --check-config` (harness.py's variable;
   default build/proxy/infergate), with every api_key_env variable set to a dummy value.
5. A self-test: each mutation of the manifests in MUTATIONS must be caught by 2-3.

Exit 0: all passed; 1: a check failed; 77 (ctest's SKIP_RETURN_CODE): 1-3 and 5 passed but the
binary refuses any config with two backends, i.e. the multi-backend schema the ConfigMap is
written against has not landed yet (--require-config-check makes that a failure).
"""
from __future__ import annotations

import argparse
import copy
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import yaml  # Debian python3-yaml (scripts/setup.sh)

REPO = Path(__file__).resolve().parents[2]
SKIPPED = 77


# ---------------------------------------------------------------------------------------------
# The schema. A spec is a type (str, int, bool), a dict of field -> spec (a field ending in "!" is
# required; any other field is an error), [spec] a list of them, Map(spec) free keys, OneOf(...)
# the first spec that fits, Enum(...) one of some strings, Pattern(regex, what).
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Map:
    value: object


class OneOf:
    def __init__(self, *specs):
        self.specs = specs


class Enum:
    def __init__(self, *values):
        self.values = values


@dataclass(frozen=True)
class Pattern:
    regex: str
    what: str


NAME = Pattern(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", "a DNS label (RFC 1123)")
# IANA service name, as Kubernetes requires of a port name: 15 characters, at least one letter.
PORT_NAME = Pattern(r"(?=.*[a-z])(?!.*--)[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?", "a port name")
PORT_REF = OneOf(int, PORT_NAME)
QUANTITY = OneOf(int, Pattern(r"[0-9.]+(m|[KMGTPE]i?)?", "a quantity"))
PROTOCOL = Enum("TCP", "UDP", "SCTP")
# No namespace: the manifests take the one given at apply time.
META = {"name!": NAME, "labels": Map(str), "annotations": Map(str)}
SELECTOR = {"matchLabels!": Map(str)}
HTTP_GET = {"path!": str, "port!": PORT_REF, "scheme": Enum("HTTP", "HTTPS")}
PROBE = {"httpGet!": HTTP_GET, "initialDelaySeconds": int, "periodSeconds": int,
         "timeoutSeconds": int, "failureThreshold": int, "successThreshold": int}
CONTAINER = {
    "name!": NAME, "image!": str, "imagePullPolicy": Enum("Always", "IfNotPresent", "Never"),
    "command": [str], "args": [str],
    "env": [{"name!": str, "value": str,
             "valueFrom": {"secretKeyRef": {"name!": NAME, "key!": str, "optional": bool}}}],
    "ports": [{"name": PORT_NAME, "containerPort!": int, "protocol": PROTOCOL}],
    "startupProbe": PROBE, "livenessProbe": PROBE, "readinessProbe": PROBE,
    "lifecycle": {"preStop": {"exec": {"command!": [str]}, "sleep": {"seconds!": int}}},
    "resources": {"requests": Map(QUANTITY), "limits": Map(QUANTITY)},
    "securityContext": {"allowPrivilegeEscalation": bool, "readOnlyRootFilesystem": bool,
                        "runAsNonRoot": bool, "capabilities": {"drop": [str], "add": [str]}},
    "volumeMounts": [{"name!": NAME, "mountPath!": str, "readOnly": bool, "subPath": str}],
}
POD_SPEC = {
    "containers!": [CONTAINER],
    "volumes": [{"name!": NAME,
                 "configMap": {"name!": NAME, "items": [{"key!": str, "path!": str}]}}],
    "securityContext": {"runAsNonRoot": bool, "runAsUser": int, "runAsGroup": int,
                        "seccompProfile": {"type!": Enum("RuntimeDefault", "Localhost")}},
    "terminationGracePeriodSeconds": int, "automountServiceAccountToken": bool,
    "enableServiceLinks": bool,
    "topologySpreadConstraints": [{"maxSkew!": int, "topologyKey!": str, "labelSelector": SELECTOR,
                                   "whenUnsatisfiable!": Enum("DoNotSchedule", "ScheduleAnyway")}],
}
HPA_TARGET = {"type!": Enum("Utilization", "Value", "AverageValue"), "value": QUANTITY,
              "averageValue": QUANTITY, "averageUtilization": int}
HPA_SCALING = {"stabilizationWindowSeconds": int, "selectPolicy": Enum("Max", "Min", "Disabled"),
               "policies": [{"type!": Enum("Pods", "Percent"), "value!": int,
                             "periodSeconds!": int}]}


def kind(api_version: str, name: str, spec: dict | None = None, **top) -> tuple:
    fields = {"apiVersion!": str, "kind!": str, "metadata!": META, **top}
    if spec is not None:
        fields["spec!"] = spec
    return (api_version, name), fields


KINDS = dict([
    kind("v1", "ConfigMap", data=Map(str)),
    kind("v1", "Service", {
        "type": Enum("ClusterIP", "NodePort", "LoadBalancer"), "clusterIP": str,
        "selector!": Map(str), "sessionAffinity": Enum("None", "ClientIP"),
        "ports!": [{"name": PORT_NAME, "port!": int, "targetPort": PORT_REF,
                    "protocol": PROTOCOL}]}),
    kind("apps/v1", "Deployment", {
        "replicas": int, "selector!": SELECTOR,
        "strategy": {"type": Enum("RollingUpdate", "Recreate"),
                     "rollingUpdate": {"maxSurge": OneOf(int, str),
                                       "maxUnavailable": OneOf(int, str)}},
        "template!": {"metadata!": {"labels!": Map(str), "annotations": Map(str)},
                      "spec!": POD_SPEC}}),
    kind("autoscaling/v2", "HorizontalPodAutoscaler", {
        "scaleTargetRef!": {"apiVersion!": str, "kind!": str, "name!": NAME},
        "minReplicas": int, "maxReplicas!": int,
        "metrics": [{"type!": Enum("Pods", "Resource"),
                     "pods": {"metric!": {"name!": str}, "target!": HPA_TARGET},
                     "resource": {"name!": str, "target!": HPA_TARGET}}],
        "behavior": {"scaleUp": HPA_SCALING, "scaleDown": HPA_SCALING}}),
    kind("monitoring.coreos.com/v1", "PodMonitor", {
        "selector!": SELECTOR,
        "podMetricsEndpoints!": [{"port!": PORT_NAME, "path": str, "interval": str,
                                  "scrapeTimeout": str}]}),
])
KUSTOMIZATION = {"apiVersion!": Enum("kustomize.config.k8s.io/v1beta1"),
                 "kind!": Enum("Kustomization"),
                 "resources!": [str], "images": [{"name!": str, "newName": str, "newTag": str}]}


def check_value(value, spec, path: str, errors: list[str]) -> None:
    def fail(msg: str) -> None:
        errors.append(f"{path or '(top)'}: {msg}")

    if isinstance(spec, OneOf):
        for s in spec.specs:
            trial: list[str] = []
            check_value(value, s, path, trial)
            if not trial:
                return
        fail(f"{value!r} is none of the accepted forms")
    elif isinstance(spec, Enum):
        if value not in spec.values:
            fail(f"{value!r} is not one of {', '.join(spec.values)}")
    elif isinstance(spec, Pattern):
        if not isinstance(value, str) or not re.fullmatch(spec.regex, value):
            fail(f"{value!r} is not {spec.what}")
    elif isinstance(spec, Map):
        if not isinstance(value, dict):
            fail(f"expected a mapping, got {type(value).__name__}")
            return
        for k, v in value.items():
            check_value(v, spec.value, f"{path}.{k}", errors)
    elif isinstance(spec, list):
        if not isinstance(value, list):
            fail(f"expected a list, got {type(value).__name__}")
            return
        for i, item in enumerate(value):
            check_value(item, spec[0], f"{path}[{i}]", errors)
    elif isinstance(spec, dict):
        if not isinstance(value, dict):
            fail(f"expected a mapping, got {type(value).__name__}")
            return
        known = {k.rstrip("!"): s for k, s in spec.items()}
        for k in spec:
            if k.endswith("!") and k[:-1] not in value:
                fail(f"missing required field {k[:-1]}")
        for k, v in value.items():
            sub = f"{path}.{k}" if path else str(k)
            if k not in known:
                errors.append(f"{sub}: unknown field (a typo? if it is real, add it to the "
                              "schema in tests/deploy/check_manifests.py)")
            else:
                check_value(v, known[k], sub, errors)
    # bool is an int in Python: a YAML `true` where a number belongs is still an error. Labels
    # and annotations are strings: an unquoted `true` or `30001` is refused by the API server.
    elif (not isinstance(value, spec)) or (spec is int and isinstance(value, bool)):
        fail(f"expected {spec.__name__}, got {type(value).__name__} {value!r}")


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------

@dataclass
class Obj:
    file: str
    body: dict

    @property
    def kind(self) -> str:
        return self.body.get("kind", "?")

    @property
    def name(self) -> str:
        return (self.body.get("metadata") or {}).get("name", "?")

    def __str__(self) -> str:
        return f"{self.file}: {self.kind}/{self.name}"


@dataclass
class Manifests:
    directory: Path
    objects: list[Obj]
    kustomization: dict
    kustomization_text: str

    def of(self, kind: str) -> list[Obj]:
        return [o for o in self.objects if o.kind == kind]


def load(directory: Path, errors: list[str]) -> Manifests:
    objects, kustomization, text = [], {}, ""
    for path in sorted(directory.glob("*.yaml")):
        try:
            docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        except yaml.YAMLError as e:
            errors.append(f"{path.name}: not YAML: {e}")
            continue
        for i, d in enumerate(docs):
            if not isinstance(d, dict):
                errors.append(f"{path.name}: document {i + 1} is not a mapping")
        docs = [d for d in docs if isinstance(d, dict)]
        if path.name == "kustomization.yaml":
            kustomization, text = (docs[0] if docs else {}), path.read_text()
            continue
        objects += [Obj(path.name, d) for d in docs]
    return Manifests(directory, objects, kustomization, text)


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------

def check_schemas(m: Manifests) -> list[str]:
    errors: list[str] = []
    for o in m.objects:
        key = (o.body.get("apiVersion"), o.body.get("kind"))
        spec = KINDS.get(key)
        if spec is None:
            errors.append(f"{o}: unknown apiVersion/kind {key[0]}/{key[1]} (known: "
                          + ", ".join(f"{a}/{k}" for a, k in KINDS) + ")")
            continue
        found: list[str] = []
        check_value(o.body, spec, "", found)
        errors += [f"{o}: {e}" for e in found]
    found = []
    check_value(m.kustomization, KUSTOMIZATION, "", found)
    errors += [f"kustomization.yaml: {e}" for e in found]
    return errors


def selects(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def listen_port(value: str | None) -> int | None:
    """The port of a `listen:` value (HOST:PORT, [v6]:PORT)."""
    return int(value.rsplit(":", 1)[1]) if value and ":" in value else None


def metrics_port(config: dict) -> int | None:
    """Where /metrics is served: the admin listener when there is one (docs/metrics.md)."""
    return listen_port(config.get("admin_listen")) or listen_port(config.get("listen"))


def key_variables(config: dict) -> list[str]:
    """The environment variables the config reads keys from: infergate refuses to start without."""
    names = [b.get("api_key_env") for b in config.get("backends") or [] if isinstance(b, dict)]
    names.append((config.get("auth") or {}).get("keys_env"))
    return [n for n in names if n]


def port_number(ref, ports: list[dict]) -> int | None:
    """A container port by number or name, None when the pod has no such port."""
    for p in ports:
        if ref == p.get("containerPort") or ref == p.get("name"):
            return p.get("containerPort")
    return None


def prestop_seconds(container: dict) -> int | None:
    pre = (container.get("lifecycle") or {}).get("preStop") or {}
    if "sleep" in pre:
        return pre["sleep"].get("seconds")
    found = re.search(r"\bsleep\s+([0-9]+)\b", " ".join((pre.get("exec") or {}).get("command", [])))
    return int(found.group(1)) if found else None


def default_shutdown_grace_ms() -> int:
    """config/config.hpp's default, read from it so that a new default moves the check too."""
    found = re.search(r"shutdown_grace_ms\s*=\s*([0-9]+)", (REPO / "config/config.hpp").read_text())
    return int(found.group(1)) if found else 30000


def catalogued_metrics() -> set[str]:
    """The metric names of docs/metrics.md's catalogue table."""
    return set(re.findall(r"^\| `([a-z_:]+)` \|", (REPO / "docs/metrics.md").read_text(), re.M))


def mounted_config(m: Manifests, deploy: Obj, container: dict, errors: list[str]) -> str | None:
    """The text of the --config file the container reads: its arg, mount, volume, ConfigMap key."""
    args = container.get("args", [])
    if "--config" not in args or args.index("--config") + 1 >= len(args):
        errors.append(f"{deploy}: container {container.get('name')} has no --config FILE argument")
        return None
    config_path = args[args.index("--config") + 1]
    directory, filename = os.path.split(config_path)
    mount = next((v for v in container.get("volumeMounts", [])
                  if v.get("mountPath") == directory), None)
    if mount is None:
        errors.append(f"{deploy}: no volumeMount at {directory} for --config {config_path}")
        return None
    volumes = deploy.body["spec"]["template"]["spec"].get("volumes", [])
    volume = next((v for v in volumes if v.get("name") == mount["name"]), None)
    if volume is None or "configMap" not in volume:
        errors.append(f"{deploy}: volumeMount {mount['name']} names no configMap volume")
        return None
    cm_name = volume["configMap"]["name"]
    cm = next((o for o in m.of("ConfigMap") if o.name == cm_name), None)
    if cm is None:
        errors.append(f"{deploy}: volume {mount['name']} mounts ConfigMap {cm_name}, "
                      f"not in {m.directory.name}/")
        return None
    items = volume["configMap"].get("items")
    key = next((i["key"] for i in items if i.get("path") == filename), None) if items else filename
    data = cm.body.get("data") or {}
    for item in items or []:
        if item.get("key") not in data:
            errors.append(f"{deploy}: volume {mount['name']} mounts key {item.get('key')} "
                          f"that {cm} does not have (keys: {', '.join(data) or 'none'})")
    if key is None or key not in data:
        errors.append(f"{deploy}: --config {config_path} is not a key of {cm} as mounted")
        return None
    return data[key]


def check_deployment(m: Manifests, deploy: Obj, errors: list[str]) -> tuple[dict, str] | None:
    """Checks one Deployment; returns the config it reads, parsed and as text."""
    spec = deploy.body["spec"]
    pod = spec["template"]
    labels = pod["metadata"].get("labels", {})
    if not selects(spec["selector"]["matchLabels"], labels):
        errors.append(f"{deploy}: spec.selector.matchLabels {spec['selector']['matchLabels']} "
                      f"does not match the pod template's labels {labels}")
    if "replicas" in spec and any(h.body["spec"]["scaleTargetRef"].get("name") == deploy.name
                                  for h in m.of("HorizontalPodAutoscaler")):
        errors.append(f"{deploy}: spec.replicas is set but an HPA scales it: every apply "
                      "resets the count")
    containers = pod["spec"]["containers"]
    container = containers[0] if containers else {}  # infergate's; sidecars are not checked
    ports = container.get("ports", [])
    names = [p.get("name") for p in ports if p.get("name")]
    if len(names) != len(set(names)):
        errors.append(f"{deploy}: container port names repeat: {names}")
    volumes = {v["name"] for v in pod["spec"].get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        if mount["name"] not in volumes:
            errors.append(f"{deploy}: volumeMount {mount['name']} names no volume")
    for probe_name in ("startupProbe", "livenessProbe", "readinessProbe"):
        probe = container.get(probe_name)
        if probe is None:
            errors.append(f"{deploy}: no {probe_name}")
            continue
        port = probe["httpGet"]["port"]
        if port_number(port, ports) is None:
            errors.append(f"{deploy}: {probe_name} port {port!r} is not a container port "
                          f"({', '.join(str(p.get('name') or p['containerPort']) for p in ports)})")
        # /health follows the backends: a liveness check on it restarts every replica when the
        # engines are down, which cures nothing.
        if probe_name != "readinessProbe" and probe["httpGet"]["path"].startswith("/health"):
            errors.append(f"{deploy}: {probe_name} on {probe['httpGet']['path']}, which depends on "
                          "the backends; use a route infergate answers itself (GET /)")
    pod_security = pod["spec"].get("securityContext", {})
    security = container.get("securityContext", {})
    if not (security.get("runAsNonRoot") or pod_security.get("runAsNonRoot")):
        errors.append(f"{deploy}: runAsNonRoot is not set")
    if not security.get("readOnlyRootFilesystem"):
        errors.append(f"{deploy}: readOnlyRootFilesystem is not set")
    if security.get("allowPrivilegeEscalation") is not False:
        errors.append(f"{deploy}: allowPrivilegeEscalation is not false")

    text = mounted_config(m, deploy, container, errors)
    if text is None:
        return None
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as e:
        errors.append(f"{deploy}: the mounted config is not YAML: {e}")
        return None
    if not isinstance(config, dict):
        errors.append(f"{deploy}: the mounted config is not a mapping")
        return None

    public, admin = listen_port(config.get("listen")), listen_port(config.get("admin_listen"))
    for what, port in (("listen", public), ("admin_listen", admin)):
        if port is not None and port_number(port, ports) is None:
            errors.append(f"{deploy}: the config's {what} port {port} is not a container port")
    annotations = pod["metadata"].get("annotations", {})
    if annotations.get("prometheus.io/scrape") == "true":
        scraped = annotations.get("prometheus.io/port")
        if scraped != str(metrics_port(config)):
            errors.append(f"{deploy}: prometheus.io/port is {scraped}, but /metrics is served on "
                          f"{metrics_port(config)} ({'admin_listen' if admin else 'listen'})")

    grace_ms = config.get("shutdown_grace_ms", default_shutdown_grace_ms())
    pre_stop = prestop_seconds(container)
    period = pod["spec"].get("terminationGracePeriodSeconds", 30)  # Kubernetes' default
    if pre_stop is None:
        errors.append(f"{deploy}: no preStop sleep: the pod would refuse connections before the "
                      "Service stops sending them")
    elif period * 1000 <= pre_stop * 1000 + grace_ms:
        errors.append(f"{deploy}: terminationGracePeriodSeconds {period} must exceed the preStop "
                      f"sleep ({pre_stop} s) + shutdown_grace_ms ({grace_ms} ms): the kubelet "
                      "would SIGKILL streams that infergate is still draining")

    env = {e["name"] for e in container.get("env", [])}
    for var in key_variables(config):
        if var not in env:
            errors.append(f"{deploy}: the config reads ${var} (api_key_env / keys_env) but the "
                          "container does not set it: infergate refuses to start")
    return config, text


def selected_pods(m: Manifests, selector: dict) -> list[tuple[Obj, list[dict]]]:
    """The Deployments whose pods `selector` matches, with their infergate container's ports."""
    return [(d, d.body["spec"]["template"]["spec"]["containers"][0].get("ports", []))
            for d in m.of("Deployment")
            if selects(selector, d.body["spec"]["template"]["metadata"]["labels"])]


def check_services(m: Manifests, config: dict | None, errors: list[str]) -> None:
    admin = listen_port((config or {}).get("admin_listen"))
    for svc in m.of("Service"):
        spec = svc.body["spec"]
        if spec.get("clusterIP") == "None":
            continue  # an engine's headless Service (backends-example.yaml): its pods are not here
        pods = selected_pods(m, spec["selector"])
        if not pods:
            errors.append(f"{svc}: selector {spec['selector']} matches no pod template here")
        for d, ports in pods:
            for p in spec["ports"]:
                target = p.get("targetPort", p["port"])
                number = port_number(target, ports)
                if number is None:
                    errors.append(f"{svc}: targetPort {target!r} is not a port of {d}")
                elif admin is not None and number == admin:
                    errors.append(f"{svc}: exposes the admin port {admin} (no authentication)")
    # Every backend found through DNS names a headless Service of backends-example.yaml whose
    # port is the URL's, so that the example and the config tell the same story.
    headless = {s.name: s for s in m.of("Service") if s.body["spec"].get("clusterIP") == "None"}
    for b in (config or {}).get("backends") or []:
        if not isinstance(b, dict) or b.get("discovery") != "dns":
            continue
        url = urlsplit(b.get("url", ""))
        name = (url.hostname or "").split(".")[0]
        svc = headless.get(name)
        if svc is None:
            errors.append(f"backend {b.get('name')}: {url.hostname} names no headless Service "
                          f"here (clusterIP: None; have: {', '.join(headless) or 'none'})")
        elif url.port not in [p["port"] for p in svc.body["spec"]["ports"]]:
            errors.append(f"backend {b.get('name')}: port {url.port} is not a port of {svc}")


def check_hpas(m: Manifests, errors: list[str]) -> None:
    metrics = catalogued_metrics()
    for hpa in m.of("HorizontalPodAutoscaler"):
        spec = hpa.body["spec"]
        ref = spec["scaleTargetRef"]
        target = next((d for d in m.of("Deployment") if d.name == ref["name"]), None)
        if (ref["apiVersion"], ref["kind"]) != ("apps/v1", "Deployment") or target is None:
            errors.append(f"{hpa}: scaleTargetRef {ref['apiVersion']}/{ref['kind']}/{ref['name']} "
                          "is not a Deployment here")
        if spec.get("minReplicas", 1) > spec["maxReplicas"]:
            errors.append(f"{hpa}: minReplicas above maxReplicas")
        for i, metric in enumerate(spec.get("metrics", [])):
            field = metric["type"].lower()
            if field not in metric:
                errors.append(f"{hpa}: metrics[{i}] is of type {metric['type']} without `{field}`")
                continue
            if field == "pods" and metric["pods"]["metric"]["name"] not in metrics:
                errors.append(f"{hpa}: metrics[{i}]: {metric['pods']['metric']['name']} is not a "
                              "metric of docs/metrics.md")
            if field == "resource" and target is not None:
                name = metric["resource"]["name"]
                containers = target.body["spec"]["template"]["spec"]["containers"]
                if not all(name in c.get("resources", {}).get("requests", {}) for c in containers):
                    errors.append(f"{hpa}: metrics[{i}] scales on {name} utilization, but {target} "
                                  f"requests no {name} (utilization is a share of the request)")


def check_podmonitors(m: Manifests, config: dict | None, errors: list[str]) -> None:
    scraped = metrics_port(config or {})
    for pm in m.of("PodMonitor"):
        spec = pm.body["spec"]
        pods = selected_pods(m, spec["selector"]["matchLabels"])
        if not pods:
            errors.append(f"{pm}: selector matches no pod template here")
        for _, ports in pods:
            for e in spec["podMetricsEndpoints"]:
                number = port_number(e["port"], [p for p in ports if "name" in p])
                if number is None:
                    errors.append(f"{pm}: port {e['port']!r} is not a named port of the pod")
                elif scraped is not None and number != scraped:
                    errors.append(f"{pm}: port {e['port']} is {number}, but /metrics is on "
                                  f"{scraped}")


def check_kustomization(m: Manifests, errors: list[str]) -> None:
    listed = m.kustomization.get("resources", []) if isinstance(m.kustomization, dict) else []
    for r in listed:
        if not (m.directory / r).is_file():
            errors.append(f"kustomization.yaml: resource {r} does not exist")
    # A manifest left out of the kustomization must be named in its comments with the reason.
    for path in sorted(m.directory.glob("*.yaml")):
        if path.name != "kustomization.yaml" and path.name not in listed \
                and path.name not in m.kustomization_text:
            errors.append(f"kustomization.yaml: {path.name} is neither listed nor said to be "
                          "left out")


def check_all(m: Manifests) -> tuple[list[str], tuple[dict, str] | None]:
    """Schema and references; returns the errors and the infergate config (parsed, text)."""
    errors = check_schemas(m)
    if errors:
        return errors, None  # the references assume the shapes the schema holds
    result = None
    deployments = m.of("Deployment")
    if len(deployments) != 1:
        errors.append(f"expected one Deployment, found {len(deployments)}")
    for d in deployments:
        result = check_deployment(m, d, errors) or result
    config = result[0] if result else None
    check_services(m, config, errors)
    check_hpas(m, errors)
    check_podmonitors(m, config, errors)
    check_kustomization(m, errors)
    return errors, result


# ---------------------------------------------------------------------------------------------
# The self-test: each mutation must be caught, with a message containing the given words.
# ---------------------------------------------------------------------------------------------

def first(m: Manifests, kind: str) -> dict:
    """infergate's object of that kind (backends-example.yaml's Services come first)."""
    return next(o for o in m.of(kind) if o.name.startswith("infergate")).body


def pod_container(m: Manifests) -> dict:
    return first(m, "Deployment")["spec"]["template"]["spec"]["containers"][0]


def set_in(target: dict, key: str, value) -> None:
    target[key] = value


MUTATIONS = [
    ("a probe naming a missing port", "readinessProbe port 'metrics'",
     lambda m: set_in(pod_container(m)["readinessProbe"]["httpGet"], "port", "metrics")),
    ("a misspelt field", "readinesProbe: unknown field",
     lambda m: set_in(pod_container(m), "readinesProbe", pod_container(m).pop("readinessProbe"))),
    ("an unquoted annotation", "expected str, got bool",
     lambda m: set_in(first(m, "Deployment")["spec"]["template"]["metadata"]["annotations"],
                      "prometheus.io/scrape", True)),
    ("an unknown kind", "unknown apiVersion/kind",
     lambda m: set_in(first(m, "HorizontalPodAutoscaler"), "apiVersion", "autoscaling/v3")),
    ("a selector the template does not carry", "does not match the pod template",
     lambda m: set_in(first(m, "Deployment")["spec"]["selector"]["matchLabels"], "tier", "x")),
    ("a Service selecting nothing", "matches no pod template",
     lambda m: set_in(first(m, "Service")["spec"], "selector", {"app": "other"})),
    ("a Service on the admin port", "exposes the admin port",
     lambda m: set_in(first(m, "Service")["spec"]["ports"][0], "targetPort", "admin")),
    ("an HPA on another Deployment", "is not a Deployment here",
     lambda m: set_in(first(m, "HorizontalPodAutoscaler")["spec"]["scaleTargetRef"], "name", "x")),
    ("an HPA on a metric infergate does not export", "not a metric of docs/metrics.md",
     lambda m: set_in(first(m, "HorizontalPodAutoscaler")["spec"]["metrics"][0]["pods"]["metric"],
                      "name", "infergate_inflight")),
    ("a mounted ConfigMap key that is not there", "does not have",
     lambda m: set_in(first(m, "ConfigMap"), "data",
                      {"config.yaml": first(m, "ConfigMap")["data"]["infergate.yaml"]})),
    ("a PodMonitor on the public port", "/metrics is on",
     lambda m: set_in(first(m, "PodMonitor")["spec"]["podMetricsEndpoints"][0], "port", "http")),
    ("a grace period the drain does not fit in", "must exceed the preStop",
     lambda m: set_in(first(m, "Deployment")["spec"]["template"]["spec"],
                      "terminationGracePeriodSeconds", 30)),
    ("liveness on the backends' health", "depends on the backends",
     lambda m: set_in(pod_container(m)["livenessProbe"]["httpGet"], "path", "/health")),
    ("the backend key variable not set", "does not set it",
     lambda m: set_in(pod_container(m), "env", [])),
    ("a DNS backend without its headless Service", "names no headless Service",
     lambda m: m.objects.remove(next(o for o in m.objects if o.name == "qwen-sglang-headless"))),
]


def self_test(m: Manifests) -> list[str]:
    failures = []
    for what, words, mutate in MUTATIONS:
        mutated = copy.deepcopy(m)
        mutate(mutated)
        errors, _ = check_all(mutated)
        if not any(words in e for e in errors):
            failures.append(f"self-test: {what} was not caught (expected an error with "
                            f"{words!r}; got {errors or 'none'})")
    return failures


# ---------------------------------------------------------------------------------------------
# yamllint and the binary
# ---------------------------------------------------------------------------------------------

def run_yamllint(directory: Path) -> list[str]:
    if shutil.which("yamllint") is None:
        return ["yamllint is not installed (Debian package yamllint; scripts/setup.sh installs it)"]
    cmd = ["yamllint", "--strict", "-f", "parsable", "-c", str(directory / ".yamllint"),
           str(directory)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return [] if r.returncode == 0 else [f"yamllint: {line}" for line in
                                         (r.stdout + r.stderr).splitlines() if line.strip()]


def infergate_binary() -> str | None:
    value = os.environ.get("INFERGATE_BIN")
    if value:
        return value
    candidate = REPO / "build" / "proxy" / "infergate"
    return str(candidate) if candidate.is_file() else None


def check_config(binary: str, text: str, config: dict, workdir: Path) -> tuple[int, str]:
    """Runs --check-config on `text` with a dummy for every key variable; (status, transcript)."""
    # Long enough for a client key too (auth.keys_env refuses short keys).
    dummy = "dummy-key-for-check-config-0123456789"
    env = dict(os.environ) | {v: dummy for v in key_variables(config)}
    path = workdir / "infergate.yaml"
    path.write_text(text)
    cmd = [binary, "--check-config", "--config", str(path)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    shown = " ".join([f"{v}={dummy}" for v in key_variables(config)] + cmd)
    output = (r.stdout + r.stderr).rstrip()
    return r.returncode, f"$ {shown}\n{output}\n(exit status {r.returncode})"


# Two backends and nothing else: what a binary with the multi-backend schema accepts and the
# single-backend one refuses ("routing across several backends is not supported yet").
TWO_BACKENDS = "backends:\n  - {name: a, url: 'http://a:1'}\n  - {name: b, url: 'http://b:2'}\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", type=Path, default=REPO / "deploy" / "k8s")
    parser.add_argument("--require-config-check", action="store_true",
                        help="fail, not skip, when the binary refuses two backends")
    args = parser.parse_args()

    errors: list[str] = run_yamllint(args.dir)
    m = load(args.dir, errors)
    found, config = check_all(m)
    errors += found
    if not found:
        errors += self_test(m)
    print(f"{args.dir}: {len(m.objects)} objects; schema and references: "
          f"{'ok' if not found else f'{len(found)} errors'}; self-test: {len(MUTATIONS)} mutations")

    skipped = None
    binary = infergate_binary()
    if config is None:
        pass  # no config to give it: the errors above say why
    elif binary is None:
        errors.append("no infergate binary: set INFERGATE_BIN (ctest does) or build "
                      "build/proxy/infergate")
    else:
        parsed, text = config
        with tempfile.TemporaryDirectory() as tmp:
            status, transcript = check_config(binary, text, parsed, Path(tmp))
            print(f"the ConfigMap's config through the binary:\n{transcript}")
            if status != 0:
                probe_status, probe = check_config(binary, TWO_BACKENDS, {}, Path(tmp))
                if probe_status != 0 and not args.require_config_check:
                    skipped = ("this infergate refuses any config with two backends: the "
                               "multi-backend schema the ConfigMap is written against has not "
                               f"landed yet. A two-backend probe:\n{probe}")
                else:
                    errors.append(f"{binary} --check-config refuses the ConfigMap's config (above)")

    for e in errors:
        print(f"FAIL {e}")
    if errors:
        print(f"{len(errors)} problems")
        return 1
    if skipped:
        print(f"SKIPPED the config check: {skipped}")
        return SKIPPED
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
