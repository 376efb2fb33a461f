"""What the weight_cache_daemon and its clients (scheduler, `serve cache`, launcher) share: model
identities, the wire messages, the shared-memory segment layout, and the client side (ask, map)."""
