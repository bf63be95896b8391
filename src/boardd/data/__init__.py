"""The data-access layer: what every reader of a store shares (HTTP routes, TensorBoard's routes,
hparams): bounded list/read calls, downsampling, value conversion, blob keys, media types.

The hparams API is :mod:`boardd.data.hparams`: ``experiment``, ``list_session_groups`` and
``list_metric_evals`` (and their proto3 JSON forms, which the routes answer with)."""
