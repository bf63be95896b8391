"""boardd's own copies of TensorBoard's wire formats (``*.proto``) and their generated code."""
