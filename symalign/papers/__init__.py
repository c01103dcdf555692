"""The papers symalign reproduces, as objects (issue #69): each table's setting, the values its paper
prints (transcribed from the papers' texts and checked against them by tests/test_papers.py), its
claims in the paper's words and how the zoo decides them. One registry for the CLI, the report and the app."""

from symalign.papers import theus, transfusion, verma, zhang
from symalign.papers.table import Claim, PaperTable, Row

TABLES: dict[str, PaperTable] = {t.key: t for t in (
    theus.TABLE1, zhang.TABLE2, zhang.FIG3, verma.TABLE1, verma.TABLE2, verma.FIG3, transfusion.TABLE3,
    transfusion.FIG4)}

__all__ = ["TABLES", "Claim", "PaperTable", "Row", "paper_table"]


def paper_table(key: str) -> PaperTable:
    from symalign.errors import SymalignError

    if key not in TABLES:
        raise SymalignError(f"no paper table {key!r}; choose one of {', '.join(TABLES)}")
    return TABLES[key]
