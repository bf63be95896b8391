"""The data-access layer: what every reader of a store shares (HTTP routes, TensorBoard's routes,
hparams): bounded list/read calls, downsampling, value conversion, blob keys, media types."""
