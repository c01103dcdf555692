"""The papers symalign reproduces, as objects (issue #69): each table's setting, the values its paper
prints (transcribed from the papers' texts and checked against them by tests/test_papers.py), its
claims in the paper's words and how the zoo decides them. One registry for the CLI, the report and the app."""

from symalign.papers import theus, transfusion, verma, zhang
from symalign.papers.table import Claim, PaperTable, Row

TABLES: dict[str, PaperTable] = {t.key: t for t in (
    theus.TABLE1, theus.FIG5, theus.FIG6, zhang.TABLE1, zhang.TABLE2, zhang.FIG3, zhang.FIG4, zhang.FIG5, zhang.FIG6,
    verma.TABLE1, verma.TABLE2, verma.TABLE3, verma.FIG3,
    transfusion.TABLE1, transfusion.TABLE2, transfusion.TABLE3, transfusion.TABLE4,
    transfusion.FIG4, transfusion.FIG5)}

# Every registered table runs on zoo stand-ins (smaller models, other data: each says what differs); none runs
# in the paper's own setting (its models and data). The papers' tables and figures about the matching that are
# not covered, and why: the app and README list them from here.
NOT_COVERED: tuple[tuple[str, str, str], ...] = (
    (theus.PAPER, "Table 2", "the architectures and training configurations (not a result)"),
    (theus.PAPER, "Fig. 7", "width-heterogeneous ViTs (512 against 256) along the path under two λ samplers; "
                            "symalign aligns such pairs (docs/widths.md), but one learned alignment of the zoo's "
                            "narrow–wide pair takes 1 to 3.5 minutes on 2 cores (six for the figure) and closes its "
                            "barrier, so no runner is registered"),
    (theus.PAPER, "Fig. 8", "soft permutations learned with Sinkhorn; symalign's soft matcher exists, the figure's "
                            "runner does not"),
    (zhang.PAPER, "Table 1's NER and NER-CoNLL columns", "token classification: the zoo has no token classifier "
                                                        "(the Emotion columns run on its sequence classifiers)"),
    (zhang.PAPER, "Table 3", "runtimes on the paper's hardware (not comparable on 2 CPU cores)"),
)

__all__ = ["NOT_COVERED", "TABLES", "Claim", "PaperTable", "Row", "paper_table"]


def paper_table(key: str) -> PaperTable:
    from symalign.errors import SymalignError

    if key not in TABLES:
        raise SymalignError(f"no paper table {key!r}; choose one of {', '.join(TABLES)}")
    return TABLES[key]
