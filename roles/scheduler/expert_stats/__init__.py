"""What MoE routing did: the expert distribution recorder and balancedness across expert-parallel ranks."""
