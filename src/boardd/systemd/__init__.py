"""systemd tooling: unit files rendered from templates, path escaping, ``install-service``."""
