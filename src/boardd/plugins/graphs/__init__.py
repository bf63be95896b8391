"""The graphs plugin: a run's graph and a step's run metadata, as TensorBoard sends them."""
