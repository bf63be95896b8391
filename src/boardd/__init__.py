"""boardd: keeps TensorBoard logdirs live, fast and safe on the machine where a model trains."""

__version__ = "0.1.0"
