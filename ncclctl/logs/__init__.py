"""What NCCL actually did: NCCL_DEBUG logs and nccl-tests results, read and held against the plan.

* :mod:`.lines`: one log line split into its launcher prefix, NCCL's ``host:pid:tid [dev]`` prefix, level and
  message (every wording NCCL 2.4 to 2.30 prints);
* :mod:`.parse`: a streamed reader that rebuilds processes, ranks and communicators from any number of files;
* :mod:`.show`: the ``log show`` report (text and JSON); :mod:`.check`: the LOG rules; :mod:`.diff`: ``log diff``;
* :mod:`.perf`: nccl-tests output and the expected bus bandwidth (``perf check``).
"""
