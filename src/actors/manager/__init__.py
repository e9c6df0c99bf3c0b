"""Running a provider (controller-runtime's `pkg/manager`): the Manager that builds every component in
order and starts each once what it needs is up, the shared actors, and leader election."""
