"""The worker's web layer: HTTP API, SSE live feed and dashboard (DESIGN §2, §8).

Import :func:`memlane.worker.web.app.create_app`; nothing here is on the hook path.
"""
