"""The custom scalars plugin: the dashboard layouts writers describe, and their scalars."""
