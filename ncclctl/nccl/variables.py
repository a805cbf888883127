"""The NCCL variables each release reads: name, first and last release, and how the value is parsed.

The table was extracted from every NVIDIA/nccl release tag from v2.3.5 to v2.30.7: ``NCCL_PARAM`` names
(``src/include/param.h``, read by ``misc/param.cc:ncclLoadParam``), ``DEFINE_NCCL_PARAM`` keys (the 2.30 param
registry) and every ``"NCCL_..."`` string passed to ``ncclGetEnv``/``getenv``; 2.31.2 and 2.32.3 (no release tag
in the source mirror) from the released libraries (``nvidia-nccl-cu12`` wheels) with ``tools/nccl_extract.py``:
the names their code reads, how (``ncclLoadParam``: int, ``ncclGetEnv``: str) and the typed registry's dump.
:data:`REPLACED_BY` follows the release notes.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from typing import Iterable, Literal

from ncclctl.nccl.version import Version, parse
from ncclctl.record import record

# --------------------------------------------------------------------------------------------------
# Known variables: name, first release that reads it, last release that reads it ("-": still read), how its
# value is parsed: int (NCCL_PARAM: strtoll base 0), typed (2.30 param registry: its own parser), str; and flags
# (comma-separated, optional): plugin (read by a plugin in NCCL's source tree: the inspector, the example profiler
# and tuner, not by libnccl), sensitive (NCCL's registry marks it SENSITIVE: its value is a secret, which
# ``snapshot --redact`` and ``facts`` replace by REDACTED). tools/nccl_extract.py compares the table with a released
# library. 2.32.3 has the SENSITIVE flag (its parameter dump prints such a value as <redacted>), but none of the ten
# parameters of its registry carries it, and the variables read outside the registry have no flags: no row is
# sensitive yet.

_TABLE = """
NCCL_AGG_ALLOC_MODE                                       2.10.3  2.12.12 str
NCCL_AGG_CHANNEL_SIZE                                     2.10.3  2.19.4  int
NCCL_ALGO                                                 2.5.6   -       str
NCCL_ALLGATHERV_ENABLE                                    2.29.2  -       int
NCCL_ALLOC_P2P_NET_LL_BUFFERS                             2.14.3  -       int
NCCL_BUFFSIZE                                             2.3.5   -       int
NCCL_CE_CHUNK_SIZE                                        2.32.3  -       int
NCCL_CE_COLL_AG_MULTICAST_THRESHOLD                       2.31.2  -       int
NCCL_CE_INTRA_GPU_MEMCPY_ENABLE                           2.32.3  -       int
NCCL_CFT_ENABLE                                           2.31.2  -       int
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
NCCL_DEBUG                                                2.3.5   -       str
NCCL_DEBUG_FILE                                           2.3.5   -       str
NCCL_DEBUG_LEVELS                                         2.32.3  -       typed
NCCL_DEBUG_SUBSYS                                         2.3.5   -       str
NCCL_DEBUG_TIMESTAMP_FORMAT                               2.26.2  -       str
NCCL_DEBUG_TIMESTAMP_LEVELS                               2.26.2  -       str
NCCL_DEV_API_JIT                                          2.30.7  -       int
NCCL_DIAGNOSTICS_ECC_THRESHOLD                            2.31.2  -       int
NCCL_DIAGNOSTICS_IB_BW_TIMEOUT                            2.32.3  -       int
NCCL_DISABLE_MEM_MANAGER                                  2.29.7  -       int
NCCL_DMABUF_ENABLE                                        2.13.4  -       int
NCCL_ELASTIC_BUFFER_REGISTER                              2.30.3  -       int
NCCL_ENABLE_VERSION_CHECK                                 2.29.2  -       int
NCCL_ENQUEUE_REARCH_ENABLE                                2.31.2  -       int
NCCL_ENV_PLUGIN                                           2.28.7  -       str
NCCL_GDAKI_FORCE_MCST                                     2.32.3  -       int
NCCL_GDAKI_USE_RELIABLE_DB                                2.29.7  -       int
NCCL_GDRCOPY_ENABLE                                       2.9.6   -       int
NCCL_GDRCOPY_FIFO_ENABLE                                  2.9.6   -       int
NCCL_GDRCOPY_FLUSH_ENABLE                                 2.9.6   -       int
NCCL_GDRCOPY_SYNC_ENABLE                                  2.12.7  -       int
NCCL_GDRCOPY_TAIL_ENABLE                                  2.9.6   2.11.4  int
NCCL_GDRCOPY_USE_INTERNAL_DMABUF                          2.31.2  -       int
NCCL_GDR_FLUSH_DISABLE                                    2.3.5   -       int
NCCL_GIN_COUNTER_POOL_SIZE                                2.28.7  2.29.7  int
NCCL_GIN_ENABLE                                           2.28.7  -       int
NCCL_GIN_ERROR_QUERY_SEC                                  2.28.7  -       int
NCCL_GIN_EXCLUSIVE_CONTEXTS                               2.29.7  2.29.7  int
NCCL_GIN_GDAKI_LAG_AWARE_DISABLE                          2.32.3  -       int
NCCL_GIN_GDAKI_MAX_DEST_RD_ATOMIC                         2.30.3  -       int
NCCL_GIN_GDAKI_MAX_QP_RD_ATOMIC                           2.30.3  -       int
NCCL_GIN_GDAKI_NIC_HANDLER                                2.28.7  -       int
NCCL_GIN_GDAKI_QP_DEPTH                                   2.28.7  -       int
NCCL_GIN_IB_OOO_OPT                                       2.31.2  -       int
NCCL_GIN_IB_TC                                            2.30.7  -       int
NCCL_GIN_NCONNECTIONS                                     2.29.7  -       int
NCCL_GIN_NCONTEXTS                                        2.28.7  2.29.7  int
NCCL_GIN_PLUGIN                                           2.29.7  -       str
NCCL_GIN_PLUGIN_REF_COUNT                                 2.29.7  -       int
NCCL_GIN_PROXY_NTHREADS                                   2.31.2  -       int
NCCL_GIN_PROXY_POLL_BATCH                                 2.31.2  -       int
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
NCCL_HIER_CE_COLL_AG_RAIL_RING_ENABLE                     2.32.3  -       int
NCCL_HIER_CE_COLL_NUM_CTX                                 2.31.2  -       int
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
NCCL_IB_EVENT_BASED_LB                                    2.31.2  -       int
NCCL_IB_EVENT_BASED_LB_REMOTE                             2.31.2  -       int
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
NCCL_IB_PKEY_VALUE                                        2.31.2  -       int
NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS                     2.29.7  -       int
NCCL_IB_QPS_PER_CONNECTION                                2.10.3  -       int
NCCL_IB_QUERY_PORT_SPEED                                  2.30.7  -       int
NCCL_IB_RAIL_POLICY                                       2.32.3  -       str
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
NCCL_IB_SORT_MERGE_NICS                                   2.32.3  -       int
NCCL_IB_SPLIT_DATA_ON_QPS                                 2.18.1  -       int
NCCL_IB_SUBNET_AWARE_ROUTING                              2.30.7  -       int
NCCL_IB_SUBNET_PREFIX_LEN                                 2.30.7  -       int
NCCL_IB_TC                                                2.3.5   -       int
NCCL_IB_TIMEOUT                                           2.3.5   -       int
NCCL_IB_USE_INLINE                                        2.8.3   -       int
NCCL_IB_WARN_RAIL_LOCAL                                   2.24.3  -       int
NCCL_IB_WQE_LATENCY_REPORT                                2.31.2  -       int
NCCL_IB_WQE_LATENCY_THRESHOLD_NS                          2.31.2  -       int
NCCL_IGNORE_COLLNET_MISMATCH                              2.30.3  -       int
NCCL_IGNORE_CPU_AFFINITY                                  2.4.6   -       int
NCCL_IGNORE_DISABLED_P2P                                  2.12.7  -       int
NCCL_IGNORE_NET_MISMATCH                                  2.30.3  -       int
NCCL_INSPECTOR_COLL_POOL_SIZE                             2.30.3  -       str plugin
NCCL_INSPECTOR_COMM_POOL_SIZE                             2.30.3  -       str plugin
NCCL_INSPECTOR_DUMP_COLL_RING_SIZE                        2.30.3  -       str plugin
NCCL_INSPECTOR_DUMP_DIR                                   2.28.3  -       str plugin
NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES                        2.30.3  -       str plugin
NCCL_INSPECTOR_DUMP_P2P_RING_SIZE                         2.30.3  -       str plugin
NCCL_INSPECTOR_DUMP_THREAD_ENABLE                         2.28.3  -       str plugin
NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS          2.28.3  -       str plugin
NCCL_INSPECTOR_DUMP_VERBOSE                               2.28.3  -       str plugin
NCCL_INSPECTOR_ENABLE                                     2.28.3  -       str plugin
NCCL_INSPECTOR_ENABLE_P2P                                 2.30.3  -       str plugin
NCCL_INSPECTOR_P2P_POOL_SIZE                              2.30.3  -       str plugin
NCCL_INSPECTOR_POOL_GROW                                  2.30.3  -       str plugin
NCCL_INSPECTOR_PROM_DUMP                                  2.29.3  -       str plugin
NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING                      2.30.3  -       str plugin
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
NCCL_MLOPART_RDMA_ENABLE                                  2.30.7  2.31.2  int
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
NCCL_NET_GDR_MLOPART                                      2.30.7  2.31.2  int
NCCL_NET_GDR_READ                                         2.3.5   -       int
NCCL_NET_MERGE_LEVEL                                      2.24.3  -       str
NCCL_NET_MERGE_POLICY                                     2.30.7  -       str
NCCL_NET_OPTIONAL_RECV_COMPLETION                         2.24.3  -       int
NCCL_NET_OVERHEAD                                         2.18.1  -       int
NCCL_NET_PLUGIN                                           2.11.4  -       str
NCCL_NET_PLUGIN_REF_COUNT                                 2.26.2  -       int
NCCL_NET_SHARED_BUFFERS                                   2.8.3   -       int
NCCL_NET_SHARED_COMMS                                     2.12.7  -       int
NCCL_NO_CACHE                                             2.29.7  -       str
NCCL_NSOCKS_PERTHREAD                                     2.4.8   -       int
NCCL_NTHREADS                                             2.3.5   -       int
NCCL_NUM_RMA_CTX                                          2.29.2  -       int
NCCL_NUM_RMA_INT_CTX                                      2.31.2  -       int
NCCL_NVB_DISABLE                                          2.9.9   -       int
NCCL_NVB_PRECONNECT                                       2.9.9   -       int
NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE                     2.27.3  -       int
NCCL_NVLSTREE_MAX_CHUNKSIZE                               2.20.3  -       int
NCCL_NVLS_CHUNKSIZE                                       2.21.5  -       int
NCCL_NVLS_ENABLE                                          2.17.1  -       int
NCCL_NVLS_NCHANNELS                                       2.17.1  -       int
NCCL_NVLS_UB_SIZE                                         2.32.3  -       int
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
NCCL_P2P_PER_CHANNEL_REG_NET_BW                           2.31.2  -       int
NCCL_P2P_PXN_LEVEL                                        2.12.7  -       int
NCCL_P2P_READ_ENABLE                                      2.7.3   -       int
NCCL_P2P_SCHEDULE_GROUP_SIZE                              2.28.7  -       int
NCCL_P2P_USE_CUDA_MEMCPY                                  2.13.4  -       int
NCCL_PARAM_DUMP_ALL                                       2.30.3  -       typed
NCCL_PAT_ENABLE                                           2.23.4  -       int
NCCL_PROFILER_CE_POLLER_INTERVAL_MICROSECONDS             2.29.3  -       str plugin
NCCL_PROFILER_CE_TIMING                                   2.29.3  -       str plugin
NCCL_PROFILER_PLUGIN                                      2.23.4  -       str
NCCL_PROFILE_CE_BATCH_POOL_SIZE                           2.29.3  -       str plugin
NCCL_PROFILE_CE_COLL_POOL_SIZE                            2.29.3  -       str plugin
NCCL_PROFILE_CE_SYNC_POOL_SIZE                            2.29.3  -       str plugin
NCCL_PROFILE_COLL_API_POOL_SIZE                           2.28.3  -       str plugin
NCCL_PROFILE_COLL_POOL_SIZE                               2.23.4  -       str plugin
NCCL_PROFILE_DUMP_FILE                                    2.23.4  -       str plugin
NCCL_PROFILE_EVENT_MASK                                   2.23.4  -       str plugin
NCCL_PROFILE_GROUP_API_POOL_SIZE                          2.28.3  -       str plugin
NCCL_PROFILE_GROUP_POOL_SIZE                              2.23.4  -       str plugin
NCCL_PROFILE_KERNEL_LAUNCH_POOL_SIZE                      2.28.3  -       str plugin
NCCL_PROFILE_P2P_API_POOL_SIZE                            2.28.3  -       str plugin
NCCL_PROFILE_P2P_POOL_SIZE                                2.23.4  -       str plugin
NCCL_PROFILE_PROXY_CTRL_POOL_SIZE                         2.23.4  -       str plugin
NCCL_PROFILE_PROXY_DETACH_POOL_SIZE                       2.23.4  -       str plugin
NCCL_PROGRESS_APPENDOP_FREQ                               2.16.5  -       int
NCCL_PROGRESS_COUNTERS                                    2.32.3  -       int
NCCL_PROGRESS_COUNTER_MONITOR_POLL_MS                     2.32.3  -       int
NCCL_PROGRESS_COUNTER_MONITOR_STALE_MS                    2.32.3  -       int
NCCL_PROGRESS_COUNTER_MONITOR_STALE_WARN_SEC              2.32.3  -       int
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
NCCL_RMA_EAGER_INIT                                       2.31.2  -       int
NCCL_RMA_IB_WR_BATCHSIZE                                  2.32.3  -       int
NCCL_RMA_MULTI_CTX_THRESHOLD                              2.31.2  -       int
NCCL_RMA_PLUGIN                                           2.30.7  -       str
NCCL_RMA_PLUGIN_REF_COUNT                                 2.30.7  -       int
NCCL_RMA_PROXY_DUMP_SIGNAL                                2.29.2  -       int
NCCL_RMA_PROXY_QUEUE_SIZE                                 2.29.2  -       int
NCCL_RUNTIME_CONNECT                                      2.22.3  -       int
NCCL_RUN_DIAGNOSTICS                                      2.31.2  -       int
NCCL_RUN_RAS_DIAGNOSTICS                                  2.31.2  -       int
NCCL_SET_CPU_STACK_SIZE                                   2.28.3  -       int
NCCL_SET_STACK_SIZE                                       2.9.6   -       int
NCCL_SET_THREAD_NAME                                      2.12.7  -       int
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
NCCL_TOPO_SCATTER_START_NET                               2.31.2  2.31.2  int
NCCL_TOPO_SPLIT_MLOPART                                   2.30.7  -       int
NCCL_TREE_THRESHOLD                                       2.4.2   2.4.8   int
NCCL_TUNER_CONFIG_FILE                                    2.27.5  -       str plugin
NCCL_TUNER_PLUGIN                                         2.19.1  -       str
NCCL_UID_STAGGER_RATE                                     2.23.4  -       int
NCCL_UID_STAGGER_THRESHOLD                                2.23.4  -       int
NCCL_UNPACK_DOUBLE_NCHANNELS                              2.22.3  -       int
NCCL_WARN_ENABLE_DEBUG_INFO                               2.19.4  -       str
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


