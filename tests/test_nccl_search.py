"""NCCL's channel search, multi-node connect and tuning (ncclctl.nccl.search / connect / tuning) against NCCL's own
code.

Expected values are what NCCL 2.30.7 (commit 5067397c2676d5aed50042fc39e5c8ee96eb0027) produced, run on CPU (src/graph
unmodified, stand-ins for CUDA/NVML/the IB plugin, no NIC fusion: NCCL_NET_MERGE_LEVEL=LOC here) over the topology
file ``ncclctl topo generate --root fixtures/hosts/<fixture>`` writes (cloud-vm-flat-h100: ``--profile h100``), N
identical nodes (rank = node * G + local), GPUDirect RDMA available (gdr 1) or not, NCCL_IB_HCA as ``ncclctl rails``
prints it (rails) or unset (allhca). Per graph: (pattern, nChannels, bwIntra, bwInter, typeIntra, typeInter, crossNic);
channels as "ranks|netIn>netOut"; connect: (nNodes, final nChannels), rank 0's rings for channels 0 and 1, tree links
(up, down) of every rank on channel 0; tuning: AllReduce algorithm bandwidth [LL, LL128, Simple] for ring, tree.
"""

from __future__ import annotations

import pytest

from ncclctl.nccl.build import Plugin, build
from ncclctl.nccl.connect import btree, connect, dtree
from ncclctl.nccl.paths import compute_paths, trim_system
from ncclctl.nccl.search import (MAXCHANNELS, PATTERN_BALANCED_TREE, PATTERN_RING, PATTERN_TREE, Graph, NcclFailure,
                                 NotModelled, compute, graphs_to_xml, kv_link_type, load_graph_file, ring_and_tree,
                                 search_init, sub_round, unsearched_graph)
from ncclctl.nccl.system import CPU, GPU, NET, PATH_TYPE_STR, Params, f32
from ncclctl.nccl.tuning import tune
from ncclctl.nccl.version import Version
from ncclctl.probe import probe
from ncclctl.nccl.detect import generate_for
from ncclctl.nccl.xml import parse_nccl_xml

from conftest import HOSTS

