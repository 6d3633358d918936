"""The worker process (``memlane serve``): one warm process per memlane home.

* :mod:`memlane.worker.server` — lifecycle: locks, port, runtime file, serving,
  background embedding, status and stop for the CLI;
* :mod:`memlane.worker.relay_server` — the worker's end of the hook relay (the
  client end is :mod:`memlane.hooks.relay`, on the hook path);
* :mod:`memlane.worker.web` — the HTTP API, the SSE live feed and the dashboard.

Nothing here is on the hook path: the hook process imports only ``memlane.hooks``.
"""