@record
class VarInfo:
    name: str
    since: Version
    #: The last release that reads it; None: still read by the newest release in the table.
    until: Version | None
    #: ``int`` (strtoll base 0), ``typed`` (its own parser) or ``str``.
    kind: str
    #: The table's flags column: ``plugin`` (read by a plugin in NCCL's source tree, not by libnccl),
    #: ``sensitive`` (NCCL's registry marks it SENSITIVE: its value is a secret).
    flags: frozenset[str] = frozenset()


def _load_table() -> dict[str, VarInfo]:
    out = {}
    for row in _TABLE.split("\n"):
        if not row.strip():
            continue
        name, since, until, kind, *flags = row.split()
        out[name] = VarInfo(name, parse(since), None if until == "-" else parse(until), kind,
                            frozenset(",".join(flags).split(",")) - {""})
    return out


KNOWN: dict[str, VarInfo] = _load_table()

# --------------------------------------------------------------------------------------------------
# Defaults of NCCL 2.32.3 (tools/nccl_extract.py --defaults on its library): an int variable's NCCL_PARAM default
# (the constant its call sites pass to ncclLoadParam; on the 2.30.7 library the same scan agrees with the source for
# all 198 NCCL_PARAMs), a registry parameter's default from ncclParamDumpAll. -2147483648 is NCCL_CONFIG_UNDEF_INT
# (unset: ncclConfig_t or NCCL decides), -1 and -2 usually mean NCCL decides at run time. Variables read as text
# have no row.