HARNESS = {
    'dgx-h100|1|1|rails': dict(
        hca='=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11',
        ring=('RING', 12, 30, 30, 'NVL', 'PIX', 0),
        ring_channels=['0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7'],
        tree=('BALANCED_TREE', 12, 30, 30, 'NVL', 'PIX', 0),
        tree_channels=['0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7'],
        connect=(1, 24),
        ring0=[0, 1, 2, 3, 4, 5, 6, 7],
        ring1=[0, 1, 2, 3, 4, 5, 6, 7],
        tree0=[(-1, [1, -1, -1]), (0, [2, -1, -1]), (1, [3, -1, -1]), (2, [4, -1, -1]), (3, [5, -1, -1]), (4, [6, -1, -1]), (5, [7, -1, -1]), (6, [-1, -1, -1])],
        tuning=([80.57, 189.26, 205.71], [43.58, 128.8, 165.6]),
    ),
    'dgx-h100|2|1|rails': dict(
        hca='=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11',
        ring=('RING', 8, 48, 48, 'NVL', 'PIX', 2),
        ring_channels=['0 7 6 5 4 3 2 1|mlx5_0>mlx5_3', '1 2 3 4 5 6 7 0|mlx5_3>mlx5_0', '2 1 0 7 6 5 4 3|mlx5_4>mlx5_5', '3 4 5 6 7 0 1 2|mlx5_5>mlx5_4', '4 3 2 1 0 7 6 5|mlx5_6>mlx5_9', '5 6 7 0 1 2 3 4|mlx5_9>mlx5_6', '6 5 4 3 2 1 0 7|mlx5_10>mlx5_11', '7 0 1 2 3 4 5 6|mlx5_11>mlx5_10'],
        tree=('TREE', 8, 48, 48, 'NVL', 'PIX', 0),
        tree_channels=['0 1 2 3 4 5 6 7|mlx5_0>mlx5_0', '1 2 3 4 5 6 7 0|mlx5_3>mlx5_3', '2 3 4 5 6 7 0 1|mlx5_4>mlx5_4', '3 4 5 6 7 0 1 2|mlx5_5>mlx5_5', '4 5 6 7 0 1 2 3|mlx5_6>mlx5_6', '5 6 7 0 1 2 3 4|mlx5_9>mlx5_9', '6 7 0 1 2 3 4 5|mlx5_10>mlx5_10', '7 0 1 2 3 4 5 6|mlx5_11>mlx5_11'],
        connect=(2, 16),
        ring0=[0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8],
        ring1=[0, 8, 15, 14, 13, 12, 11, 10, 9, 1, 2, 3, 4, 5, 6, 7],
        tree0=[(-1, [1, 8, -1]), (0, [2, -1, -1]), (1, [3, -1, -1]), (2, [4, -1, -1]), (3, [5, -1, -1]), (4, [6, -1, -1]), (5, [7, -1, -1]), (6, [-1, -1, -1]), (0, [9, -1, -1]), (8, [10, -1, -1]), (9, [11, -1, -1]), (10, [12, -1, -1]), (11, [13, -1, -1]), (12, [14, -1, -1]), (13, [15, -1, -1]), (14, [-1, -1, -1])],
        tuning=([20.8, 156.59, 204.8], [16.58, 124.78, 140.76]),
    ),
    'dgx-h100|2|1|rails|file': dict(
        hca='=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11',
        ring=('RING', 8, 40, 48, 'NVL', 'PHB', 0),
        ring_channels=['0 2 3 4 5 6 7 1|mlx5_0>mlx5_0', '1 3 4 5 6 7 0 2|mlx5_3>mlx5_3', '2 4 5 6 7 0 1 3|mlx5_4>mlx5_4', '3 4 5 6 7 1 2 0|mlx5_5>mlx5_5', '4 6 7 0 1 2 3 5|mlx5_6>mlx5_6', '5 7 0 1 2 3 4 6|mlx5_9>mlx5_9', '6 0 1 2 3 4 5 7|mlx5_10>mlx5_10', '7 0 1 2 3 5 6 4|mlx5_11>mlx5_11'],
        tree=('TREE', 8, 40, 48, 'NVL', 'PHB', 0),
        tree_channels=['0 2 3 4 5 6 7 1|mlx5_0>mlx5_0', '1 3 4 5 6 7 0 2|mlx5_3>mlx5_3', '2 4 5 6 7 0 1 3|mlx5_4>mlx5_4', '3 4 5 6 7 1 2 0|mlx5_5>mlx5_5', '4 6 7 0 1 2 3 5|mlx5_6>mlx5_6', '5 7 0 1 2 3 4 6|mlx5_9>mlx5_9', '6 0 1 2 3 4 5 7|mlx5_10>mlx5_10', '7 0 1 2 3 5 6 4|mlx5_11>mlx5_11'],
        connect=(2, 16),
        ring0=[0, 2, 3, 4, 5, 6, 7, 1, 8, 10, 11, 12, 13, 14, 15, 9],
        ring1=[0, 2, 9, 11, 12, 13, 14, 15, 8, 10, 1, 3, 4, 5, 6, 7],
        tree0=[(-1, [2, 8, -1]), (7, [-1, -1, -1]), (0, [3, -1, -1]), (2, [4, -1, -1]), (3, [5, -1, -1]), (4, [6, -1, -1]), (5, [7, -1, -1]), (6, [1, -1, -1]), (0, [10, -1, -1]), (15, [-1, -1, -1]), (8, [11, -1, -1]), (10, [12, -1, -1]), (11, [13, -1, -1]), (12, [14, -1, -1]), (13, [15, -1, -1]), (14, [9, -1, -1])],
        tuning=([20.8, 0.0, 170.67], [16.58, 0.0, 125.12]),
    ),
    'dgx-h100|4|1|rails': dict(
        hca='=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11',
        ring=('RING', 8, 48, 48, 'NVL', 'PIX', 2),
        ring_channels=['0 7 6 5 4 3 2 1|mlx5_0>mlx5_3', '1 2 3 4 5 6 7 0|mlx5_3>mlx5_0', '2 1 0 7 6 5 4 3|mlx5_4>mlx5_5', '3 4 5 6 7 0 1 2|mlx5_5>mlx5_4', '4 3 2 1 0 7 6 5|mlx5_6>mlx5_9', '5 6 7 0 1 2 3 4|mlx5_9>mlx5_6', '6 5 4 3 2 1 0 7|mlx5_10>mlx5_11', '7 0 1 2 3 4 5 6|mlx5_11>mlx5_10'],
        tree=('TREE', 8, 48, 48, 'NVL', 'PIX', 0),
        tree_channels=['0 1 2 3 4 5 6 7|mlx5_0>mlx5_0', '1 2 3 4 5 6 7 0|mlx5_3>mlx5_3', '2 3 4 5 6 7 0 1|mlx5_4>mlx5_4', '3 4 5 6 7 0 1 2|mlx5_5>mlx5_5', '4 5 6 7 0 1 2 3|mlx5_6>mlx5_6', '5 6 7 0 1 2 3 4|mlx5_9>mlx5_9', '6 7 0 1 2 3 4 5|mlx5_10>mlx5_10', '7 0 1 2 3 4 5 6|mlx5_11>mlx5_11'],
        connect=(4, 16),
        ring0=[0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8, 16, 23, 22, 21, 20, 19, 18, 17, 25, 26, 27, 28, 29, 30, 31, 24],
        ring1=[0, 8, 15, 14, 13, 12, 11, 10, 9, 17, 18, 19, 20, 21, 22, 23, 16, 24, 31, 30, 29, 28, 27, 26, 25, 1, 2, 3, 4, 5, 6, 7],
        tree0=[(-1, [1, 16, -1]), (0, [2, -1, -1]), (1, [3, -1, -1]), (2, [4, -1, -1]), (3, [5, -1, -1]), (4, [6, -1, -1]), (5, [7, -1, -1]), (6, [-1, -1, -1]), (16, [9, -1, -1]), (8, [10, -1, -1]), (9, [11, -1, -1]), (10, [12, -1, -1]), (11, [13, -1, -1]), (12, [14, -1, -1]), (13, [15, -1, -1]), (14, [-1, -1, -1]), (0, [17, 8, 24]), (16, [18, -1, -1]), (17, [19, -1, -1]), (18, [20, -1, -1]), (19, [21, -1, -1]), (20, [22, -1, -1]), (21, [23, -1, -1]), (22, [-1, -1, -1]), (16, [25, -1, -1]), (24, [26, -1, -1]), (25, [27, -1, -1]), (26, [28, -1, -1]), (27, [29, -1, -1]), (28, [30, -1, -1]), (29, [31, -1, -1]), (30, [-1, -1, -1])],
        tuning=([10.53, 151.54, 198.19], [8.67, 98.6, 122.4]),
    ),
    'dgx-h100|2|0|rails': dict(
        hca='=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11',
        ring=('RING', 8, 20, 20, 'NVL', 'PHB', 0),
        ring_channels=['1 0 7 6 5 4 3 2|mlx5_0>mlx5_0', '2 3 4 5 6 7 0 1|mlx5_5>mlx5_5', '5 4 3 2 1 0 7 6|mlx5_6>mlx5_6', '6 7 0 1 2 3 4 5|mlx5_11>mlx5_11', '1 0 7 6 5 4 3 2|mlx5_0>mlx5_0', '2 3 4 5 6 7 0 1|mlx5_5>mlx5_5', '5 4 3 2 1 0 7 6|mlx5_6>mlx5_6', '6 7 0 1 2 3 4 5|mlx5_11>mlx5_11'],
        tree=('TREE', 8, 40, 20, 'NVL', 'PHB', 0),
        tree_channels=['0 1 2 3 4 5 6 7|mlx5_0>mlx5_0', '1 2 3 4 5 6 7 0|mlx5_4>mlx5_4', '2 3 4 5 6 7 0 1|mlx5_3>mlx5_3', '3 4 5 6 7 0 1 2|mlx5_5>mlx5_5', '4 5 6 7 0 1 2 3|mlx5_6>mlx5_6', '5 6 7 0 1 2 3 4|mlx5_10>mlx5_10', '6 7 0 1 2 3 4 5|mlx5_9>mlx5_9', '7 0 1 2 3 4 5 6|mlx5_11>mlx5_11'],
        connect=(2, 16),
        ring0=[0, 7, 6, 5, 4, 3, 2, 9, 8, 15, 14, 13, 12, 11, 10, 1],
        ring1=[0, 1, 10, 11, 12, 13, 14, 15, 8, 9, 2, 3, 4, 5, 6, 7],
        tree0=[(-1, [1, 8, -1]), (0, [2, -1, -1]), (1, [3, -1, -1]), (2, [4, -1, -1]), (3, [5, -1, -1]), (4, [6, -1, -1]), (5, [7, -1, -1]), (6, [-1, -1, -1]), (0, [9, -1, -1]), (8, [10, -1, -1]), (9, [11, -1, -1]), (10, [12, -1, -1]), (11, [13, -1, -1]), (12, [14, -1, -1]), (13, [15, -1, -1]), (14, [-1, -1, -1])],
        tuning=([20.8, 0.0, 85.33], [16.58, 0.0, 125.12]),
    ),
    'dgx-h100|2|1|allhca': dict(
        hca=None,
        ring=('RING', 8, 48, 48, 'NVL', 'PIX', 2),
        ring_channels=['0 7 6 5 4 3 2 1|mlx5_0>mlx5_3', '1 2 3 4 5 6 7 0|mlx5_3>mlx5_0', '2 1 0 7 6 5 4 3|mlx5_4>mlx5_5', '3 4 5 6 7 0 1 2|mlx5_5>mlx5_4', '4 3 2 1 0 7 6 5|mlx5_6>mlx5_9', '5 6 7 0 1 2 3 4|mlx5_9>mlx5_6', '6 5 4 3 2 1 0 7|mlx5_10>mlx5_11', '7 0 1 2 3 4 5 6|mlx5_11>mlx5_10'],
        tree=('TREE', 8, 48, 48, 'NVL', 'PIX', 0),
        tree_channels=['0 1 2 3 4 5 6 7|mlx5_0>mlx5_0', '1 2 3 4 5 6 7 0|mlx5_3>mlx5_3', '2 3 4 5 6 7 0 1|mlx5_4>mlx5_4', '3 4 5 6 7 0 1 2|mlx5_5>mlx5_5', '4 5 6 7 0 1 2 3|mlx5_6>mlx5_6', '5 6 7 0 1 2 3 4|mlx5_9>mlx5_9', '6 7 0 1 2 3 4 5|mlx5_10>mlx5_10', '7 0 1 2 3 4 5 6|mlx5_11>mlx5_11'],
        connect=(2, 16),
        ring0=[0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8],
        ring1=[0, 8, 15, 14, 13, 12, 11, 10, 9, 1, 2, 3, 4, 5, 6, 7],
        tree0=[(-1, [1, 8, -1]), (0, [2, -1, -1]), (1, [3, -1, -1]), (2, [4, -1, -1]), (3, [5, -1, -1]), (4, [6, -1, -1]), (5, [7, -1, -1]), (6, [-1, -1, -1]), (0, [9, -1, -1]), (8, [10, -1, -1]), (9, [11, -1, -1]), (10, [12, -1, -1]), (11, [13, -1, -1]), (12, [14, -1, -1]), (13, [15, -1, -1]), (14, [-1, -1, -1])],
        tuning=([20.8, 156.59, 204.8], [16.58, 124.78, 140.76]),
    ),
    'dgx-a100|1|1|rails': dict(
        hca='=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_6,mlx5_7,mlx5_8,mlx5_9',
        ring=('RING', 12, 20, 20, 'NVL', 'PIX', 0),
        ring_channels=['2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5'],
        tree=('BALANCED_TREE', 12, 20, 20, 'NVL', 'PIX', 0),
        tree_channels=['2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5', '2 3 0 1 6 7 4 5'],
        connect=(1, 24),
        ring0=[0, 1, 6, 7, 4, 5, 2, 3],
        ring1=[0, 1, 6, 7, 4, 5, 2, 3],
        tree0=[(3, [1, -1, -1]), (0, [6, -1, -1]), (-1, [3, -1, -1]), (2, [0, -1, -1]), (7, [5, -1, -1]), (4, [-1, -1, -1]), (1, [7, -1, -1]), (6, [4, -1, -1])],
        tuning=([50.11, 126.17, 137.14], [29.05, 85.87, 110.4]),
    ),
    'hgx-h100-roce|2|1|rails': dict(
        hca='=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7',
        ring=('RING', 8, 48, 48, 'NVL', 'PIX', 2),
        ring_channels=['0 7 6 5 4 3 2 1|mlx5_0>mlx5_1', '1 2 3 4 5 6 7 0|mlx5_1>mlx5_0', '2 1 0 7 6 5 4 3|mlx5_2>mlx5_3', '3 4 5 6 7 0 1 2|mlx5_3>mlx5_2', '4 3 2 1 0 7 6 5|mlx5_4>mlx5_5', '5 6 7 0 1 2 3 4|mlx5_5>mlx5_4', '6 5 4 3 2 1 0 7|mlx5_6>mlx5_7', '7 0 1 2 3 4 5 6|mlx5_7>mlx5_6'],
        tree=('TREE', 8, 48, 48, 'NVL', 'PIX', 0),
        tree_channels=['0 1 2 3 4 5 6 7|mlx5_0>mlx5_0', '1 2 3 4 5 6 7 0|mlx5_1>mlx5_1', '2 3 4 5 6 7 0 1|mlx5_2>mlx5_2', '3 4 5 6 7 0 1 2|mlx5_3>mlx5_3', '4 5 6 7 0 1 2 3|mlx5_4>mlx5_4', '5 6 7 0 1 2 3 4|mlx5_5>mlx5_5', '6 7 0 1 2 3 4 5|mlx5_6>mlx5_6', '7 0 1 2 3 4 5 6|mlx5_7>mlx5_7'],
        connect=(2, 16),
        ring0=[0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8],
        ring1=[0, 8, 15, 14, 13, 12, 11, 10, 9, 1, 2, 3, 4, 5, 6, 7],
        tree0=[(-1, [1, 8, -1]), (0, [2, -1, -1]), (1, [3, -1, -1]), (2, [4, -1, -1]), (3, [5, -1, -1]), (4, [6, -1, -1]), (5, [7, -1, -1]), (6, [-1, -1, -1]), (0, [9, -1, -1]), (8, [10, -1, -1]), (9, [11, -1, -1]), (10, [12, -1, -1]), (11, [13, -1, -1]), (12, [14, -1, -1]), (13, [15, -1, -1]), (14, [-1, -1, -1])],
        tuning=([20.8, 156.59, 204.8], [16.58, 124.78, 140.76]),
    ),
    'cloud-vm-flat|2|1|rails': dict(
        hca='=mlx5_ib0,mlx5_ib1,mlx5_ib2,mlx5_ib3,mlx5_ib4,mlx5_ib5,mlx5_ib6,mlx5_ib7',
        ring=('RING', 8, 48, 48, 'NVL', 'PIX', 2),
        ring_channels=['0 7 6 5 4 3 2 1|mlx5_ib0>mlx5_ib1', '1 2 3 4 5 6 7 0|mlx5_ib1>mlx5_ib0', '2 1 0 7 6 5 4 3|mlx5_ib2>mlx5_ib3', '3 4 5 6 7 0 1 2|mlx5_ib3>mlx5_ib2', '4 3 2 1 0 7 6 5|mlx5_ib4>mlx5_ib5', '5 6 7 0 1 2 3 4|mlx5_ib5>mlx5_ib4', '6 5 4 3 2 1 0 7|mlx5_ib6>mlx5_ib7', '7 0 1 2 3 4 5 6|mlx5_ib7>mlx5_ib6'],
        tree=('TREE', 8, 48, 48, 'NVL', 'PIX', 0),
        tree_channels=['0 1 2 3 4 5 6 7|mlx5_ib0>mlx5_ib0', '1 2 3 4 5 6 7 0|mlx5_ib1>mlx5_ib1', '2 3 4 5 6 7 0 1|mlx5_ib2>mlx5_ib2', '3 4 5 6 7 0 1 2|mlx5_ib3>mlx5_ib3', '4 5 6 7 0 1 2 3|mlx5_ib4>mlx5_ib4', '5 6 7 0 1 2 3 4|mlx5_ib5>mlx5_ib5', '6 7 0 1 2 3 4 5|mlx5_ib6>mlx5_ib6', '7 0 1 2 3 4 5 6|mlx5_ib7>mlx5_ib7'],
        connect=(2, 16),
        ring0=[0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8],
        ring1=[0, 8, 15, 14, 13, 12, 11, 10, 9, 1, 2, 3, 4, 5, 6, 7],
        tree0=[(-1, [1, 8, -1]), (0, [2, -1, -1]), (1, [3, -1, -1]), (2, [4, -1, -1]), (3, [5, -1, -1]), (4, [6, -1, -1]), (5, [7, -1, -1]), (6, [-1, -1, -1]), (0, [9, -1, -1]), (8, [10, -1, -1]), (9, [11, -1, -1]), (10, [12, -1, -1]), (11, [13, -1, -1]), (12, [14, -1, -1]), (13, [15, -1, -1]), (14, [-1, -1, -1])],
        tuning=([12.0, 156.59, 204.8], [9.56, 124.78, 140.76]),
    ),
    'cloud-vm-flat-h100|1|1|rails': dict(
        hca='=mlx5_ib0,mlx5_ib1,mlx5_ib2,mlx5_ib3,mlx5_ib4,mlx5_ib5,mlx5_ib6,mlx5_ib7',
        ring=('RING', 12, 30, 30, 'NVL', 'PIX', 0),
        ring_channels=['0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7'],
        tree=('BALANCED_TREE', 12, 30, 30, 'NVL', 'PIX', 0),
        tree_channels=['0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7'],
        connect=(1, 24),
        ring0=[0, 1, 2, 3, 4, 5, 6, 7],
        ring1=[0, 1, 2, 3, 4, 5, 6, 7],
        tree0=[(-1, [1, -1, -1]), (0, [2, -1, -1]), (1, [3, -1, -1]), (2, [4, -1, -1]), (3, [5, -1, -1]), (4, [6, -1, -1]), (5, [7, -1, -1]), (6, [-1, -1, -1])],
        tuning=([80.57, 189.26, 205.71], [43.58, 128.8, 165.6]),
    ),
    'grace-hopper|1|1|rails': dict(
        hca='=mlx5_0',
        ring=('RING', 32, 60, 60, 'LOC', 'PIX', 0),
        ring_channels=['0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0'],
        tree=('TREE', 32, 60, 60, 'LOC', 'PIX', 0),
        tree_channels=['0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0'],
        connect=(1, 64),
        ring0=[0],
        ring1=[0],
        tree0=[(-1, [-1, -1, -1])],
    ),
    'grace-hopper|2|1|rails': dict(
        hca='=mlx5_0',
        ring=('RING', 2, 24, 24, 'LOC', 'P2C', 0),
        ring_channels=['0|mlx5_0>mlx5_0', '0|mlx5_0>mlx5_0'],
        tree=('TREE', 2, 48, 24, 'LOC', 'P2C', 0),
        tree_channels=['0|mlx5_0>mlx5_0', '0|mlx5_0>mlx5_0'],
        connect=(2, 4),
        ring0=[0, 1],
        ring1=[0, 1],
        tree0=[(-1, [1, -1, -1]), (0, [-1, -1, -1])],
        tuning=([24.0, 44.16, 48.0], [9.26, 31.19, 35.19]),
    ),
    'grace-hopper|2|0|rails': dict(
        hca='=mlx5_0',
        ring=('RING', 2, 24, 24, 'LOC', 'P2C', 0),
        ring_channels=['0|mlx5_0>mlx5_0', '0|mlx5_0>mlx5_0'],
        tree=('TREE', 2, 48, 24, 'LOC', 'P2C', 0),
        tree_channels=['0|mlx5_0>mlx5_0', '0|mlx5_0>mlx5_0'],
        connect=(2, 4),
        ring0=[0, 1],
        ring1=[0, 1],
        tree0=[(-1, [1, -1, -1]), (0, [-1, -1, -1])],
        tuning=([24.0, 44.16, 48.0], [9.26, 31.19, 35.19]),
    ),
    'pcie-server|1|1|rails': dict(
        hca='=mlx5_0,mlx5_1',
        ring=('RING', 2, 12, 12, 'PIX', 'PIX', 0),
        ring_channels=['0 1 2 3', '0 1 2 3'],
        tree=('BALANCED_TREE', 2, 12, 12, 'PIX', 'PIX', 0),
        tree_channels=['0 1 2 3', '0 1 2 3'],
        connect=(1, 4),
        ring0=[0, 1, 2, 3],
        ring1=[0, 1, 2, 3],
        tree0=[(-1, [1, -1, -1]), (0, [2, -1, -1]), (1, [3, -1, -1]), (2, [-1, -1, -1])],
        tuning=([8.0, 0.0, 16.0], [2.91, 0.0, 11.04]),
    ),
    'pcie-server|2|1|rails': dict(
        hca='=mlx5_0,mlx5_1',
        ring=('RING', 2, 12, 12, 'PIX', 'PIX', 0),
        ring_channels=['0 1 2 3|mlx5_0>mlx5_0', '0 1 2 3|mlx5_1>mlx5_1'],
        tree=('BALANCED_TREE', 2, 9, 9, 'PIX', 'PIX', 0),
        tree_channels=['0 1 2 3|mlx5_0>mlx5_0', '2 3 0 1|mlx5_1>mlx5_1'],
        connect=(2, 4),
        ring0=[0, 1, 2, 3, 4, 5, 6, 7],
        ring1=[0, 1, 2, 3, 4, 5, 6, 7],
        tree0=[(-1, [1, 4, -1]), (0, [2, -1, -1]), (1, [3, -1, -1]), (2, [-1, -1, -1]), (0, [5, -1, -1]), (4, [6, -1, -1]), (5, [7, -1, -1]), (6, [-1, -1, -1])],
        tuning=([6.86, 0.0, 13.71], [2.18, 0.0, 8.28]),
    ),
    'pcie-server|4|0|allhca': dict(
        hca=None,
        ring=('RING', 1, 10, 10, 'PIX', 'PHB', 0),
        ring_channels=['0 1 2 3|mlx5_0>mlx5_0'],
        tree=('BALANCED_TREE', 1, 18, 10, 'PIX', 'PHB', 0),
        tree_channels=['0 1 2 3|mlx5_0>mlx5_0'],
        connect=(4, 2),
        ring0=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        ring1=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        tree0=[(-1, [1, 8, -1]), (0, [2, -1, -1]), (1, [3, -1, -1]), (2, [-1, -1, -1]), (9, [5, -1, -1]), (4, [6, -1, -1]), (5, [7, -1, -1]), (6, [-1, -1, -1]), (0, [9, 12, -1]), (8, [10, 4, -1]), (9, [11, -1, -1]), (10, [-1, -1, -1]), (8, [13, -1, -1]), (12, [14, -1, -1]), (13, [15, -1, -1]), (14, [-1, -1, -1])],
        tuning=([2.67, 0.0, 5.33], [1.21, 0.0, 4.6]),
    ),
    'pcie-server-roce-lag|2|1|rails': dict(
        hca='=mlx5_bond_0',
        ring=('RING', 1, 24, 24, 'PIX', 'PIX', 0),
        ring_channels=['0 1 2 3|mlx5_bond_0>mlx5_bond_0'],
        tree=('BALANCED_TREE', 1, 15, 15, 'PIX', 'PIX', 0),
        tree_channels=['0 1 2 3|mlx5_bond_0>mlx5_bond_0'],
        connect=(2, 2),
        ring0=[0, 1, 2, 3, 4, 5, 6, 7],
        ring1=[0, 1, 2, 3, 4, 5, 6, 7],
        tree0=[(-1, [1, 4, -1]), (0, [2, -1, -1]), (1, [3, -1, -1]), (2, [-1, -1, -1]), (0, [5, -1, -1]), (4, [6, -1, -1]), (5, [7, -1, -1]), (6, [-1, -1, -1])],
        tuning=([6.86, 0.0, 13.71], [1.82, 0.0, 6.9]),
    ),
    'pcie-server-roce-lag|4|0|allhca': dict(
        hca=None,
        ring=('RING', 1, 10, 10, 'PIX', 'PHB', 0),
        ring_channels=['0 1 2 3|mlx5_bond_0>mlx5_bond_0'],
        tree=('BALANCED_TREE', 1, 18, 10, 'PIX', 'PHB', 0),
        tree_channels=['0 1 2 3|mlx5_bond_0>mlx5_bond_0'],
        connect=(4, 2),
        ring0=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        ring1=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        tree0=[(-1, [1, 8, -1]), (0, [2, -1, -1]), (1, [3, -1, -1]), (2, [-1, -1, -1]), (9, [5, -1, -1]), (4, [6, -1, -1]), (5, [7, -1, -1]), (6, [-1, -1, -1]), (0, [9, 12, -1]), (8, [10, 4, -1]), (9, [11, -1, -1]), (10, [-1, -1, -1]), (8, [13, -1, -1]), (12, [14, -1, -1]), (13, [15, -1, -1]), (14, [-1, -1, -1])],
        tuning=([2.67, 0.0, 5.33], [1.21, 0.0, 4.6]),
    ),
    'dgx-h100-nvlink-missing|1|1|rails': dict(
        hca='=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11',
        ring=('RING', 8, 40, 40, 'NVL', 'PIX', 0),
        ring_channels=['0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7'],
        tree=('BALANCED_TREE', 8, 40, 40, 'NVL', 'PIX', 0),
        tree_channels=['0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7'],
        connect=(1, 16),
        ring0=[0, 1, 2, 3, 4, 5, 6, 7],
        ring1=[0, 1, 2, 3, 4, 5, 6, 7],
        tree0=[(-1, [1, -1, -1]), (0, [2, -1, -1]), (1, [3, -1, -1]), (2, [4, -1, -1]), (3, [5, -1, -1]), (4, [6, -1, -1]), (5, [7, -1, -1]), (6, [-1, -1, -1])],
        tuning=([80.57, 167.77, 182.86], [38.74, 114.49, 147.2]),
    ),
    'dgx-h100-x8-link|1|1|rails': dict(
        hca='=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11',
        ring=('RING', 12, 30, 30, 'NVL', 'PIX', 0),
        ring_channels=['0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7'],
        tree=('BALANCED_TREE', 12, 30, 30, 'NVL', 'PIX', 0),
        tree_channels=['0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7', '0 1 2 3 4 5 6 7'],
        connect=(1, 24),
        ring0=[0, 1, 2, 3, 4, 5, 6, 7],
        ring1=[0, 1, 2, 3, 4, 5, 6, 7],
        tree0=[(-1, [1, -1, -1]), (0, [2, -1, -1]), (1, [3, -1, -1]), (2, [4, -1, -1]), (3, [5, -1, -1]), (4, [6, -1, -1]), (5, [7, -1, -1]), (6, [-1, -1, -1])],
        tuning=([80.57, 189.26, 205.71], [43.58, 128.8, 165.6]),
    ),
}

