"""The projector plugin: add_embedding's files beside the event files."""
