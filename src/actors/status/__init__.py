"""Instance.status (controller-runtime's `Status().Update()`): composing it from a provider's report
the way the OpenEverest runtime does, writing it only when it changed, and the `<instance>-conn`
Secret."""