DEFAULTS_RELEASE = Version(2, 32, 3)
_DEFAULTS = """
NCCL_ALLGATHERV_ENABLE                                    1
NCCL_ALLOC_P2P_NET_LL_BUFFERS                             0
NCCL_BUFFSIZE                                             -2
NCCL_CE_CHUNK_SIZE                                        8388608
NCCL_CE_COLL_AG_MULTICAST_THRESHOLD                       -1
NCCL_CE_INTRA_GPU_MEMCPY_ENABLE                           1
NCCL_CFT_ENABLE                                           1
NCCL_CGA_CLUSTER_SIZE                                     -2147483648
NCCL_CHECK_POINTERS                                       0
NCCL_CHUNK_SIZE                                           0
NCCL_COLLNET_ENABLE                                       -2147483648
NCCL_COLLNET_NODE_THRESHOLD                               2
NCCL_COMM_BLOCKING                                        -2147483648
NCCL_COMM_SHRINK_SHARE_RESOURCES                          -2147483648
NCCL_COMM_SPLIT_SHARE_RESOURCES                           -2147483648
NCCL_CONNECT_ROUND_MAX_PEERS                              128
NCCL_CROSS_NIC                                            2
NCCL_CUMEM_ENABLE                                         -2
NCCL_CUMEM_HOST_ENABLE                                    -1
NCCL_DEBUG_LEVELS                                         NONE
NCCL_DEBUG_SUBSYS                                         INIT,ENV,BOOTSTRAP
NCCL_DEBUG_TIMESTAMP_LEVELS                               WARN,ATTN
NCCL_DEV_API_JIT                                          0
NCCL_DIAGNOSTICS_ECC_THRESHOLD                            0
NCCL_DIAGNOSTICS_IB_BW_TIMEOUT                            5
NCCL_DISABLE_MEM_MANAGER                                  0
NCCL_DMABUF_ENABLE                                        1
NCCL_ELASTIC_BUFFER_REGISTER                              1
NCCL_ENABLE_VERSION_CHECK                                 1
NCCL_ENQUEUE_REARCH_ENABLE                                0
NCCL_GDAKI_FORCE_MCST                                     0
NCCL_GDAKI_USE_RELIABLE_DB                                0
NCCL_GDRCOPY_ENABLE                                       0
NCCL_GDRCOPY_FIFO_ENABLE                                  1
NCCL_GDRCOPY_FLUSH_ENABLE                                 0
NCCL_GDRCOPY_SYNC_ENABLE                                  1
NCCL_GDRCOPY_USE_INTERNAL_DMABUF                          0
NCCL_GDR_FLUSH_DISABLE                                    0
NCCL_GIN_ENABLE                                           1
NCCL_GIN_ERROR_QUERY_SEC                                  10
NCCL_GIN_GDAKI_LAG_AWARE_DISABLE                          0
NCCL_GIN_GDAKI_MAX_DEST_RD_ATOMIC                         -2
NCCL_GIN_GDAKI_MAX_QP_RD_ATOMIC                           -2
NCCL_GIN_GDAKI_NIC_HANDLER                                0
NCCL_GIN_GDAKI_QP_DEPTH                                   128
NCCL_GIN_IB_OOO_OPT                                       0
NCCL_GIN_IB_TC                                            -1
NCCL_GIN_NCONNECTIONS                                     -2
NCCL_GIN_PLUGIN_REF_COUNT                                 0
NCCL_GIN_PROXY_NTHREADS                                   1
NCCL_GIN_PROXY_POLL_BATCH                                 32
NCCL_GIN_PROXY_QUEUE_SIZE                                 -1
NCCL_GIN_TYPE                                             -1
NCCL_GRAPH_DUMP_FILE_RANK                                 0
NCCL_GRAPH_HELPER_DISABLE                                 0
NCCL_GRAPH_MIXING_SUPPORT                                 -2147483648
NCCL_GRAPH_REGISTER                                       1
NCCL_GRAPH_STREAM_ORDERING                                -2147483648
NCCL_GROUP_CUDA_STREAM                                    0
NCCL_HIER_CE_COLL_AG_RAIL_RING_ENABLE                     -1
NCCL_HIER_CE_COLL_NUM_CTX                                 -1
NCCL_IB_ADAPTIVE_ROUTING                                  -2
NCCL_IB_AR_THRESHOLD                                      -2
NCCL_IB_DATA_DIRECT                                       1
NCCL_IB_DEVICE_PCI_ORDER                                  1
NCCL_IB_DISABLE                                           0
NCCL_IB_ECE_ENABLE                                        1
NCCL_IB_EVENT_BASED_LB                                    0
NCCL_IB_EVENT_BASED_LB_REMOTE                             1
NCCL_IB_FIFO_TC                                           -1
NCCL_IB_GID_INDEX                                         -1
NCCL_IB_MERGE_NICS                                        1
NCCL_IB_MERGE_VFS                                         1
NCCL_IB_MQP_RETRY_ALL                                     0
NCCL_IB_MQP_RETRY_CNT                                     34
NCCL_IB_MQP_RETRY_SLEEP_MSEC                              100
NCCL_IB_OOO_RQ                                            0
NCCL_IB_PCI_RELAXED_ORDERING                              2
NCCL_IB_PKEY                                              0
NCCL_IB_PKEY_VALUE                                        -1
NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS                     -2
NCCL_IB_QPS_PER_CONNECTION                                1
NCCL_IB_QUERY_PORT_SPEED                                  1
NCCL_IB_RECEIVER_SIDE_MATCHING_SCHEME                     -2
NCCL_IB_RESILIENCY_PORT_FAILOVER                          0
NCCL_IB_RESILIENCY_PORT_FAILOVER_MAX_ATTEMPTS             1
NCCL_IB_RESILIENCY_PORT_FAILOVER_PROBE_DELAY              10
NCCL_IB_RESILIENCY_PORT_RECOVERY                          0
NCCL_IB_RESILIENCY_PORT_RECOVERY_ACK_TIMEOUT              5000
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_INTERVAL 500
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_SIZE     5
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_SEQUENCE_SIZE  5
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_TIMEOUT        4000
NCCL_IB_RESILIENCY_PORT_RECOVERY_ATTEMPTS_MAX             20
NCCL_IB_RESILIENCY_PORT_RECOVERY_START_DELAY              200
NCCL_IB_RETRY_CNT                                         7
NCCL_IB_RETURN_ASYNC_EVENTS                               1
NCCL_IB_ROCE_VERSION_NUM                                  2
NCCL_IB_ROUTABLE_FLID_GID_INDEX                           1
NCCL_IB_SL                                                -1
NCCL_IB_SORT_MERGE_NICS                                   1
NCCL_IB_SPLIT_DATA_ON_QPS                                 0
NCCL_IB_SUBNET_AWARE_ROUTING                              0
NCCL_IB_SUBNET_PREFIX_LEN                                 24
NCCL_IB_TC                                                -1
NCCL_IB_TIMEOUT                                           20
NCCL_IB_USE_INLINE                                        0
NCCL_IB_WARN_RAIL_LOCAL                                   0
NCCL_IB_WQE_LATENCY_REPORT                                1
NCCL_IB_WQE_LATENCY_THRESHOLD_NS                          0
NCCL_IGNORE_COLLNET_MISMATCH                              0
NCCL_IGNORE_CPU_AFFINITY                                  0
NCCL_IGNORE_DISABLED_P2P                                  0
NCCL_IGNORE_NET_MISMATCH                                  1
NCCL_IPC_USE_ABSTRACT_SOCKET                              1
NCCL_L1_SHARED_MEMORY_CARVEOUT                            0
NCCL_LAUNCH_ORDER_IMPLICIT                                -2147483648
NCCL_LAUNCH_RACE_FATAL                                    1
NCCL_LEGACY_CUDA_REGISTER                                 0
NCCL_LL128_BUFFSIZE                                       -2
NCCL_LL128_C2C                                            1
NCCL_LL128_NTHREADS                                       -2
NCCL_LL_BUFFSIZE                                          -2
NCCL_LOCAL_REGISTER                                       1
NCCL_LSA_TEAM_SIZE                                        0
NCCL_MAX_CTAS                                             -2147483648
NCCL_MAX_NCHANNELS                                        -2
NCCL_MAX_NRINGS                                           -2
NCCL_MAX_P2P_NCHANNELS                                    64
NCCL_MEM_SYNC_DOMAIN                                      1
NCCL_MIN_CTAS                                             -2147483648
NCCL_MIN_NCHANNELS                                        -2
NCCL_MIN_NRINGS                                           -2
NCCL_MIN_P2P_NCHANNELS                                    1
NCCL_MNNVL_CLIQUE_ID                                      -1
NCCL_MNNVL_CROSS_CLIQUE                                   0
NCCL_MNNVL_ENABLE                                         2
NCCL_MNNVL_RAIL_PER_HOST                                  -1
NCCL_MNNVL_SCATTER_NETS_ENABLE                            1
NCCL_MNNVL_UUID                                           -1
NCCL_MULTI_RANK_GPU_ENABLE                                0
NCCL_MULTI_SEGMENT_REGISTER                               1
NCCL_NCHANNELS_PER_NET_PEER                               -2147483648
NCCL_NET_DISABLE_INTRA                                    0
NCCL_NET_FORCE_FLUSH                                      0
NCCL_NET_GDR_C2C                                          1
NCCL_NET_GDR_READ                                         -2
NCCL_NET_OPTIONAL_RECV_COMPLETION                         1
NCCL_NET_OVERHEAD                                         -2
NCCL_NET_PLUGIN_REF_COUNT                                 0
NCCL_NET_SHARED_BUFFERS                                   -2
NCCL_NET_SHARED_COMMS                                     1
NCCL_NSOCKS_PERTHREAD                                     -2
NCCL_NTHREADS                                             -2
NCCL_NUM_RMA_CTX                                          -2147483648
NCCL_NUM_RMA_INT_CTX                                      -1
NCCL_NVB_DISABLE                                          0
NCCL_NVB_PRECONNECT                                       1
NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE                     -2147483648
NCCL_NVLSTREE_MAX_CHUNKSIZE                               -2
NCCL_NVLS_CHUNKSIZE                                       131072
NCCL_NVLS_ENABLE                                          2
NCCL_NVLS_NCHANNELS                                       -2147483648
NCCL_NVLS_UB_SIZE                                         -1
NCCL_NVTX_DISABLE                                         0
NCCL_OOB_NET_ENABLE                                       0
NCCL_P2P_DIRECT_DISABLE                                   0
NCCL_P2P_EPOCH_ENABLE                                     1
NCCL_P2P_LL_THRESHOLD                                     16384
NCCL_P2P_MAX_PEERS                                        -2147483648
NCCL_P2P_NET_CHUNKSIZE                                    131072
NCCL_P2P_NVL_CHUNKSIZE                                    524288
NCCL_P2P_PCI_CHUNKSIZE                                    131072
NCCL_P2P_PER_CHANNEL_NET_BW                               14
NCCL_P2P_PER_CHANNEL_REG_NET_BW                           -1
NCCL_P2P_PXN_LEVEL                                        2
NCCL_P2P_READ_ENABLE                                      -2
NCCL_P2P_SCHEDULE_GROUP_SIZE                              8
NCCL_P2P_USE_CUDA_MEMCPY                                  0
NCCL_PARAM_DUMP_ALL                                       FALSE
NCCL_PAT_ENABLE                                           2
NCCL_PROGRESS_APPENDOP_FREQ                               8
NCCL_PROGRESS_COUNTERS                                    0
NCCL_PROGRESS_COUNTER_MONITOR_POLL_MS                     1000
NCCL_PROGRESS_COUNTER_MONITOR_STALE_MS                    5000
NCCL_PROGRESS_COUNTER_MONITOR_STALE_WARN_SEC              600
NCCL_PROXY_APPEND_BATCH_SIZE                              16
NCCL_PROXY_DUMP_SIGNAL                                    -1
NCCL_PXN_C2C                                              1
NCCL_PXN_DISABLE                                          0
NCCL_RAS_ENABLE                                           1
NCCL_REPORT_CONNECT_PROGRESS                              0
NCCL_RMA_DISABLE                                          0
NCCL_RMA_EAGER_INIT                                       -2147483648
NCCL_RMA_IB_WR_BATCHSIZE                                  64
NCCL_RMA_MULTI_CTX_THRESHOLD                              -1
NCCL_RMA_PLUGIN_REF_COUNT                                 0
NCCL_RMA_PROXY_DUMP_SIGNAL                                -1
NCCL_RMA_PROXY_QUEUE_SIZE                                 -1
NCCL_RUNTIME_CONNECT                                      1
NCCL_RUN_DIAGNOSTICS                                      0
NCCL_RUN_RAS_DIAGNOSTICS                                  0
NCCL_SET_CPU_STACK_SIZE                                   1
NCCL_SET_STACK_SIZE                                       0
NCCL_SET_THREAD_NAME                                      FALSE
NCCL_SHADOW_MEMPOOL_MAX_SIZE                              1073741824
NCCL_SHM_DISABLE                                          0
NCCL_SHM_LOCALITY                                         2
NCCL_SINGLE_PROC_MEM_REG_ENABLE                           0
NCCL_SOCKET_INLINE                                        128
NCCL_SOCKET_MIN_TASKSIZE                                  65536
NCCL_SOCKET_NTHREADS                                      -2
NCCL_SOCKET_POLL_TIMEOUT_MSEC                             0
NCCL_SOCKET_RCVBUF                                        -1
NCCL_SOCKET_RETRY_CNT                                     34
NCCL_SOCKET_RETRY_SLEEP_MSEC                              100
NCCL_SOCKET_SNDBUF                                        -1
NCCL_SYM_CE_THRESHOLD                                     8388608
NCCL_SYM_CTAS                                             0
NCCL_SYM_GIN_KERNELS_ENABLE                               1
NCCL_SYM_NOWIN_ENABLE                                     0
NCCL_SYM_REUSE_SYSMEM_HANDLES                             0
NCCL_SYM_RS_GIN_CHUNK_SIZE                                -1
NCCL_SYM_TMA_ENABLE                                       1
NCCL_TOPO_DUMP_FILE_RANK                                  0
NCCL_TOPO_SPLIT_MLOPART                                   1
NCCL_UID_STAGGER_RATE                                     7000
NCCL_UID_STAGGER_THRESHOLD                                256
NCCL_UNPACK_DOUBLE_NCHANNELS                              1
NCCL_WARN_ENABLE_DEBUG_INFO                               FALSE
NCCL_WIN_ENABLE                                           1
NCCL_WIN_STRIDE                                           -1
NCCL_WORK_ARGS_BYTES                                      9223372036854775807
NCCL_WORK_FIFO_BYTES                                      1048576
"""
_defaults: dict[str, str] = {}


