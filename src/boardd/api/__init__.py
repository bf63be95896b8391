"""The HTTP API (Starlette)."""