# NCCL 2.30.7 runs of dgx-h100, 2 or 3 nodes, GDR on, NCCL_IB_HCA = the rails, with one more setting each:
# (env, nodes, ring, ring NICs, final channels, rank 0's ring on channel 0, tuning ring, tuning tree).
RAILS = '=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11'
PAIRS = ['mlx5_0>mlx5_3', 'mlx5_3>mlx5_0', 'mlx5_4>mlx5_5', 'mlx5_5>mlx5_4', 'mlx5_6>mlx5_9', 'mlx5_9>mlx5_6',
         'mlx5_10>mlx5_11', 'mlx5_11>mlx5_10']
SAME = ['mlx5_0>mlx5_0', 'mlx5_3>mlx5_3', 'mlx5_4>mlx5_4', 'mlx5_5>mlx5_5', 'mlx5_6>mlx5_6', 'mlx5_9>mlx5_9',
        'mlx5_10>mlx5_10', 'mlx5_11>mlx5_11']
SETTINGS = {
    'NCCL_ALGO=allreduce:ring': ({'NCCL_ALGO': 'allreduce:ring'}, 2, ('RING', 8, 48, 48, 'NVL', 'PIX', 2), PAIRS, 16,
                                 [0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8],
                                 [20.8, 156.59, 204.8], [0.0, 0.0, 0.0]),
    'NCCL_CROSS_NIC=0': ({'NCCL_CROSS_NIC': '0'}, 2, ('RING', 8, 45, 45, 'NVL', 'PXN', 0), SAME, 16,
                         [0, 7, 6, 5, 4, 3, 2, 1, 8, 15, 14, 13, 12, 11, 10, 9],
                         [20.8, 156.59, 192.0], [16.58, 124.78, 140.76]),
    'NCCL_CROSS_NIC=1 N=3': ({'NCCL_CROSS_NIC': '1'}, 3, ('RING', 8, 48, 48, 'NVL', 'PIX', 1),
                             ['mlx5_0>mlx5_3', 'mlx5_3>mlx5_4', 'mlx5_4>mlx5_5', 'mlx5_5>mlx5_6', 'mlx5_6>mlx5_9',
                              'mlx5_9>mlx5_10', 'mlx5_10>mlx5_11', 'mlx5_11>mlx5_0'], 16,
                             [0, 7, 6, 5, 4, 3, 2, 1, 8, 15, 14, 13, 12, 11, 10, 9, 16, 23, 22, 21, 20, 19, 18, 17],
                             [10.64, 153.18, 200.35], [8.67, 98.6, 122.4]),
    'N=3': ({}, 3, ('RING', 8, 48, 48, 'NVL', 'PIX', 2), PAIRS, 16,
            [0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8, 16, 23, 22, 21, 20, 19, 18, 17],
            [10.64, 153.18, 200.35], [8.67, 98.6, 122.4]),
    'NCCL_MAX_NCHANNELS=4': ({'NCCL_MAX_NCHANNELS': '4'}, 2, ('RING', 8, 48, 48, 'NVL', 'PIX', 2), PAIRS, 4,
                             [0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8],
                             [20.8, 156.59, 204.8], [16.58, 124.78, 140.76]),
    'NCCL_MIN_NCHANNELS=40': ({'NCCL_MIN_NCHANNELS': '40'}, 2, ('RING', 8, 48, 48, 'NVL', 'PIX', 2), PAIRS, 40,
                              [0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8],
                              [20.8, 156.59, 204.8], [16.58, 124.78, 140.76]),
    'NCCL_PROTO=^LL128': ({'NCCL_PROTO': '^LL128'}, 2, ('RING', 8, 48, 48, 'NVL', 'PIX', 2), PAIRS, 16,
                          [0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8],
                          [20.8, 0.0, 204.8], [16.58, 0.0, 140.76]),
}

