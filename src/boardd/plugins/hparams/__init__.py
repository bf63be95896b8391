"""The hparams plugin: sessions, their groups and metrics (TensorBoard's hparams API)."""
