"""TensorBoard's plugins, one package each: the plugin's data logic (``data.py``, over the
stores' data providers: :mod:`boardd.data.provider`) and its routes (``tensorboard_routes.py``:
TensorBoard's own, so its UI runs on boardd; ``boardd_routes.py``: boardd's documented API).

:mod:`boardd.data` stays generic (series, blobs, runs, the column cache) and knows no plugin.
"""
