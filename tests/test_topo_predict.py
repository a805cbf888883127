"""``ncclctl topo predict``: NCCL's decisions for a node, through the CLI (expected values: NCCL 2.30.7, see
tests/test_nccl_model_paths.py)."""

from __future__ import annotations

import json

from conftest import HOSTS, run_cli

DGX_RAILS = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]


def predict(*args: str) -> dict:
    r = run_cli("topo", "predict", *args, "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_root_uses_host_settings_and_gdr():
    doc = predict("--root", str(HOSTS / "dgx-h100"), "-N", "2")
    assert doc["settings"]["NCCL_IB_HCA"]["from"] == "/etc/nccl.conf:2"
    assert doc["gpudirect_rdma"]["available"] is True
    assert [n["name"] for n in doc["nets"]] == DGX_RAILS
    assert [g["nets_used"] for g in doc["gpus"]] == [[n] for n in DGX_RAILS]
    g0 = doc["gpus"][0]
    assert g0["paths_to_nets"]["mlx5_0"] == {"type": "PIX", "bw": 48.0, "hops": 4}
    assert g0["paths_to_nets"]["mlx5_3"]["type"] == "PXN"
    assert g0["gdr"]["mlx5_0"]["write"] == "Default"


def test_env_overrides_host_and_gdr_off_stages_through_cpu():
    doc = predict("--root", str(HOSTS / "dgx-h100"), "--env", "NCCL_IB_HCA=", "--gdr", "off")
    # NCCL_IB_HCA empty: every port, storage NICs included (the dual-port storage card fused)
    names = [n["name"] for n in doc["nets"]]
    assert "mlx5_1+mlx5_2" in names and "mlx5_7+mlx5_8" in names
    g0 = doc["gpus"][0]
    assert g0["paths_to_nets"]["mlx5_0"]["type"] == "PHB"
    assert g0["gdr"]["mlx5_0"]["write"] == "Disabled"
    assert "--gdr off" in g0["gdr"]["mlx5_0"]["write_why"] or "peermem" in g0["gdr"]["mlx5_0"]["write_why"]


def test_file_input_and_text_report(tmp_path):
    xml = tmp_path / "topo.xml"
    r = run_cli("topo", "generate", "--root", str(HOSTS / "pcie-server"), "-o", str(xml))
    assert r.returncode == 0, r.stderr
    r = run_cli("topo", "predict", str(xml), "-N", "2")
    assert r.returncode == 0, r.stderr
    assert "dev 2  mlx5_0+mlx5_1" in r.stdout
    assert "NCCL fuses mlx5_0, mlx5_1 into one virtual NIC" in r.stdout
    doc = predict(str(xml), "--env", "NCCL_NET_MERGE_LEVEL=LOC")
    assert [(n["dev"], n["name"]) for n in doc["nets"]] == [(0, "mlx5_0"), (1, "mlx5_1")]


def test_bad_inputs_are_clear_errors(tmp_path):
    r = run_cli("topo", "predict", "--root", str(HOSTS / "dgx-h100"), "--env", "IB_HCA=mlx5_0")
    assert r.returncode == 2 and "only NCCL_* variables" in r.stderr
    r = run_cli("topo", "predict", "--root", str(HOSTS / "dgx-h100"), "--env", "NCCL_IB_HCA")
    assert r.returncode == 2 and "KEY=VALUE" in r.stderr
    graph = tmp_path / "g.xml"
    graph.write_text('<graphs version="1"><graph id="0"/></graphs>\n')
    r = run_cli("topo", "predict", str(graph))
    assert r.returncode == 3 and "g.xml" in r.stderr and "not a topology file" in r.stderr
    r = run_cli("topo", "predict", str(graph), "--root", str(HOSTS / "dgx-h100"))
    assert r.returncode == 2
    nogpu = tmp_path / "cpu.xml"
    nogpu.write_text('<system version="1"><cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" '
                     'modelid="85"/></system>\n')
    r = run_cli("topo", "predict", str(nogpu))
    assert r.returncode == 3 and "no GPU" in r.stderr
    assert "Traceback" not in r.stderr


# Channels, connect and tuning against NCCL 2.30.7's own results (tests/data/nccl_expected, dgx-h100 N=2 GDR on,
# NCCL_IB_HCA = the rails, as the fixture's /etc/nccl.conf sets it).
def test_channels_rings_alignment_and_protocols():
    doc = predict("--root", str(HOSTS / "dgx-h100"), "-N", "2")
    ring = doc["graphs"]["ring"]
    assert (ring["nchannels"], ring["bw_intra"], ring["bw_inter"], ring["type_intra"], ring["type_inter"],
            ring["crossnic"]) == (8, 48, 48, "NVL", "PIX", 2)
    ch0 = ring["channels"][0]
    assert ch0["gpus"] == [0, 7, 6, 5, 4, 3, 2, 1]
    assert (ch0["net_in"]["name"], ch0["net_out"]["name"]) == ("mlx5_0", "mlx5_3")
    assert doc["graphs"]["channels"] == 16
    assert doc["graphs"]["rings"][0] == [0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8]
    assert all(r["aligned"] for r in doc["graphs"]["rail_aligned"])
    assert doc["graphs"]["best"] == {"algorithm": "ring", "protocol": "Simple", "gbps": 204.8}
    assert doc["graphs"]["allreduce"]["ring"]["LL128"]["enabled"] is True


def test_cross_nic_0_and_a_graph_file(tmp_path):
    doc = predict("--root", str(HOSTS / "dgx-h100"), "-N", "2", "--env", "NCCL_CROSS_NIC=0")
    ring = doc["graphs"]["ring"]
    # NCCL 2.30.7: 8 x 45/45, PXN, the same NIC in and out of each channel
    assert (ring["nchannels"], ring["bw_inter"], ring["type_inter"], ring["crossnic"]) == (8, 45, "PXN", 0)
    assert all(c["net_in"]["name"] == c["net_out"]["name"] for c in ring["channels"])
    # A graph file is loaded as NCCL loads it: a rail-pinned crossnic 0 file of 8 channels at 40/48 NVL/PHB
    graph = tmp_path / "g.xml"
    chans = "".join(f'<channel><net dev="{c}"/>' + "".join(f'<gpu dev="{(c + i) % 8}"/>' for i in range(8))
                    + f'<net dev="{c}"/></channel>' for c in range(8))
    graph.write_text('<graphs version="1"><graph id="0" pattern="4" crossnic="0" nchannels="8" speedintra="40" '
                     'speedinter="48" latencyinter="0" typeintra="NVL" typeinter="PHB" samechannels="0">'
                     + chans + "</graph></graphs>\n")
    doc = predict("--root", str(HOSTS / "dgx-h100"), "-N", "2", "--graph", str(graph))
    ring = doc["graphs"]["ring"]
    assert doc["graphs"]["source"] == "NCCL_GRAPH_FILE"
    assert (ring["nchannels"], ring["bw_intra"], ring["type_inter"]) == (8, 40, "PHB")
    # typeinter PHB turns LL128 off on sm90 (tuning.cc)
    assert doc["graphs"]["allreduce"]["ring"]["LL128"]["enabled"] is False


def test_probe_without_roce_qos_predicts_the_same():
    """`topo predict --root` probes without the RoCE QoS/ECN/DCBX/LLDP facts (NCCL's model reads none of them):
    on every GPU fixture, RoCE ones included, the prediction is the one made from the full probe, and the probe
    really left those facts out."""
    from ncclctl.nccl.predict import inputs_for_node, predict_xml, render_text
    from ncclctl.nccl.version import DEFAULT
    from ncclctl.probe import probe

    compared = roce = 0
    for host in sorted(HOSTS.iterdir()):
        if not (host / "sys").is_dir():
            continue
        full, lean = probe(str(host)), probe(str(host), roce_qos=False)
        if not full.gpus:
            continue
        assert all(nd.qos is None and nd.lldp is None and nd.ecn is None and nd.dcbx is None for nd in lean.netdevs)
        roce += any(nd.qos is not None for nd in full.netdevs)
        for nodes in (1, 2):
            staged = [inputs_for_node(node, nodes=nodes, env={}, version=DEFAULT, gdr="auto", source=str(host),
                                      rail_ids=None) for node in (full, lean)]
            if staged[0] == staged[1]:
                # predict_xml reads only these (the XML NCCL would read, the settings, the ports down): the same
                # inputs give the same prediction, so NCCL's search need not run twice to say so
                continue
            out = []
            for data, inputs, down in staged:
                pred = predict_xml(data, inputs=inputs, down=down, path=None)
                out.append((json.dumps(pred.to_json(), sort_keys=True), render_text(pred)))
            assert out[0] == out[1], host.name
        compared += 1
    assert compared >= 8 and roce >= 2
