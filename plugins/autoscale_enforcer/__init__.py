"""AutoscaleEnforcer: node capacity authority for NeonVM VMs resized live by agents."""
