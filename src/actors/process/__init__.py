"""The settings of a long-running server process: the garbage collector (start-up's objects frozen,
the young generation collected less often, its pauses measured) and the allocator (large buffers
unmapped when freed). Applied by actors.manager.command; why, measured: docs/performance.md."""