_XML: dict[str, bytes] = {}


def topo_xml(fixture: str) -> bytes:
    if fixture not in _XML:
        if fixture == "cloud-vm-flat-h100":
            _XML[fixture] = generate_for(probe(str(HOSTS / "cloud-vm-flat")), profile="h100")[0]
        else:
            _XML[fixture] = generate_for(probe(str(HOSTS / fixture)))[0]
    return _XML[fixture]


def system_for(fixture: str, env: dict, gdr: bool, nodes: int):
    env = {"NCCL_NET_MERGE_LEVEL": "LOC", **env}
    sysm = build(parse_nccl_xml(topo_xml(fixture)).root, Params(env=env), Plugin(gdr=gdr)).system
    compute_paths(sysm)
    trim_system(sysm, nodes * len(sysm.nodes[GPU]))
    compute_paths(sysm)
    search_init(sysm)
    return sysm


def summary(g: Graph) -> tuple:
    name = {1: "BALANCED_TREE", 2: "SPLIT_TREE", 3: "TREE", 4: "RING"}[g.pattern]
    return (name, g.n_channels, g.bw_intra, g.bw_inter, PATH_TYPE_STR[g.type_intra], PATH_TYPE_STR[g.type_inter],
            g.cross_nic)


def channels(sysm, g: Graph) -> list[str]:
    ngpus = len(sysm.nodes[GPU])
    out = []
    for c in range(g.n_channels):
        s = " ".join(map(str, g.intra[c * ngpus:(c + 1) * ngpus]))
        if sysm.inter:
            i, o = (sysm.nodes[NET][sysm.net_index(x)].name for x in g.nets(c))
            s += f"|{i}>{o}"
        out.append(s)
    return out


