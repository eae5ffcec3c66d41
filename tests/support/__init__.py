"""What the tests share: oracles from the trace JSON, recording helpers, the real
TensorBoard on a port, and the refactoring tools (route snapshot, route hops).
Modules to import, never tests (docs/development.md maps each package's module to its tests)."""
