"""probe --compare-smi: a captured nvidia-smi topo -m against the probed model."""

from __future__ import annotations

import json

import pytest

from conftest import HOSTS, host_names, run_cli

GPU_HOSTS = [h for h in host_names() if h != "cpu-only"]


@pytest.mark.parametrize("host", GPU_HOSTS)
def test_our_matrix_is_valid_nvidia_smi_input_and_round_trips(host, tmp_path):
    matrix = run_cli("probe", "--root", str(HOSTS / host), "--format", "matrix")
    f = tmp_path / "topo-m.txt"
    f.write_text(matrix.stdout)
    result = run_cli("probe", "--root", str(HOSTS / host), "--compare-smi", str(f), "--format", "json")
    assert result.returncode == 0, result.stdout
    assert json.loads(result.stdout)["same"] is True


def test_differences_are_reported(tmp_path):
    good = run_cli("probe", "--root", str(HOSTS / "dgx-h100"), "--format", "matrix").stdout
    f = tmp_path / "topo-m.txt"
    f.write_text(good)
    result = run_cli("probe", "--root", str(HOSTS / "dgx-h100-nvlink-missing"), "--compare-smi", str(f), "--format", "json")
    assert result.returncode == 1
    diffs = json.loads(result.stdout)["differences"]
    assert {"row": "GPU0", "column": "GPU5", "smi": "NV18", "model": "NV16"} in diffs
    assert all("GPU5" in (d["row"], d["column"]) for d in diffs)


def test_garbled_capture_is_an_input_error(tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text("\tGPU0\tGPU1\nGPU0\t X\tSYSSYS\n")
    result = run_cli("probe", "--root", str(HOSTS / "dgx-h100"), "--compare-smi", str(f))
    assert result.returncode == 3 and str(f) in result.stderr and "Traceback" not in result.stderr