def default_at(name: str, version: Version) -> str | None:
    """The default NCCL ``version`` uses for ``name`` when it is unset or rejected, as text; None when the table has
    no default for that release (only :data:`DEFAULTS_RELEASE` and later, the newest release in the table)."""
    if version < DEFAULTS_RELEASE:
        return None
    if not _defaults:
        for row in _DEFAULTS.strip().splitlines():
            key, value = row.split(None, 1)
            _defaults[key] = value
    return _defaults.get(name)


#: Variables whose parsing changed: name -> ((first release of the new way, kind), ...), oldest first. The table's
#: kind holds from the variable's first release to the first change; :func:`kind_at` gives the kind of a release.
KIND_CHANGES: dict[str, tuple[tuple[Version, str], ...]] = {
    # 2.31.2 reads it with ncclGetEnv as a floating-point factor (the libraries' call sites), no longer strtoll.
    "NCCL_RAS_TIMEOUT_FACTOR": ((Version(2, 31, 2), "str"),),
    # The typed parameter registry (DEFINE_NCCL_PARAM): its own parsers from 2.30.3 (param.cc) and 2.30.7
    # (debug.cc); before, getenv and strcasecmp/strtok (str) or NCCL_PARAM (int).
    "NCCL_NO_CACHE": ((Version(2, 30, 3), "typed"),),
    **dict.fromkeys(("NCCL_DEBUG", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_TIMESTAMP_FORMAT",
                     "NCCL_DEBUG_TIMESTAMP_LEVELS", "NCCL_SET_THREAD_NAME", "NCCL_WARN_ENABLE_DEBUG_INFO"),
                    ((Version(2, 30, 7), "typed"),)),
}


