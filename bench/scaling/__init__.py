"""bench/scale.py's parts: what the Instances look like (workloads), the provider process under
test and what is read from it (process), the phases of one run (phases, lifecycle) and the tables
(report)."""
