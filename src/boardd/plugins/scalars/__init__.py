"""The scalars plugin: TensorBoard's scalars routes (tags, a series, several runs' series)."""
