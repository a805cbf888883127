"""NCCL settings exactly as NCCL reads them: the environment, the nccl.conf files, and the value syntaxes.

Everything here is pure (text in, values out) and follows NVIDIA/nccl's own code, 2.30.7 unless a version is
given (``/work/shared/reference/nccl-format.md`` section 5):

* **Sources and precedence** (``misc/param.cc:initEnvFunc``): the process environment, then ``$NCCL_CONF_FILE``
  when it is set and non-empty (2.23+), otherwise ``$HOME/.nccl.conf``, then ``/etc/nccl.conf``. Each conf line is
  applied with ``setenv(name, value, 0)``, so the first writer wins: the environment beats both files, the user's
  file beats ``/etc/nccl.conf``, and **within one file the first line that sets a name wins** (shells do the
  opposite).
* **Conf lines** (``setEnvFile``): ``NAME=VALUE`` split at the first ``=``. Nothing is trimmed and nothing is
  unquoted: ``NCCL_X = 1`` sets a variable named ``NCCL_X `` (never read) to `` 1``, ``"mlx5_0"`` keeps its quotes,
  and ``export NCCL_X=1`` sets a variable named ``export NCCL_X``. Lines without ``=`` are skipped. A line whose
  *first* character is ``#`` is skipped from 2.26 (before, it set a variable named ``#...``, harmless); a ``#``
  anywhere else is part of the value. A trailing CR is removed from 2.30 (before, it stayed in the value). Names
  and values are cut at 1023 characters; from 2.30 lines are read with a 4096-byte buffer, so a longer line is
  read as several lines.
* **Integer parameters** (``NCCL_PARAM``, ``ncclLoadParam``): ``strtoll(value, NULL, 0)``: leading white space
  is skipped, ``0x`` means hex and a leading ``0`` octal, parsing stops at the first character that is not a
  digit of that base (``08`` is 0, ``3 # x`` is 3), a value without digits is 0 (glibc sets no error), an
  overflow falls back to the default (with an INFO line), an empty value keeps the default.
* **Path levels** (``graph/paths.cc:ncclGetLevel``), ``NCCL_ALGO``/``NCCL_PROTO`` (``graph/tuning.cc:parseList``)
  and the other enumerations are modelled below, each with the version that changed it.

The table of known variables was extracted from every NCCL release tag from v2.3.5 to v2.30.7 (``NCCL_PARAM``
names, ``DEFINE_NCCL_PARAM`` keys and every ``"NCCL_..."`` string passed to ``ncclGetEnv``/``getenv``).
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
from dataclasses import dataclass
from typing import Iterable, Sequence

Version = tuple[int, int, int]

DEFAULT_VERSION: Version = (2, 30, 7)

#: Every NCCL 2.x release with a tag in NVIDIA/nccl from 2.3.5 on (the versions this module knows how to model).
RELEASES: tuple[str, ...] = tuple("""
2.3.5 2.3.7 2.4.2 2.4.6 2.4.7 2.4.8 2.5.6 2.5.7 2.6.4 2.7.3 2.7.5 2.7.6 2.7.8 2.8.3 2.8.4 2.9.6 2.9.8 2.9.9 2.10.3
2.11.4 2.12.7 2.12.10 2.12.12 2.13.4 2.14.3 2.15.1 2.15.5 2.16.2 2.16.5 2.17.1 2.18.1 2.18.3 2.18.5 2.18.6 2.19.1
2.19.3 2.19.4 2.20.3 2.20.5 2.21.5 2.22.3 2.23.4 2.24.3 2.25.1 2.26.2 2.26.3 2.26.5 2.26.6 2.27.3 2.27.5 2.27.6
2.27.7 2.28.3 2.28.7 2.28.9 2.29.2 2.29.3 2.29.7 2.30.3 2.30.4 2.30.7
""".split())
ENV = "environment"
ETC_CONF = "/etc/nccl.conf"

#: C ``isspace`` in the "C" locale.
_C_SPACE = " \t\n\v\f\r"

# --------------------------------------------------------------------------------------------------
# Known variables: name, first release that reads it, last release that reads it ("-": still read), and how
# its value is parsed: int (NCCL_PARAM: strtoll base 0), typed (2.30 param registry: its own parser), str.

_TABLE = """
NCCL_AGG_ALLOC_MODE                                       2.10.3  2.12.12 str
NCCL_AGG_CHANNEL_SIZE                                     2.10.3  2.19.4  int
NCCL_ALGO                                                 2.5.6   -       str
NCCL_ALLGATHERV_ENABLE                                    2.29.2  -       int
NCCL_ALLOC_P2P_NET_LL_BUFFERS                             2.14.3  -       int
NCCL_BUFFSIZE                                             2.3.5   -       int
NCCL_CGA_CLUSTER_SIZE                                     2.15.1  -       int
NCCL_CHECK_MODE                                           2.29.7  -       str
NCCL_CHECK_POINTERS                                       2.3.5   -       int
NCCL_CHUNK_SIZE                                           2.12.7  -       int
NCCL_COLLNET_ENABLE                                       2.6.4   -       int
NCCL_COLLNET_NODE_THRESHOLD                               2.9.9   -       int
NCCL_COMM_BLOCKING                                        2.14.3  -       int
NCCL_COMM_ID                                              2.3.5   -       str
NCCL_COMM_SHRINK_SHARE_RESOURCES                          2.27.3  -       int
NCCL_COMM_SPLIT_SHARE_RESOURCES                           2.18.1  -       int
NCCL_CONF_FILE                                            2.23.4  -       str
NCCL_CONNECT_ROUND_MAX_PEERS                              2.19.4  -       int
NCCL_CREATE_THREAD_CONTEXT                                2.13.4  2.30.4  int
NCCL_CROSS_NIC                                            2.5.6   -       int
NCCL_CTA_POLICY                                           2.27.3  -       str
NCCL_CUDA_PATH                                            2.13.4  2.20.5  str
NCCL_CUMEM_ENABLE                                         2.18.1  -       int
NCCL_CUMEM_HOST_ENABLE                                    2.23.4  -       int
NCCL_DEBUG                                                2.3.5   -       typed
NCCL_DEBUG_FILE                                           2.3.5   -       typed
NCCL_DEBUG_SUBSYS                                         2.3.5   -       typed
NCCL_DEBUG_TIMESTAMP_FORMAT                               2.26.2  -       typed
NCCL_DEBUG_TIMESTAMP_LEVELS                               2.26.2  -       typed
NCCL_DEV_API_JIT                                          2.30.7  -       int
NCCL_DISABLE_MEM_MANAGER                                  2.29.7  -       int
NCCL_DMABUF_ENABLE                                        2.13.4  -       int
NCCL_ELASTIC_BUFFER_REGISTER                              2.30.3  -       int
NCCL_ENABLE_VERSION_CHECK                                 2.29.2  -       int
NCCL_ENV_PLUGIN                                           2.28.7  -       str
NCCL_GDAKI_USE_RELIABLE_DB                                2.29.7  -       int
NCCL_GDRCOPY_ENABLE                                       2.9.6   -       int
NCCL_GDRCOPY_FIFO_ENABLE                                  2.9.6   -       int
NCCL_GDRCOPY_FLUSH_ENABLE                                 2.9.6   -       int
NCCL_GDRCOPY_SYNC_ENABLE                                  2.12.7  -       int
NCCL_GDRCOPY_TAIL_ENABLE                                  2.9.6   2.11.4  int
NCCL_GDR_FLUSH_DISABLE                                    2.3.5   -       int
NCCL_GIN_CONNECTION_RAIL                                  2.30.7  -       str
NCCL_GIN_COUNTER_POOL_SIZE                                2.28.7  2.29.7  int
NCCL_GIN_ENABLE                                           2.28.7  -       int
NCCL_GIN_ERROR_QUERY_SEC                                  2.28.7  -       int
NCCL_GIN_EXCLUSIVE_CONTEXTS                               2.29.7  2.29.7  int
NCCL_GIN_GDAKI_MAX_DEST_RD_ATOMIC                         2.30.3  -       int
NCCL_GIN_GDAKI_MAX_QP_RD_ATOMIC                           2.30.3  -       int
NCCL_GIN_GDAKI_NIC_HANDLER                                2.28.7  -       int
NCCL_GIN_GDAKI_QP_DEPTH                                   2.28.7  -       int
NCCL_GIN_IB_TC                                            2.30.7  -       int
NCCL_GIN_NCONNECTIONS                                     2.29.7  -       int
NCCL_GIN_NCONTEXTS                                        2.28.7  2.29.7  int
NCCL_GIN_PLUGIN                                           2.29.7  -       str
NCCL_GIN_PLUGIN_REF_COUNT                                 2.29.7  -       int
NCCL_GIN_PROXY_QUEUE_SIZE                                 2.28.7  -       int
NCCL_GIN_SIGNAL_POOL_SIZE                                 2.28.7  2.29.7  int
NCCL_GIN_TYPE                                             2.28.7  -       int
NCCL_GRAPH                                                2.5.6   2.5.7   str
NCCL_GRAPH_DUMP_FILE                                      2.6.4   -       str
NCCL_GRAPH_DUMP_FILE_RANK                                 2.6.4   -       int
NCCL_GRAPH_FILE                                           2.6.4   -       str
NCCL_GRAPH_HELPER_DISABLE                                 2.11.4  -       int
NCCL_GRAPH_MIXING_SUPPORT                                 2.13.4  -       int
NCCL_GRAPH_REGISTER                                       2.11.4  -       int
NCCL_GRAPH_STREAM_ORDERING                                2.30.7  -       int
NCCL_GROUP_CUDA_STREAM                                    2.3.5   -       int
NCCL_HOSTID                                               2.5.6   -       str
NCCL_IBVERBS_LIB                                          2.30.3  -       str
NCCL_IB_ADAPTIVE_ROUTING                                  2.16.2  -       int
NCCL_IB_ADDR_FAMILY                                       2.21.5  -       str
NCCL_IB_ADDR_RANGE                                        2.21.5  -       str
NCCL_IB_AR_THRESHOLD                                      2.6.4   -       int
NCCL_IB_CUDA_SUPPORT                                      2.3.5   2.3.7   int
NCCL_IB_DATA_DIRECT                                       2.27.3  -       int
NCCL_IB_DEVICE_PCI_ORDER                                  2.29.7  -       int
NCCL_IB_DISABLE                                           2.3.5   -       int
NCCL_IB_ECE_ENABLE                                        2.23.4  -       int
NCCL_IB_FIFO_TC                                           2.22.3  -       int
NCCL_IB_GDR_LEVEL                                         2.3.5   2.3.7   int
NCCL_IB_GID_INDEX                                         2.3.5   -       int
NCCL_IB_HCA                                               2.3.5   -       str
NCCL_IB_MERGE_NICS                                        2.20.3  -       int
NCCL_IB_MERGE_VFS                                         2.18.1  -       int
NCCL_IB_MQP_RETRY_ALL                                     2.24.3  -       int
NCCL_IB_MQP_RETRY_CNT                                     2.24.3  -       int
NCCL_IB_MQP_RETRY_SLEEP_MSEC                              2.24.3  -       int
NCCL_IB_OOO_RQ                                            2.30.3  -       int
NCCL_IB_PCI_RELAXED_ORDERING                              2.12.7  -       int
NCCL_IB_PKEY                                              2.8.3   -       int
NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS                     2.29.7  -       int
NCCL_IB_QPS_PER_CONNECTION                                2.10.3  -       int
NCCL_IB_QUERY_PORT_SPEED                                  2.30.7  -       int
NCCL_IB_RECEIVER_SIDE_MATCHING_SCHEME                     2.29.7  -       int
NCCL_IB_RESILIENCY_PORT_FAILOVER                          2.29.7  -       int
NCCL_IB_RESILIENCY_PORT_FAILOVER_MAX_ATTEMPTS             2.29.7  -       int
NCCL_IB_RESILIENCY_PORT_FAILOVER_PROBE_DELAY              2.29.7  -       int
NCCL_IB_RESILIENCY_PORT_RECOVERY                          2.30.3  -       int
NCCL_IB_RESILIENCY_PORT_RECOVERY_ACK_TIMEOUT              2.30.3  -       int
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_INTERVAL 2.30.3  -       int
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_SIZE     2.30.3  -       int
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_SEQUENCE_SIZE  2.30.3  -       int
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_TIMEOUT        2.30.3  -       int
NCCL_IB_RESILIENCY_PORT_RECOVERY_ATTEMPTS_MAX             2.30.3  -       int
NCCL_IB_RESILIENCY_PORT_RECOVERY_START_DELAY              2.30.3  -       int
NCCL_IB_RETRY_CNT                                         2.3.5   -       int
NCCL_IB_RETURN_ASYNC_EVENTS                               2.23.4  -       int
NCCL_IB_ROCE_VERSION_NUM                                  2.21.5  -       int
NCCL_IB_ROUTABLE_FLID_GID_INDEX                           2.22.3  -       int
NCCL_IB_SL                                                2.3.5   -       int
NCCL_IB_SPLIT_DATA_ON_QPS                                 2.18.1  -       int
NCCL_IB_SUBNET_AWARE_ROUTING                              2.30.7  -       int
NCCL_IB_SUBNET_PREFIX_LEN                                 2.30.7  -       int
NCCL_IB_TC                                                2.3.5   -       int
NCCL_IB_TIMEOUT                                           2.3.5   -       int
NCCL_IB_USE_INLINE                                        2.8.3   -       int
NCCL_IB_WARN_RAIL_LOCAL                                   2.24.3  -       int
NCCL_IGNORE_COLLNET_MISMATCH                              2.30.3  -       int
NCCL_IGNORE_CPU_AFFINITY                                  2.4.6   -       int
NCCL_IGNORE_DISABLED_P2P                                  2.12.7  -       int
NCCL_IGNORE_NET_MISMATCH                                  2.30.3  -       int
NCCL_INSPECTOR_COLL_POOL_SIZE                             2.30.3  -       str
NCCL_INSPECTOR_COMM_POOL_SIZE                             2.30.3  -       str
NCCL_INSPECTOR_DUMP_COLL_RING_SIZE                        2.30.3  -       str
NCCL_INSPECTOR_DUMP_DIR                                   2.28.3  -       str
NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES                        2.30.3  -       str
NCCL_INSPECTOR_DUMP_P2P_RING_SIZE                         2.30.3  -       str
NCCL_INSPECTOR_DUMP_THREAD_ENABLE                         2.28.3  -       str
NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS          2.28.3  -       str
NCCL_INSPECTOR_DUMP_VERBOSE                               2.28.3  -       str
NCCL_INSPECTOR_ENABLE                                     2.28.3  -       str
NCCL_INSPECTOR_ENABLE_P2P                                 2.30.3  -       str
NCCL_INSPECTOR_P2P_POOL_SIZE                              2.30.3  -       str
NCCL_INSPECTOR_POOL_GROW                                  2.30.3  -       str
NCCL_INSPECTOR_PROM_DUMP                                  2.29.3  -       str
NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING                      2.30.3  -       str
NCCL_IPC_USE_ABSTRACT_SOCKET                              2.29.2  -       int
NCCL_L1_SHARED_MEMORY_CARVEOUT                            2.12.10 -       int
NCCL_LAUNCH_MODE                                          2.3.5   -       str
NCCL_LAUNCH_ORDER_IMPLICIT                                2.26.2  -       int
NCCL_LAUNCH_RACE_FATAL                                    2.26.2  -       int
NCCL_LEGACY_CUDA_REGISTER                                 2.24.3  -       int
NCCL_LL128_BUFFSIZE                                       2.7.3   -       int
NCCL_LL128_C2C                                            2.27.3  -       int
NCCL_LL128_NTHREADS                                       2.5.6   -       int
NCCL_LL_BUFFSIZE                                          2.7.3   -       int
NCCL_LL_THRESHOLD                                         2.3.5   2.4.8   int
NCCL_LOCAL_REGISTER                                       2.19.1  -       int
NCCL_LSA_TEAM_SIZE                                        2.29.7  -       int
NCCL_MAX_CTAS                                             2.17.1  -       int
NCCL_MAX_NCHANNELS                                        2.5.6   -       int
NCCL_MAX_NRINGS                                           2.3.5   -       int
NCCL_MAX_P2P_NCHANNELS                                    2.7.3   -       int
NCCL_MEM_SYNC_DOMAIN                                      2.16.2  -       int
NCCL_MIN_CTAS                                             2.17.1  -       int
NCCL_MIN_NCHANNELS                                        2.5.6   -       int
NCCL_MIN_NRINGS                                           2.3.5   -       int
NCCL_MIN_P2P_NCHANNELS                                    2.7.3   -       int
NCCL_MLOPART_RDMA_ENABLE                                  2.30.7  -       int
NCCL_MNNVL                                                2.20.3  2.20.5  int
NCCL_MNNVL_CLIQUE_ID                                      2.23.4  -       int
NCCL_MNNVL_CROSS_CLIQUE                                   2.30.3  -       int
NCCL_MNNVL_ENABLE                                         2.21.5  -       int
NCCL_MNNVL_RAIL_PER_HOST                                  2.28.7  -       int
NCCL_MNNVL_SCATTER_NETS_ENABLE                            2.27.5  -       int
NCCL_MNNVL_UUID                                           2.25.1  -       int
NCCL_MULTI_RANK_GPU_ENABLE                                2.30.3  -       int
NCCL_MULTI_SEGMENT_REGISTER                               2.29.2  -       int
NCCL_NCCL_ALLOC_P2P_NET_LL_BUFFERS                        2.14.3  2.16.2  int
NCCL_NCHANNELS_PER_NET_PEER                               2.12.7  -       int
NCCL_NET                                                  2.10.3  -       str
NCCL_NETDEVS_POLICY                                       2.28.3  -       str
NCCL_NET_DISABLE_INTRA                                    2.12.7  -       int
NCCL_NET_FORCE_FLUSH                                      2.15.1  -       int
NCCL_NET_FORCE_MERGE                                      2.24.3  -       str
NCCL_NET_GDR_C2C                                          2.26.2  -       int
NCCL_NET_GDR_LEVEL                                        2.4.2   -       str
NCCL_NET_GDR_MLOPART                                      2.30.7  -       int
NCCL_NET_GDR_READ                                         2.3.5   -       int
NCCL_NET_MERGE_LEVEL                                      2.24.3  -       str
NCCL_NET_MERGE_POLICY                                     2.30.7  -       str
NCCL_NET_OPTIONAL_RECV_COMPLETION                         2.24.3  -       int
NCCL_NET_OVERHEAD                                         2.18.1  -       int
NCCL_NET_PLUGIN                                           2.11.4  -       str
NCCL_NET_PLUGIN_REF_COUNT                                 2.26.2  -       int
NCCL_NET_SHARED_BUFFERS                                   2.8.3   -       int
NCCL_NET_SHARED_COMMS                                     2.12.7  -       int
NCCL_NO_CACHE                                             2.29.7  -       typed
NCCL_NSOCKS_PERTHREAD                                     2.4.8   -       int
NCCL_NTHREADS                                             2.3.5   -       int
NCCL_NUM_RMA_CTX                                          2.29.2  -       int
NCCL_NVB_DISABLE                                          2.9.9   -       int
NCCL_NVB_PRECONNECT                                       2.9.9   -       int
NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE                     2.27.3  -       int
NCCL_NVLSTREE_MAX_CHUNKSIZE                               2.20.3  -       int
NCCL_NVLS_CHUNKSIZE                                       2.21.5  -       int
NCCL_NVLS_ENABLE                                          2.17.1  -       int
NCCL_NVLS_NCHANNELS                                       2.17.1  -       int
NCCL_NVTX_DISABLE                                         2.28.3  -       int
NCCL_OOB_NET_ENABLE                                       2.23.4  -       int
NCCL_OOB_NET_IFNAME                                       2.23.4  -       str
NCCL_P2P_DIRECT_DISABLE                                   2.12.12 -       int
NCCL_P2P_DISABLE                                          2.3.5   -       str
NCCL_P2P_EPOCH_ENABLE                                     2.29.2  -       int
NCCL_P2P_LEVEL                                            2.3.5   -       str
NCCL_P2P_LL_THRESHOLD                                     2.14.3  -       int
NCCL_P2P_MAX_PEERS                                        2.30.3  -       int
NCCL_P2P_NET_CHUNKSIZE                                    2.14.3  -       int
NCCL_P2P_NVL_CHUNKSIZE                                    2.16.2  -       int
NCCL_P2P_PCI_CHUNKSIZE                                    2.16.2  -       int
NCCL_P2P_PER_CHANNEL_NET_BW                               2.29.2  -       int
NCCL_P2P_PXN_LEVEL                                        2.12.7  -       int
NCCL_P2P_READ_ENABLE                                      2.7.3   -       int
NCCL_P2P_SCHEDULE_GROUP_SIZE                              2.28.7  -       int
NCCL_P2P_USE_CUDA_MEMCPY                                  2.13.4  -       int
NCCL_PARAM_DUMP_ALL                                       2.30.3  -       typed
NCCL_PAT_ENABLE                                           2.23.4  -       int
NCCL_PROFILER_CE_POLLER_INTERVAL_MICROSECONDS             2.29.3  -       str
NCCL_PROFILER_CE_TIMING                                   2.29.3  -       str
NCCL_PROFILER_PLUGIN                                      2.23.4  -       str
NCCL_PROFILE_CE_BATCH_POOL_SIZE                           2.29.3  -       str
NCCL_PROFILE_CE_COLL_POOL_SIZE                            2.29.3  -       str
NCCL_PROFILE_CE_SYNC_POOL_SIZE                            2.29.3  -       str
NCCL_PROFILE_COLL_API_POOL_SIZE                           2.28.3  -       str
NCCL_PROFILE_COLL_POOL_SIZE                               2.23.4  -       str
NCCL_PROFILE_DUMP_FILE                                    2.23.4  -       str
NCCL_PROFILE_EVENT_MASK                                   2.23.4  -       str
NCCL_PROFILE_GROUP_API_POOL_SIZE                          2.28.3  -       str
NCCL_PROFILE_GROUP_POOL_SIZE                              2.23.4  -       str
NCCL_PROFILE_KERNEL_LAUNCH_POOL_SIZE                      2.28.3  -       str
NCCL_PROFILE_P2P_API_POOL_SIZE                            2.28.3  -       str
NCCL_PROFILE_P2P_POOL_SIZE                                2.23.4  -       str
NCCL_PROFILE_PROXY_CTRL_POOL_SIZE                         2.23.4  -       str
NCCL_PROFILE_PROXY_DETACH_POOL_SIZE                       2.23.4  -       str
NCCL_PROGRESS_APPENDOP_FREQ                               2.16.5  -       int
NCCL_PROTO                                                2.5.6   -       str
NCCL_PROXY_APPEND_BATCH_SIZE                              2.16.2  -       int
NCCL_PROXY_CPUSET                                         2.28.3  -       str
NCCL_PROXY_DUMP_SIGNAL                                    2.14.3  -       int
NCCL_PROXY_PROFILE                                        2.12.7  2.22.3  str
NCCL_PXN_C2C                                              2.27.3  -       int
NCCL_PXN_DISABLE                                          2.12.7  -       int
NCCL_RAS_ADDR                                             2.24.3  -       str
NCCL_RAS_ENABLE                                           2.24.3  -       int
NCCL_RAS_TIMEOUT_FACTOR                                   2.24.3  -       int
NCCL_REPORT_CONNECT_PROGRESS                              2.19.4  -       int
NCCL_RINGS                                                2.3.5   2.4.8   str
NCCL_RMA_DISABLE                                          2.30.7  -       int
NCCL_RMA_PLUGIN                                           2.30.7  -       str
NCCL_RMA_PLUGIN_REF_COUNT                                 2.30.7  -       int
NCCL_RMA_PROXY_DUMP_SIGNAL                                2.29.2  -       int
NCCL_RMA_PROXY_QUEUE_SIZE                                 2.29.2  -       int
NCCL_RUNTIME_CONNECT                                      2.22.3  -       int
NCCL_SET_CPU_STACK_SIZE                                   2.28.3  -       int
NCCL_SET_STACK_SIZE                                       2.9.6   -       int
NCCL_SET_THREAD_NAME                                      2.12.7  -       typed
NCCL_SHADOW_MEMPOOL_MAX_SIZE                              2.30.7  -       int
NCCL_SHARED_BUFF_COUNT                                    2.8.3   2.8.4   int
NCCL_SHM_DISABLE                                          2.3.5   -       int
NCCL_SHM_LOCALITY                                         2.13.4  -       int
NCCL_SHM_MEMCPY_MODE                                      2.13.4  2.30.4  int
NCCL_SHM_USE_CUDA_MEMCPY                                  2.13.4  2.30.4  int
NCCL_SINGLE_PROC_MEM_REG_ENABLE                           2.28.3  -       int
NCCL_SOCKET_FAMILY                                        2.3.5   -       str
NCCL_SOCKET_IFNAME                                        2.3.5   -       str
NCCL_SOCKET_INLINE                                        2.27.3  -       int
NCCL_SOCKET_MAGIC                                         2.30.7  -       str
NCCL_SOCKET_MIN_TASKSIZE                                  2.27.3  -       int
NCCL_SOCKET_NTHREADS                                      2.4.8   -       int
NCCL_SOCKET_POLL_TIMEOUT_MSEC                             2.29.2  -       int
NCCL_SOCKET_RCVBUF                                        2.27.3  -       int
NCCL_SOCKET_RETRY_CNT                                     2.24.3  -       int
NCCL_SOCKET_RETRY_SLEEP_MSEC                              2.24.3  -       int
NCCL_SOCKET_SNDBUF                                        2.27.3  -       int
NCCL_SYM_CE_THRESHOLD                                     2.29.2  -       int
NCCL_SYM_CTAS                                             2.27.3  -       int
NCCL_SYM_GIN_KERNELS_ENABLE                               2.29.7  -       int
NCCL_SYM_KERNEL                                           2.27.3  -       str
NCCL_SYM_NOWIN_ENABLE                                     2.29.2  -       int
NCCL_SYM_REUSE_SYSMEM_HANDLES                             2.30.4  -       int
NCCL_SYM_RS_GIN_CHUNK_SIZE                                2.30.7  -       int
NCCL_SYM_TMA_ENABLE                                       2.30.3  -       int
NCCL_THREAD_THRESHOLD                                     2.3.5   2.4.8   int
NCCL_THREAD_THRESHOLDS                                    2.5.6   -       str
NCCL_TOPO_DUMP_FILE                                       2.6.4   -       str
NCCL_TOPO_DUMP_FILE_RANK                                  2.6.4   -       int
NCCL_TOPO_FILE                                            2.6.4   -       str
NCCL_TOPO_SPLIT_MLOPART                                   2.30.7  -       int
NCCL_TREE_THRESHOLD                                       2.4.2   2.4.8   int
NCCL_TUNER_CONFIG_FILE                                    2.27.5  -       str
NCCL_TUNER_PLUGIN                                         2.19.1  -       str
NCCL_UID_STAGGER_RATE                                     2.23.4  -       int
NCCL_UID_STAGGER_THRESHOLD                                2.23.4  -       int
NCCL_UNPACK_DOUBLE_NCHANNELS                              2.22.3  -       int
NCCL_WARN_ENABLE_DEBUG_INFO                               2.19.4  -       typed
NCCL_WIN_ENABLE                                           2.27.3  -       int
NCCL_WIN_STRIDE                                           2.27.3  -       int
NCCL_WORK_ARGS_BYTES                                      2.22.3  -       int
NCCL_WORK_FIFO_BYTES                                      2.22.3  -       int
NCCL_WORK_FIFO_DEPTH                                      2.13.4  2.21.5  int
"""

#: Variables that were removed or renamed, and what replaced them (NCCL release notes / the tags above).
REPLACED_BY: dict[str, str] = {
    "NCCL_IB_CUDA_SUPPORT": "NCCL_NET_GDR_LEVEL",
    "NCCL_IB_GDR_LEVEL": "NCCL_NET_GDR_LEVEL",
    "NCCL_LL_THRESHOLD": "NCCL_PROTO",
    "NCCL_TREE_THRESHOLD": "NCCL_ALGO",
    "NCCL_THREAD_THRESHOLD": "NCCL_THREAD_THRESHOLDS",
    "NCCL_MNNVL": "NCCL_MNNVL_ENABLE",
    "NCCL_NCCL_ALLOC_P2P_NET_LL_BUFFERS": "NCCL_ALLOC_P2P_NET_LL_BUFFERS",
    "NCCL_RINGS": "NCCL_GRAPH_FILE",
}


@dataclass(frozen=True)
class VarInfo:
    name: str
    since: Version
    #: The last release that reads it; None: still read by 2.30.7.
    until: Version | None
    #: ``int`` (strtoll base 0), ``typed`` (its own parser) or ``str``.
    kind: str


def _v(text: str) -> Version:
    parts = [int(p) for p in text.split(".")]
    return (parts[0], parts[1], parts[2] if len(parts) > 2 else 0)


def _load_table() -> dict[str, VarInfo]:
    out = {}
    for row in _TABLE.split("\n"):
        if not row.strip():
            continue
        name, since, until, kind = row.split()
        out[name] = VarInfo(name, _v(since), None if until == "-" else _v(until), kind)
    return out


KNOWN: dict[str, VarInfo] = _load_table()


def fmt_version(v: Version) -> str:
    return f"{v[0]}.{v[1]}.{v[2]}"


def parse_version(text: object) -> Version:
    """``"2.30.7"``, ``"2.26"`` or a tuple; :class:`ValueError` otherwise."""
    if isinstance(text, tuple) and 2 <= len(text) <= 3 and all(isinstance(x, int) for x in text):
        return (text[0], text[1], text[2] if len(text) == 3 else 0)
    if isinstance(text, str):
        parts = text.strip().lstrip("v").split("-")[0].split(".")
        if 2 <= len(parts) <= 3 and all(p.isdigit() for p in parts):
            return _v(".".join(parts))
    raise ValueError(f"invalid NCCL version {text!r} (write MAJOR.MINOR[.PATCH], e.g. 2.30.7)")


def known_variable(name: str, patterns: Iterable[str] = ()) -> VarInfo | None | bool:
    """The table entry for ``name``; True when only a site pattern (fnmatch) knows it; None when unknown."""
    info = KNOWN.get(name)
    if info is not None:
        return info
    if any(fnmatch.fnmatchcase(name, p) for p in patterns):
        return True
    return None


def suggest_variable(name: str) -> str | None:
    """The closest variable a 2.30.7 NCCL reads (a typo's likely intent), or None."""
    upper = name.upper()
    if upper != name and upper in KNOWN:
        return upper
    current = [n for n, i in KNOWN.items() if i.until is None]
    best = difflib.get_close_matches(upper, current, n=1, cutoff=0.8)
    return best[0] if best else None


# --------------------------------------------------------------------------------------------------
# C integer parsing


@dataclass(frozen=True)
class CInt:
    """What ``strtoll(s, &end, 0)`` does with ``s``."""

    value: int
    #: Characters consumed (0 when there were no digits: glibc leaves ``end`` at the start).
    end: int
    base: int
    digits: bool
    overflow: bool = False

    def rest(self, s: str) -> str:
        return s[self.end:]


_INT64_MAX = (1 << 63) - 1


def c_strtoll(s: str, base: int = 0) -> CInt:
    i, n = 0, len(s)
    while i < n and s[i] in _C_SPACE:
        i += 1
    neg = False
    if i < n and s[i] in "+-":
        neg = s[i] == "-"
        i += 1
    b = base
    if b in (0, 16) and s[i:i + 2] in ("0x", "0X") and i + 2 < n and s[i + 2] in "0123456789abcdefABCDEF":
        b, i = 16, i + 2
    elif b == 0:
        b = 8 if i < n and s[i] == "0" else 10
    start, value = i, 0
    while i < n:
        d = "0123456789abcdefghijklmnopqrstuvwxyz".find(s[i].lower()) if s[i].isascii() else -1
        if d < 0 or d >= b:
            break
        value = value * b + d
        i += 1
    if i == start:
        return CInt(0, 0, b, False)
    value = -value if neg else value
    if value > _INT64_MAX or value < -_INT64_MAX - 1:
        return CInt(_INT64_MAX if value > 0 else -_INT64_MAX - 1, i, b, True, overflow=True)
    return CInt(value, i, b, True)


def c_atoi(s: str) -> int:
    """C ``atoi``: base 10, leading white space and sign, stops at the first non-digit, 0 without digits."""
    return c_strtoll(s, 10).value


def load_param(value: str | None) -> int | None:
    """The value ``ncclLoadParam`` uses for an integer variable; None means the built-in default."""
    if value is None or value == "":
        return None
    r = c_strtoll(value)
    return None if r.overflow else r.value


# --------------------------------------------------------------------------------------------------
# Conf files


@dataclass(frozen=True)
class ConfLine:
    """One line of a conf file as ``setEnvFile`` reads it."""

    path: str
    #: 1-based line number in the file.
    line: int
    #: The line without its LF (a CR, if any, kept).
    raw: str
    #: What NCCL sets; both None when NCCL skips the line.
    name: str | None
    value: str | None
    #: Why NCCL skips it: ``comment``, ``no-equals``, ``empty-name``; None when it sets a variable.
    skipped: str | None = None
    #: The line ended in CR LF.
    crlf: bool = False


@functools.lru_cache(maxsize=16)  # pure; lint resolves the same files for many rules (a 1 MiB file: ~2 s each)
def read_conf(text: str, path: str, version: Version = DEFAULT_VERSION) -> tuple[ConfLine, ...]:
    out: list[ConfLine] = []
    physical = text.split("\n")
    if physical and physical[-1] == "":
        physical.pop()
    for lineno, line in enumerate(physical, 1):
        crlf = line.endswith("\r")
        # 2.30+: fgets with a 4096-byte buffer; a longer line arrives in 4095-character pieces.
        pieces = [line[i:i + 4095] for i in range(0, max(len(line), 1), 4095)] if version >= (2, 30, 0) else [line]
        for k, piece in enumerate(pieces):
            if version >= (2, 30, 0) and piece.endswith("\r"):
                piece = piece[:-1]
            if version >= (2, 26, 0) and piece.startswith("#"):
                out.append(ConfLine(path, lineno, line, None, None, "comment", crlf))
                continue
            s = piece.find("=")
            if s < 0:
                out.append(ConfLine(path, lineno, line, None, None, "no-equals", crlf))
                continue
            name, value = piece[:s][:1023], piece[s + 1:][:1023]
            if not name:
                # setenv("") fails with EINVAL: nothing is set.
                out.append(ConfLine(path, lineno, line, None, None, "empty-name", crlf))
                continue
            out.append(ConfLine(path, lineno, line, name, value, None, crlf))
    return tuple(out)


# --------------------------------------------------------------------------------------------------
# Resolution


@dataclass(frozen=True)
class Setting:
    """One definition of a variable: from the process environment, or a conf file line."""

    name: str
    value: str
    #: :data:`ENV` or the conf file's path.
    source: str
    line: int | None = None
    raw: str | None = None

    @property
    def from_env(self) -> bool:
        return self.source == ENV

    @property
    def where(self) -> str:
        return "the environment" if self.from_env else f"{self.source}:{self.line}"


@dataclass(frozen=True)
class Resolved:
    """Every definition NCCL would meet, in the order it applies them (environment, user file, /etc/nccl.conf)."""

    settings: tuple[Setting, ...]
    lines: tuple[ConfLine, ...]
    conf_paths: tuple[str, ...]
    version: Version = DEFAULT_VERSION

    def effective(self, name: str) -> Setting | None:
        """The definition NCCL uses (the first writer)."""
        return next((s for s in self.settings if s.name == name), None)

    def value(self, name: str) -> str | None:
        s = self.effective(name)
        return None if s is None else s.value

    def candidates(self, name: str) -> tuple[Setting, ...]:
        """The definition each source would contribute on its own: the environment's, and the first line of each
        conf file (later lines of the same file never apply). The first is the effective one."""
        out, seen = [], set()
        for s in self.settings:
            if s.name == name and s.source not in seen:
                seen.add(s.source)
                out.append(s)
        return tuple(out)

    def names(self) -> tuple[str, ...]:
        return tuple(sorted({s.name for s in self.settings}))

    def duplicates(self) -> list[tuple[Setting, Setting]]:
        """(ignored line, the earlier line of the same file that wins)."""
        out = []
        first: dict[tuple[str, str], Setting] = {}
        for s in self.settings:
            if s.from_env:
                continue
            key = (s.source, s.name)
            if key in first:
                out.append((s, first[key]))
            else:
                first[key] = s
        return out

    def overridden(self) -> list[tuple[Setting, Setting]]:
        """(a conf file's definition, the earlier source's definition that wins) where the values differ."""
        out = []
        for name in self.names():
            cands = self.candidates(name)
            for later in cands[1:]:
                if later.value != cands[0].value:
                    out.append((later, cands[0]))
        return out


def resolve_sources(env: Iterable[tuple[str, str]], conf_files: Sequence, version: Version = DEFAULT_VERSION) -> Resolved:
    """``env``: (name, value) pairs of the process; ``conf_files``: objects with ``path``/``text`` in the order
    NCCL reads them (the user's file, then /etc/nccl.conf)."""
    settings = [Setting(k, v, ENV) for k, v in sorted(env) if k.startswith("NCCL_")]
    lines: list[ConfLine] = []
    paths: list[str] = []
    for conf in conf_files:
        if conf.path in paths:  # NCCL_CONF_FILE=/etc/nccl.conf: the second read sets nothing new
            continue
        paths.append(conf.path)
        for cl in read_conf(conf.text, conf.path, version):
            lines.append(cl)
            if cl.name is not None:
                settings.append(Setting(cl.name, cl.value or "", conf.path, cl.line, cl.raw))
    return Resolved(tuple(settings), tuple(lines), tuple(paths), version)


def resolve(node, version: Version = DEFAULT_VERSION) -> Resolved:
    """The settings of a probed node (``facts.nccl_env`` and ``facts.conf_files``)."""
    return resolve_sources(node.facts.nccl_env, node.facts.conf_files, version)


def user_conf_path(env: dict[str, str]) -> str | None:
    """The user conf file NCCL reads: ``$NCCL_CONF_FILE`` when non-empty (2.23+), else ``$HOME/.nccl.conf``."""
    if env.get("NCCL_CONF_FILE"):
        return env["NCCL_CONF_FILE"]
    if env.get("HOME"):
        return env["HOME"].rstrip("/") + "/.nccl.conf"
    return None


# --------------------------------------------------------------------------------------------------
# NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL (graph/paths.cc:ncclGetLevel, topoPathTypeStr in graph/topo.cc)

#: Names compared with strcmp (exact, case-sensitive), with the release that first accepts each.
PATH_LEVELS: tuple[tuple[str, Version], ...] = (
    ("LOC", (2, 4, 0)), ("NVL", (2, 4, 0)), ("NVB", (2, 8, 0)), ("C2C", (2, 26, 0)), ("PIX", (2, 4, 0)),
    ("PXB", (2, 4, 0)), ("P2C", (2, 27, 0)), ("PXN", (2, 12, 0)), ("PHB", (2, 4, 0)), ("SYS", (2, 4, 0)),
)
#: Legacy integers: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above SYS (levelsOldToNew).
LEGACY_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS", "SYS")


def level_names(version: Version = DEFAULT_VERSION) -> tuple[str, ...]:
    return tuple(n for n, since in PATH_LEVELS if version >= since)


@dataclass(frozen=True)
class LevelRead:
    #: The level NCCL uses; None when it ignores the value (and keeps its default).
    level: str | None
    #: ``name``, ``legacy`` (an integer) or ``ignored``.
    how: str
    legacy_value: int | None = None


def read_level(value: str, version: Version = DEFAULT_VERSION) -> LevelRead:
    if value in level_names(version):
        return LevelRead(value, "name")
    if value[:1].isdigit() and value[:1].isascii():
        old = c_strtoll(value).value
        return LevelRead(LEGACY_LEVELS[min(old, len(LEGACY_LEVELS) - 1)], "legacy", old)
    return LevelRead(None, "ignored")


# --------------------------------------------------------------------------------------------------
# NCCL_ALGO / NCCL_PROTO (graph/tuning.cc:parseList)

#: (name, first release, last release or None); compared case-insensitively.
ALGORITHMS: tuple[tuple[str, Version, Version | None], ...] = (
    ("Tree", (2, 4, 0), None), ("Ring", (2, 0, 0), None), ("CollNet", (2, 7, 0), (2, 13, 4)),
    ("CollNetDirect", (2, 14, 0), None), ("CollNetChain", (2, 14, 0), None), ("NVLS", (2, 17, 0), None),
    ("NVLSTree", (2, 18, 0), None), ("PAT", (2, 23, 0), None),
)
PROTOCOLS: tuple[tuple[str, Version, Version | None], ...] = (
    ("LL", (2, 0, 0), None), ("LL128", (2, 5, 0), None), ("Simple", (2, 0, 0), None),
)
FUNCTIONS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")


def _available(table, version: Version) -> tuple[str, ...]:
    return tuple(n for n, since, until in table if version >= since and (until is None or version <= until))


@dataclass(frozen=True)
class ListProblem:
    #: ``element``, ``prefix``, ``no-prefix``, ``empty``.
    kind: str
    token: str
    #: NCCL rejects the whole value (2.24+: ncclInvalidUsage, communicator init fails).
    fatal: bool


def check_algo_proto(value: str, what: str, version: Version = DEFAULT_VERSION) -> list[ListProblem]:
    """Problems NCCL would have with ``NCCL_ALGO`` (``what="algo"``) or ``NCCL_PROTO`` (``"proto"``)."""
    elems = [e.lower() for e in _available(ALGORITHMS if what == "algo" else PROTOCOLS, version)]
    funcs = [f.lower() for f in FUNCTIONS]
    out: list[ListProblem] = []
    if version < (2, 24, 0):
        # Flat "[^]e1,e2": unknown tokens are skipped silently.
        body = value[1:] if value.startswith("^") else value
        for tok in (t for t in body.split(",") if t):
            if tok.lower() not in elems:
                out.append(ListProblem("element", tok, False))
        return out
    pos = 0
    for full in value.split(";"):
        first = pos == 0
        pos += len(full) + 1
        if not full:
            continue  # strtok skips empty tokens (but then the next one is no longer the first)
        parts = [p for p in full.split(":") if p]
        if not parts:
            out.append(ListProblem("empty", full, True))
            continue
        prefix, elem_list = (parts[0], parts[1]) if len(parts) > 1 else (None, parts[0])
        if prefix is None and not first:
            out.append(ListProblem("no-prefix", full, True))
            continue
        if elem_list.startswith("^"):
            elem_list = elem_list[1:]
        if prefix is not None and prefix.lower() not in funcs:
            out.append(ListProblem("prefix", prefix, True))
        for tok in (t for t in elem_list.split(",") if t):
            if tok.lower() not in elems:
                out.append(ListProblem("element", tok, True))
    return out


def algo_proto_names(what: str, version: Version = DEFAULT_VERSION) -> tuple[str, ...]:
    return _available(ALGORITHMS if what == "algo" else PROTOCOLS, version)
