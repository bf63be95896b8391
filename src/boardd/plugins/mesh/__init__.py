"""The mesh plugin: add_mesh's vertices, faces and colours, as TensorBoard's routes send them."""
