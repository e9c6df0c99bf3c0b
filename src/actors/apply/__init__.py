"""Writing derived objects (controller-runtime's `client.Patch(Apply)`): server-side apply under one
field manager, refusals named as conflicts or name clashes, pruning, and the ledger that recognises
our own writes when the watch brings them back."""
