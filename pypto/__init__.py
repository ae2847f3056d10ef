"""pypto: the PyPTO compile flow for Ascend, as an incremental build graph."""
__version__ = "0.1.0"
