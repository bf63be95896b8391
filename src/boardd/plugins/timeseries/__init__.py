"""TensorBoard's time-series ("metrics") dashboard: its tags, series and image samples."""
