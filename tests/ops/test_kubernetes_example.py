"""examples/kubernetes: node-problem-detector's custom plugin ConfigMap and its DaemonSet.

The plugin config is checked against a schema of node-problem-detector's own config types
(pkg/custompluginmonitor/types: CustomPluginConfig, pluginGlobalConfig, CustomRule; unknown keys refused), plus
what its Validate() checks (plugin "custom", rule timeouts within the global one, a default condition for every
permanent rule), and the rule's command is run as NPD would run it: the real ncclctl on a broken and a clean
fixture, exit status 0/1/2 and a message within max_output_length.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml

from conftest import HOSTS, REPO

K8S = REPO / "examples" / "kubernetes"

_DURATION = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"  # Go's time.ParseDuration
PLUGIN_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["plugin", "source", "conditions", "rules"],
    "properties": {
        "plugin": {"const": "custom"},
        "source": {"type": "string", "minLength": 1},
        "metricsReporting": {"type": "boolean"},
        "pluginConfig": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "invoke_interval": {"type": "string", "pattern": _DURATION},
                "timeout": {"type": "string", "pattern": _DURATION},
                "max_output_length": {"type": "integer", "minimum": 1},
                "concurrency": {"type": "integer", "minimum": 1},
                "enable_message_change_based_condition_update": {"type": "boolean"},
                "skip_initial_status": {"type": "boolean"},
            },
        },
        "conditions": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["type", "reason", "message"],
            "properties": {"type": {"type": "string"}, "reason": {"type": "string"}, "message": {"type": "string"}}}},
        "rules": {"type": "array", "minItems": 1, "items": {
            "type": "object", "additionalProperties": False, "required": ["type", "reason", "path"],
            "properties": {
                "type": {"enum": ["temporary", "permanent"]},
                "condition": {"type": "string"},
                "reason": {"type": "string", "pattern": "^[A-Z][A-Za-z0-9]*$"},
                "path": {"type": "string", "pattern": "^/"},
                "args": {"type": "array", "items": {"type": "string"}},
                "timeout": {"type": "string", "pattern": _DURATION},
                "invoke_interval": {"type": "string", "pattern": _DURATION},
            }}},
    },
}


def _seconds(d: str) -> float:
    unit = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    return sum(float(n) * unit[u] for n, _, u in re.findall(r"([0-9]+(\.[0-9]+)?)(ns|us|µs|ms|s|m|h)", d))


def _docs():
    config = list(yaml.safe_load_all((K8S / "ncclctl-npd-config.yaml").read_text()))
    ds = list(yaml.safe_load_all((K8S / "ncclctl-npd-daemonset.yaml").read_text()))
    assert len(config) == 1 and len(ds) == 1
    return config[0], ds[0]


def _plugin(cm) -> tuple[str, dict]:
    assert cm["apiVersion"] == "v1" and cm["kind"] == "ConfigMap"
    (key, text), = cm["data"].items()
    return key, json.loads(text)


def test_plugin_config_follows_npd_types_and_validate():
    jsonschema = pytest.importorskip("jsonschema")
    cm, _ = _docs()
    _, plugin = _plugin(cm)
    jsonschema.validate(plugin, PLUGIN_SCHEMA)
    glob = plugin["pluginConfig"]
    assert glob["max_output_length"] <= 80  # ncclctl's line fits: nothing NPD cuts
    conditions = {c["type"] for c in plugin["conditions"]}
    for rule in plugin["rules"]:
        assert _seconds(rule.get("timeout", glob["timeout"])) <= _seconds(glob["timeout"])
        if rule["type"] == "permanent":
            assert rule["condition"] in conditions
        assert rule["args"][:3] == ["lint", "--format", "npd"]
    assert any(r["type"] == "permanent" for r in plugin["rules"])


def test_daemonset_runs_the_plugin_from_the_configmap():
    cm, ds = _docs()
    key, plugin = _plugin(cm)
    assert ds["apiVersion"] == "apps/v1" and ds["kind"] == "DaemonSet"
    spec = ds["spec"]["template"]["spec"]
    assert ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
    assert not spec.get("hostNetwork")
    (container,) = spec["containers"]
    assert container["securityContext"]["privileged"] is True
    flag = next(a for a in container["command"] if a.startswith("--config.custom-plugin-monitor="))
    path = flag.split("=", 1)[1]
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    folder, name = path.rsplit("/", 1)
    config_volume = volumes[mounts[folder]["name"]]
    assert config_volume["configMap"]["name"] == cm["metadata"]["name"]
    assert {"key": key, "path": name} in config_volume["configMap"]["items"]
    assert cm["metadata"]["namespace"] == ds["metadata"]["namespace"]
    sys_mount = mounts["/sys"]
    assert sys_mount["readOnly"] is True and volumes[sys_mount["name"]]["hostPath"]["path"] == "/sys"
    assert all(r["path"] == "/opt/ncclctl/bin/ncclctl" for r in plugin["rules"])


@pytest.mark.parametrize("host, status", [("dgx-h100-port-down", 1), ("dgx-h100", 0), ("no-such-host", 2)])
def test_the_rule_answers_as_npd_reads_it(host, status):
    """The rule's command line, run as NPD runs it (stdout is the message, cut at max_output_length)."""
    cm, _ = _docs()
    _, plugin = _plugin(cm)
    rule = next(r for r in plugin["rules"] if r["type"] == "permanent")
    r = subprocess.run([sys.executable, "-m", "ncclctl", *rule["args"], "--root", str(HOSTS / host)],
                       capture_output=True, text=True, timeout=_seconds(rule["timeout"]), cwd=REPO)
    assert r.returncode == status, r.stderr
    message = r.stdout.strip()
    assert "\n" not in message and 0 < len(message) <= plugin["pluginConfig"]["max_output_length"]
    assert message.startswith({0: "ncclctl: ok", 1: "ncclctl: IB001 mlx5_3", 2: "ncclctl: unknown:"}[status])
