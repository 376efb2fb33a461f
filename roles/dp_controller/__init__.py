"""The dp_controller role: routes requests across scheduler replicas."""
