"""`pypto.pypto_core`: where the reference's programs find names its native core
exports. Only what those programs use is here, each the same object as ours."""
