"""The worker process (``memlane serve``): one warm process per memlane home.

* :mod:`memlane.worker.server` — lifecycle: locks, port, runtime file, serving,
  background embedding, status and stop for the CLI;
* :mod:`memlane.worker.relay_server` — the worker's end of the hook relay (the
  client end is :mod:`memlane.hooks.relay`, on the hook path);
* :mod:`memlane.worker.web` — the HTTP API, the SSE live feed and the dashboard;
* :mod:`memlane.worker.connections` — per-user connection limits and request
  deadlines of the HTTP server, keyed by :mod:`memlane.worker.peers` (which
  local user is behind a loopback connection);
* :mod:`memlane.worker.client` — the CLI's HTTP client, which sends the token
  only to a listener that proves it holds it.

Nothing here is on the hook path: the hook process imports only ``memlane.hooks``.
"""
