"""The provider's shared actors: the model and LoRA catalogs, the shared AI Gateway's address and the
Pod Security level of each namespace, each followed once for every Instance."""