#: What ``snapshot --redact`` and ``facts`` write instead of the value of a sensitive variable.
REDACTED = "<redacted>"


def sensitive_variable(name: str) -> bool:
    """NCCL's registry marks ``name`` SENSITIVE (the table's ``sensitive`` flag): its value must not leave the node."""
    info = KNOWN.get(name)
    return info is not None and "sensitive" in info.flags


def kind_at(name: str, version: Version | None = None) -> str | None:
    """How ``version`` (the newest release in the table when None) parses ``name``: ``int``, ``typed`` or ``str``;
    None for a name the table does not know."""
    info = KNOWN.get(name)
    if info is None:
        return None
    kind = info.kind
    for since, changed in KIND_CHANGES.get(name, ()):
        if version is None or version >= since:
            kind = changed
    return kind


#: NCCL_* variables read by the common network plugins, not by NCCL itself: nccl-rdma-sharp-plugins (SHARP CollNet,
#: UCX and its own IB transport; Mellanox/nccl-rdma-sharp-plugins 2f5ac02) and aws-ofi-nccl (2daf7d30), from their
#: NCCL_PARAM definitions and getenv calls. Their IB transport's NCCL_IB_* names are NCCL's own.
PLUGIN_VARIABLES: dict[str, str] = {
    **dict.fromkeys((
        "NCCL_IBEXT_DISABLE", "NCCL_IB_IS_GLOBAL", "NCCL_PLUGIN_P2P", "NCCL_SHARP_COLL_TRACE", "NCCL_SHARP_DISABLE",
        "NCCL_SHARP_DISABLE_ALLGATHER", "NCCL_SHARP_DISABLE_REDUCE_SCATTER", "NCCL_SHARP_GROUP_SIZE_THRESH",
        "NCCL_SHARP_MAX_COMMS", "NCCL_SHARP_V3_DATATYPES", "NCCL_UCX_CUDA_DISABLE", "NCCL_UCX_DISABLE",
        "NCCL_UCX_RMA_DISABLE", "NCCL_UCX_TLS", "NCCL_UCX_ZCOPY_THRESH"), "nccl-rdma-sharp-plugins"),
    "NCCL_GIN_PROXY_NTHREADS": "aws-ofi-nccl",
}
#: aws-ofi-nccl's own settings are OFI_NCCL_* (include/nccl_ofi_param.h): a NCCL_OFI_* name is one of them misnamed.
OFI_VARIABLES = frozenset((
    "OFI_NCCL_ABORT_ON_ERROR", "OFI_NCCL_CM_NUM_RX_BUFFERS", "OFI_NCCL_CQ_READ_COUNT", "OFI_NCCL_CQ_SIZE",
    "OFI_NCCL_CUDA_FLUSH_ENABLE", "OFI_NCCL_DISABLE_CLOSE_MESSAGE", "OFI_NCCL_DISABLE_DMABUF",
    "OFI_NCCL_DISABLE_GDR_REQUIRED_CHECK", "OFI_NCCL_DISABLE_NATIVE_RDMA_CHECK", "OFI_NCCL_EAGER_MAX_SIZE",
    "OFI_NCCL_EARLY_COMPLETION", "OFI_NCCL_ENDPOINT_PER_COMM", "OFI_NCCL_ERRORCHECK_MUTEX", "OFI_NCCL_EXCLUDE_TCP_IF",
    "OFI_NCCL_FORCE_NUM_RAILS", "OFI_NCCL_GDAKI_EFA_HW_COUNTER", "OFI_NCCL_GDR_FLUSH_DISABLE",
    "OFI_NCCL_GIN_CQ_PROCESS_MAX_ITER", "OFI_NCCL_MIN_STRIPE_SIZE", "OFI_NCCL_MR_CACHE_DISABLE", "OFI_NCCL_MR_KEY_SIZE",
    "OFI_NCCL_NET_LATENCY", "OFI_NCCL_NIC_DUP_CONNS", "OFI_NCCL_NVTX_TRACE_DIMENSION", "OFI_NCCL_PLATFORM",
    "OFI_NCCL_PROGRESS_MODEL", "OFI_NCCL_PROTOCOL", "OFI_NCCL_RDMA_MAX_POSTED_CONTROL_BUFFERS",
    "OFI_NCCL_RDMA_MAX_POSTED_EAGER_BUFFERS", "OFI_NCCL_RDMA_MIN_POSTED_CONTROL_BUFFERS",
    "OFI_NCCL_RDMA_MIN_POSTED_EAGER_BUFFERS", "OFI_NCCL_RR_CTRL_MSG", "OFI_NCCL_SCHED_MAX_SMALL_RR_SIZE",
    "OFI_NCCL_TUNER_NET_COMP_OVERHEAD", "OFI_NCCL_TUNER_NET_LATENCY", "OFI_NCCL_TUNER_NUM_CHANNELS",
    "OFI_NCCL_TUNER_TYPE", "OFI_NCCL_USE_IPV6_TCP", "OFI_NCCL_USE_LOW_LATENCY_TC"))

