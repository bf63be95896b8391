"""The text plugin: each step's strings rendered as sanitized HTML."""