def predict(fixture: str, nodes: int, gdr: bool, env: dict, graph_file: bytes | None = None):
    sysm = system_for(fixture, env, gdr, nodes)
    ring, tree = ring_and_tree(sysm, graph_file=graph_file)
    ngpus = len(sysm.nodes[GPU])
    sm = sysm.nodes[GPU][0].sm
    params = sysm.params
    con = connect(ring, tree, ngpus, nodes, params, min_comp_cap=sm)
    tun = tune(ring, tree, n_nodes=nodes, n_ranks=nodes * ngpus, min_comp_cap=sm, max_comp_cap=sm,
               cpu_vendor=sysm.nodes[CPU][0].vendor, params=params)
    return sysm, ring, tree, con, tun


def graph_file_from(case: dict) -> bytes:
    """A graph file with the case's ring and tree as ncclctl's `rings graph` wrote them (GPUs by dev, no rank)."""
    rails = case["hca"].lstrip("=").split(",")
    lines = ['<graphs version="1">']
    for gid, (pattern, n, bi, be, ti, te, x), chans in ((0, case["ring"], case["ring_channels"]),
                                                         (1, case["tree"], case["tree_channels"])):
        p = {"RING": 4, "TREE": 3, "BALANCED_TREE": 1}[pattern]
        lines.append(f'  <graph id="{gid}" pattern="{p}" crossnic="{x}" nchannels="{n}" speedintra="{bi}" '
                     f'speedinter="{be}" latencyinter="0" typeintra="{ti}" typeinter="{te}" samechannels="0">')
        for ch in chans:
            ranks, nets = ch.split("|")
            i, o = nets.split(">")
            lines.append("    <channel>")
            lines.append(f'      <net dev="{rails.index(i):#x}"/>')
            lines += [f'      <gpu dev="{int(r):#x}"/>' for r in ranks.split()]
            lines.append(f'      <net dev="{rails.index(o):#x}"/>')
            lines.append("    </channel>")
        lines.append("  </graph>")
    lines.append("</graphs>")
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("case", sorted(HARNESS))
def test_channels_connect_and_tuning_match_nccl(case):
    fixture, nodes, gdr, hca, *file = case.split("|")
    exp = HARNESS[case]
    env = {"NCCL_IB_HCA": exp["hca"]} if exp["hca"] else {}
    gfile = graph_file_from(exp) if file else None
    sysm, ring, tree, con, tun = predict(fixture, int(nodes), gdr == "1", env, gfile)
    assert summary(ring) == exp["ring"]
    assert channels(sysm, ring) == exp["ring_channels"]
    assert summary(tree) == exp["tree"]
    assert channels(sysm, tree) == exp["tree_channels"]
    assert (con.n_nodes, con.n_channels) == exp["connect"]
    assert con.rings[0] == exp["ring0"]
    if "ring1" in exp:
        assert con.rings[1] == exp["ring1"]
    assert [(t.up, t.down) for t in con.trees[0]] == exp["tree0"]
    if "tuning" in exp:
        assert [round(x, 2) for x in tun.bandwidth["ring"]] == exp["tuning"][0]
        assert [round(x, 2) for x in tun.bandwidth["tree"]] == exp["tuning"][1]


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_settings_match_nccl(name):
    env, nodes, ring_exp, nics, nch, ring0, tun_ring, tun_tree = SETTINGS[name]
    sysm, ring, tree, con, tun = predict("dgx-h100", nodes, True, {"NCCL_IB_HCA": RAILS, **env})
    assert summary(ring) == ring_exp
    assert [c.split("|")[1] for c in channels(sysm, ring)] == nics
    assert con.n_channels == nch
    assert con.rings[0] == ring0
    assert [round(x, 2) for x in tun.bandwidth["ring"]] == tun_ring
    assert [round(x, 2) for x in tun.bandwidth["tree"]] == tun_tree


