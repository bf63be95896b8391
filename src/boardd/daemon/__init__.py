"""The daemon: service life cycle, watcher, ingest scheduler."""
