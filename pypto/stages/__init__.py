"""The compile flow's stages as pure functions, one module per stage: bytes in, bytes
out (canonical texts and binaries), `fn(inputs: dict, options: dict) -> dict`.

They know nothing of the build graph that keys and caches them (pypto_pipeline).
Each stage is its own module, importing at its top what it runs, so a stage's
implementation digest covers its module's import closure and nothing else's.
"""