def test_nccl_proto_naming_ll128_forces_it_on_over_phb():
    # NCCL 2.30.7, dgx-h100 N=2 with ncclctl's graph file (typeinter PHB): NCCL_PROTO=LL128 enables LL128 where the
    # default turns it off, and disables LL and Simple.
    exp = HARNESS["dgx-h100|2|1|rails|file"]
    _, _, _, _, tun = predict("dgx-h100", 2, True, {"NCCL_IB_HCA": RAILS, "NCCL_PROTO": "LL128"}, graph_file_from(exp))
    assert [round(x, 2) for x in tun.bandwidth["ring"]] == [0.0, 156.59, 0.0]
    assert [round(x, 2) for x in tun.bandwidth["tree"]] == [0.0, 117.3, 0.0]
    _, _, _, _, tun = predict("dgx-h100", 2, True, {"NCCL_IB_HCA": RAILS}, graph_file_from(exp))
    assert tun.enabled["ring"] == [True, False, True]
    assert "PHB is beyond PXN" in tun.why_off[("ring", "LL128")]


@pytest.mark.parametrize("value, message", [
    ("allreduce:LL;Simple", "All entries except the first must have a prefix"),
    ("LL,LL256", 'Unrecognized element token "LL256"'),
    ("allgather:LL;bogus:LL", 'Unrecognized prefix token "bogus"'),
])
def test_nccl_proto_that_nccl_rejects(value, message):
    # "allreduce:LL;Simple": NCCL 2.30.7 fails ncclTopoTuneModel with this warning (harness run).
    ring, tree = Graph(0, PATTERN_RING), Graph(1, PATTERN_TREE)
    with pytest.raises(NcclFailure, match=message):
        tune(ring, tree, n_nodes=2, n_ranks=16, min_comp_cap=90, max_comp_cap=90, cpu_vendor=1,
             params=Params(env={"NCCL_PROTO": value}))


