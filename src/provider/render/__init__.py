"""`provider-kserve render`: what the provider would apply for an Instance, and the chart values
that set its environment."""
