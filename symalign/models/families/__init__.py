"""The architecture families symalign supports: one data file each in this folder (symalign.models.family_file
reads them; docs/extending.md shows one). Every `*.toml` here that is not abstract is supported (loading,
matching, export, the app, `symalign init`) and covered by the tests that run over every family."""

from __future__ import annotations

from symalign.models.family import Family
from symalign.models.family_file import families, family_files


def collect() -> dict[str, Family]:
    """{key: Family} (the model type, or MODEL_TYPE-VARIANT) over the data files, in file then type order. A
    model type may have several (BERT's masked-LM and its sequence classifier): its config's `architectures`
    picks one."""
    found: dict[str, Family] = {}
    for name in family_files():
        for family in families(name):
            found.setdefault(family.key, family)
    return found