def test_odd_node_alternation_came_with_2_20_3():
    # NCCL 2.20.3 (NVIDIA/nccl b6475625) added "Alternate rings to avoid crossing rails": before it, node 1 walks
    # channel 0 in the same order as node 0, so the ring leaves node 0 on GPU 1 (mlx5_3) and enters node 1 on
    # GPU 8 (rail mlx5_0): a rail crossing.
    sysm = system_for("dgx-h100", {"NCCL_IB_HCA": RAILS}, True, 2)
    ring, tree = ring_and_tree(sysm)
    new = connect(ring, tree, 8, 2, Params(), min_comp_cap=90)
    old = connect(ring, tree, 8, 2, Params(version=Version(2, 19, 4)), min_comp_cap=90)
    assert new.alternated and not old.alternated
    assert new.rings[0] == [0, 7, 6, 5, 4, 3, 2, 1, 9, 10, 11, 12, 13, 14, 15, 8]
    assert old.rings[0] == [0, 7, 6, 5, 4, 3, 2, 1, 8, 15, 14, 13, 12, 11, 10, 9]


def test_double_binary_tree():
    # trees.cc ncclGetBtree/ncclGetDtree, as NCCL 2.30.7 linked the node heads (harness, dgx-h100 N=4 and N=3):
    # 4 nodes: tree 0 is 0 -> 2 -> {1, 3}; tree 1 its mirror 3 -> 1 -> {2, 0}.
    assert [btree(4, r)[:3] for r in range(4)] == [(-1, -1, 2), (2, -1, -1), (0, 1, 3), (2, -1, -1)]
    assert [dtree(4, r)[1][:3] for r in range(4)] == [(1, -1, -1), (3, 2, 0), (1, -1, -1), (-1, -1, 1)]
    # 3 nodes: tree 1 is tree 0 shifted by one: 1 -> 0 -> 2
    assert [dtree(3, r)[0][0] for r in range(3)] == [-1, 2, 0]
    assert [dtree(3, r)[1][0] for r in range(3)] == [1, -1, 0]


def test_sub_round_is_single_precision():
    # SUB_ROUND: roundf((a - b) * 1000) / 1000 in float; 370.8 (18 NVLinks at 20.6) minus 60 six times.
    v = f32(370.8)
    for _ in range(6):
        v = sub_round(v, 60.0)
    assert v == f32(10.8)
    assert sub_round(v, -60.0) == f32(70.8)


def test_graph_dump_is_nccls_format():
    sysm = system_for("dgx-h100", {"NCCL_IB_HCA": RAILS}, True, 2)
    ring, tree = ring_and_tree(sysm)
    text = graphs_to_xml(sysm, [ring, tree]).decode()
    lines = text.splitlines()
    assert lines[0] == '<graphs version="1">'
    assert lines[1] == ('  <graph id="0" pattern="4" crossnic="2" nchannels="8" speedintra="48" speedinter="48" '
                        'latencyinter="0" typeintra="NVL" typeinter="PIX" samechannels="0">')
    assert lines[2:6] == ["    <channel>", '      <net dev="0"/>', '      <gpu dev="0" rank="0"/>',
                          '      <gpu dev="0x7" rank="7"/>']
    assert lines[12:14] == ['      <net dev="0x1"/>', "    </channel>"]
    assert text.endswith("  </graph>\n</graphs>\n")
    # read back as NCCL would: the same channels
    again = Graph(0, PATTERN_RING)
    load_graph_file(sysm, again, text.encode())
    assert channels(sysm, again) == channels(sysm, ring)
    assert (again.cross_nic, again.bw_intra, again.type_inter) == (2, 48.0, ring.type_inter)
    # unsearched graphs (CollNet, NVLS) as init.cc leaves them; C2C has no name in NCCL's dictionary
    assert '<graph id="3" pattern="5" crossnic="0" nchannels="0" speedintra="0"' in \
        graphs_to_xml(sysm, [unsearched_graph(3, 5, max_channels=MAXCHANNELS)]).decode()
    bad = unsearched_graph(2, 3)
    bad.type_intra = 3
    with pytest.raises(NcclFailure, match="could not find value 3"):
        graphs_to_xml(sysm, [bad])


GRAPH_HEAD = ('<graphs version="1">\n  <graph id="0" pattern="4" crossnic="0" nchannels="1" speedintra="40" '
              'speedinter="48" latencyinter="0" typeintra="{ti}" typeinter="{te}" samechannels="0">\n    <channel>\n')
GRAPH_TAIL = "    </channel>\n  </graph>\n</graphs>\n"


def _one_channel(gpus: str, ti: str = "NVL", te: str = "PIX") -> bytes:
    return (GRAPH_HEAD.format(ti=ti, te=te) + '      <net dev="0"/>\n' + gpus + '      <net dev="0x1"/>\n'
            + GRAPH_TAIL).encode()


GPUS = "".join(f'      <gpu dev="{g:#x}"/>\n' for g in range(8))


def test_graph_file_is_trusted_not_checked():
    sysm = system_for("dgx-h100", {"NCCL_IB_HCA": RAILS}, True, 2)
    g = compute(sysm, Graph(0, PATTERN_RING), graph_file=_one_channel(GPUS, te="PIXY"))
    # stored verbatim: one channel, 40/48, the type by prefix ("PIXY" is PIX), nets unchecked
    assert summary(g) == ("RING", 1, 40.0, 48.0, "NVL", "PIX", 0)
    assert g.nets(0) == (0, 1)
    # an unknown type name falls back to LOC (kvConvertToInt), C2C included (not in NCCL's dictionary)
    g = compute(sysm, Graph(0, PATTERN_RING), graph_file=_one_channel(GPUS, ti="C2C", te="bogus"))
    assert (g.type_intra, g.type_inter) == (0, 0)
    # a rank= attribute is taken as written, even for a rank that does not exist
    g = compute(sysm, Graph(0, PATTERN_RING), graph_file=_one_channel('      <gpu dev="0x0" rank="99"/>\n' + GPUS))
    assert g.channel(0, 8)[0] == 99
    # the graph for another id is ignored: the tree is searched
    tree = compute(sysm, Graph(1, PATTERN_BALANCED_TREE, 1, 8), graph_file=_one_channel(GPUS))
    assert tree.pattern == PATTERN_TREE and tree.n_channels == 8


