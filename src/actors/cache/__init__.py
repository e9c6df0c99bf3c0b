"""The caches (controller-runtime's `pkg/cache`, kube-runtime's reflector `Store`): list-then-watch
informers, the store of our Instances, the index of our derived objects, which owned kinds are
served, and the bounds an Instance must keep to be read at all."""
