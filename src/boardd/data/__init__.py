"""The data-access layer: what every reader of a store shares (boardd's HTTP routes, TensorBoard's
routes, the plugins): each experiment's data provider (:mod:`boardd.data.provider`), bounded
list/read calls, downsampling, value conversion, blob keys, media types. It knows no plugin:
each plugin's logic is in its package under :mod:`boardd.plugins`."""
