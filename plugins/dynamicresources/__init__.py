"""DynamicResources: Dynamic Resource Allocation (structured parameters), as upstream 1.36."""
