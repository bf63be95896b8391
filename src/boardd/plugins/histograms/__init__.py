"""The histograms plugin: histograms as TensorBoard's routes send them, and their distributions."""
