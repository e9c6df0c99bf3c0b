"""Generic actor-style reconcile runtime for OpenEverest providers. Knows nothing of KServe.

The public API: a provider implements `Provider` (see `actors.interface`) and runs under a
`Manager`; what a provider may use besides is listed in `__init__.pyi`, once, and nothing else of
the runtime is imported from outside it (`make lint` checks that with import-linter). The names
load lazily, from the modules the stub names, so importing one module of the runtime (e.g.
`actors.client.resource`) does not import all of it.
docs/architecture.md maps each package to its kube-runtime and controller-runtime counterpart.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