def test_graph_file_what_nccl_rejects():
    sysm = system_for("dgx-h100", {"NCCL_IB_HCA": RAILS}, True, 2)
    with pytest.raises(NcclFailure, match="XML Import Channel : dev 9 not found"):
        compute(sysm, Graph(0, PATTERN_RING), graph_file=_one_channel(GPUS + '      <gpu dev="0x9"/>\n'))
    with pytest.raises(NcclFailure, match="Attribute dev of node gpu not found"):
        compute(sysm, Graph(0, PATTERN_RING), graph_file=_one_channel(GPUS + "      <gpu/>\n"))
    no_type = _one_channel(GPUS).replace(b' typeinter="PIX"', b"")
    with pytest.raises(NcclFailure, match="crashes"):
        compute(sysm, Graph(0, PATTERN_RING), graph_file=no_type)
    with pytest.raises(NcclFailure, match="Attribute samechannels of node graph not found"):
        compute(sysm, Graph(0, PATTERN_RING), graph_file=_one_channel(GPUS).replace(b' samechannels="0"', b""))
    with pytest.raises(NcclFailure, match="wrong version"):
        compute(sysm, Graph(0, PATTERN_RING), graph_file=_one_channel(GPUS).replace(b'version="1"', b'version="2"'))
    with pytest.raises(NotModelled, match="over NCCL's 64 channels"):
        compute(sysm, Graph(0, PATTERN_RING), graph_file=_one_channel(GPUS).replace(b'nchannels="1"',
                                                                                  b'nchannels="65"'))


def test_crossnic_1_graph_skipped_when_nccl_cross_nic_is_0():
    sysm = system_for("dgx-h100", {"NCCL_IB_HCA": RAILS, "NCCL_CROSS_NIC": "0"}, True, 2)
    data = _one_channel(GPUS).replace(b'crossnic="0"', b'crossnic="1"')
    g = compute(sysm, Graph(0, PATTERN_RING), graph_file=data)
    assert summary(g) == ("RING", 8, 45.0, 45.0, "NVL", "PXN", 0)  # searched: NCCL 2.30.7 with NCCL_CROSS_NIC=0


def test_link_type_names():
    assert [kv_link_type(s) for s in ("LOC", "NVL", "NVB", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS")] == \
        [0, 1, 2, 4, 5, 6, 7, 8, 9]
    assert kv_link_type("NET") == 0 and kv_link_type("") == 0 and kv_link_type("SYSTEM") == 9


def test_nvls_and_collnet_are_not_modelled():
    sysm = system_for("dgx-h100", {"NCCL_IB_HCA": RAILS}, True, 1)
    with pytest.raises(NotModelled, match="NVLS"):
        compute(sysm, Graph(3, 5, 1, MAXCHANNELS))
    with pytest.raises(NotModelled, match="CollNet"):
        compute(sysm, Graph(2, PATTERN_TREE, 1, 8, coll_net=1))


def test_search_leaves_the_system_as_it_found_it():
    sysm = system_for("dgx-h100", {"NCCL_IB_HCA": RAILS}, True, 2)
    before = [(l.bw) for lst in sysm.nodes for n in lst for l in n.links] + [n.bw for n in sysm.nodes[NET]]
    ring_and_tree(sysm)
    after = [(l.bw) for lst in sysm.nodes for n in lst for l in n.links] + [n.bw for n in sysm.nodes[NET]]
    assert after == before


def _with_and_without(monkeypatch, switch: str, fixture, env, gdr, nodes):
    """The ring and tree graphs (with their channels), the budget left after each search and the steps taken, with
    the search's ``switch`` (a memo) on, then off."""
    import ncclctl.nccl.search as search

    def run():
        sysm = system_for(fixture, env, gdr, nodes)
        ring, tree = ring_and_tree(sysm)
        return [(summary(g), channels(sysm, g)) for g in (ring, tree)], search.last_budgets(), search.last_steps()

    on = run()
    monkeypatch.setattr(search, switch, False)
    return on, run()


@pytest.mark.parametrize("fixture,nodes,gdr,env", [
    ("dgx-h100", 2, True, {"NCCL_IB_HCA": RAILS}),  # crossNic pairing, budget spent: the memos skip most of it
    ("dgx-h100", 1, True, {"NCCL_IB_HCA": RAILS}),  # one node: channels replayed (sameChannels)
    ("dgx-a100", 1, True, {}),
    ("hgx-h100-roce", 4, True, {}),
    ("pcie-server", 2, True, {}),  # no NVSwitch: the first channel also tried in PCI order, on its own budget
    ("pcie-server", 2, False, {}),
    ("pcie-server-roce-lag", 2, False, {}),
    ("grace-hopper", 2, True, {}),
    ("dgx-a100", 2, False, {"NCCL_CROSS_NIC": "1"}),  # asymmetric NIC paths: the bandwidths left are in the key
])
def test_memos_are_exact(monkeypatch, fixture, nodes, gdr, env):
    """The search's memos (channel starts and whole searches seen before) change neither the graphs nor the
    budget left after each search (what steers ncclTopoCompute): the same search with them off takes every step
    itself and ends the same."""
    (memo_graphs, memo_budgets, memo_steps), (graphs, budgets, steps) = _with_and_without(
        monkeypatch, "MEMO", fixture, env, gdr, nodes)
    assert memo_graphs == graphs
    assert memo_budgets == budgets
    assert sum(memo_steps.values()) < sum(steps.values())  # the memos do skip work here


@pytest.mark.parametrize("fixture,nodes,gdr", [
    ("pcie-server", 2, True),  # PCI overhead: the speed's 6/5 taken off PCI links behind an Intel CPU
    ("pcie-cx8-inline", 2, False),
    ("grace-hopper", 2, True),
    ("dgx-a100", 2, True),  # the ring searches at 24, 20 and 18 GB/s found nothing and fail alike at the next
])
def test_searches_at_a_lower_speed_skipped_only_when_they_take_the_same_steps(monkeypatch, fixture, nodes, gdr):
    """A search skipped because the same search at a higher speed found nothing and provably takes the same steps
    (search._Search._slower) changes neither the graphs nor the budget left after each search; it does skip."""
    (fast_graphs, fast_budgets, fast_steps), (graphs, budgets, steps) = _with_and_without(
        monkeypatch, "SPEED_MEMO", fixture, {}, gdr, nodes)
    assert fast_graphs == graphs
    assert fast_budgets == budgets
    assert sum(fast_steps.values()) < sum(steps.values())


def test_sub_round_exact_on_whole_mb_values_below_4096_gb_s():
    """The speed memo's premise (search._Search._exact_speed): SUB_ROUND takes a whole number of MB/s off
    another and gives it back exactly below 4,096 GB/s; above it, it need not (45.1 GB/s off 4,909.8 does not
    come back: NCCL's 5,000 GB/s GPU links drift there, and the memo checks those values one by one)."""
    import random

    from ncclctl.nccl.search import _EXACT_BELOW, _g

    rnd = random.Random(31)
    for _ in range(20000):
        a = rnd.randrange(0, _EXACT_BELOW)
        b = rnd.randrange(1, 120000)
        if b > a:
            continue
        assert sub_round(_g(a), _g(b)) == _g(a - b)
        assert sub_round(_g(a - b), -_g(b)) == _g(a)
    assert sub_round(sub_round(_g(4909800), _g(45100)), -_g(45100)) != _g(4909800)