#: The words build systems and module files give the variables that locate NCCL (PyTorch's NCCL_ROOT,
#: NCCL_LIB_DIR, NCCL_INCLUDE_DIR; TensorFlow's NCCL_INSTALL_PATH, NCCL_HDR_PATH; NCCL_HOME in modules).
_HELPER_RE = re.compile(r"NCCL_(?:[A-Z0-9]+_)*(?:HOME|ROOT|DIR|DIRS|LIBDIR|PATH|PREFIX|INCLUDE|INCLUDES|INC|LIB|"
                        r"LIBS|LIBRARY|LIBRARIES|SO|VERSION|VER|HDR|HEADERS|BIN|SRC|BUILD)")


def plugin_variable(name: str) -> str | None:
    """The plugin that reads ``name`` (an NCCL_* variable NCCL itself does not), or None."""
    return PLUGIN_VARIABLES.get(name)


def helper_variable(name: str) -> bool:
    """A build or installation helper named NCCL_* (``NCCL_LIB_DIR``, ``NCCL_HOME``): not a setting of NCCL."""
    return name not in KNOWN and _HELPER_RE.fullmatch(name) is not None


def known_variable(name: str, patterns: Iterable[str] = ()) -> VarInfo | Literal[True] | None:
    """The table entry for ``name``; True when a common plugin reads it or a site pattern (fnmatch) knows it; None
    when unknown."""
    info = KNOWN.get(name)
    if info is not None:
        return info
    if name in PLUGIN_VARIABLES or any(fnmatch.fnmatchcase(name, p) for p in patterns):
        return True
    return None


