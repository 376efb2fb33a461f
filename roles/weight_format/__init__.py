"""Checkpoint tensors converted into the execution format: what the scheduler's model holds and what the
weight_cache_daemon shares. Plain tensors under the model's state names; no module of any role is built."""