def _distance(a: str, b: str, limit: int | None = None) -> int:
    """Levenshtein distance with adjacent transpositions (a typo's edits). With ``limit``, any distance above it
    comes back as ``limit + 1`` as soon as two rows in a row are all above it (no later row can come back under)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            v = prev[j - 1] + (ca != cb)
            if prev[j] + 1 < v:
                v = prev[j] + 1
            if cur[j - 1] + 1 < v:
                v = cur[j - 1] + 1
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb and prev2[j - 2] + 1 < v:
                v = prev2[j - 2] + 1
            cur[j] = v
        if limit is not None and min(cur) > limit and min(prev) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


def suggest_variable(name: str) -> str | None:
    """The variable a typo most likely meant: one the newest release in the table or a common plugin reads, whose
    name after ``NCCL_`` is a couple of keystrokes away (or a prefix of it, ``NCCL_DEBUG_SUBSYSTEM``), else None.
    ``NCCL_OFI_X`` gives the aws-ofi-nccl plugin's ``OFI_NCCL_X``."""
    upper = name.upper()
    if upper != name and (upper in KNOWN or upper in PLUGIN_VARIABLES):
        return upper
    if upper.startswith("NCCL_OFI_") and "OFI_NCCL_" + upper[9:] in OFI_VARIABLES:
        return "OFI_NCCL_" + upper[9:]
    if not upper.startswith("NCCL_"):
        return None
    body = upper[5:]
    current = [n for n, i in KNOWN.items() if i.until is None] + list(PLUGIN_VARIABLES)
    best: tuple[float, str] | None = None
    for cand in current:
        cb = cand[5:]
        gap = abs(len(cb) - len(body))
        if gap > 3:
            continue
        prefix = (body.startswith(cb) or cb.startswith(body)) and min(len(cb), len(body)) >= 6
        if not prefix:
            # near: a couple of edits, so never more than two characters longer or shorter
            limit = 1 if len(cb) <= 4 else 2
            if gap > limit or _distance(body, cb, limit) > limit:
                continue
        score = difflib.SequenceMatcher(None, body, cb).ratio()
        if best is None or score > best[0]:
            best = (score, cand)
    return best[1] if best and best[0] >= 0.75 else None
