"""Verma & Elbayad 2024, "Merging Text Transformer Models from Different Initializations":
activation-based permutations of MultiBERTs (post-LN BERT-base), loss barriers
of the masked-LM loss."""

from symalign.papers.table import Claim, PaperTable, Row

PAPER = "Verma & Elbayad 2024 (merging text transformers)"
METRIC = ("masked-LM loss barrier: the largest difference between an interpolation's loss and the average of "
          "the two models' losses (15% of tokens masked); ± is the standard error over MultiBERTs pairs")

TABLE1 = PaperTable(
    key="verma-table1", paper=PAPER, source="003_ff7582e1dfd41900.txt", name="Table 1",
    caption="Table 1. Loss Barriers of merged MultiBERTs with feed-forward",
    setting=("MultiBERTs (BERT-base, post-LN) merged with feed-forward and attention permuted; rows are the "
             "multi-head attention strategy. " + METRIC + ". One permutation P_MHA is shared by Q, K and V."),
    columns=("Loss Barrier", "Std. Err."),
    rows=(Row("Vanilla Attention Avg.", (4.31, 0.21)), Row("Monotonic Head Alignment", (4.13, 0.20)),
          Row("Ignore-Heads", (3.97, 0.25)), Row("Head-Perm", (3.71, 0.23))),
    plus_minus="the standard error (Std. Err. column)",
    claims=(Claim("Maintaining head structure in the permutation while allowing different head correspondences "
                  "between models is the most optimal permutation",
                  "per pair, on the loss barrier against the endpoints' average: Head-Perm's barrier below every "
                  "other row's"),),
    zoo=("not comparable in size: the zoo's bert-shakespeare (a small post-LN BERT on the plays) stands in for "
         "MultiBERTs; inside heads one permutation P_MHA for Q, K and V, as the paper."),
    preset="verma-heads",
)

TABLE2 = PaperTable(
    key="verma-table2", paper=PAPER, source="003_ff7582e1dfd41900.txt", name="Table 2",
    caption="Table 2. Loss Barriers of merged MultiBERTs with only residual",
    setting="MultiBERTs merged with only the residual stream permuted; rows are the features the permutation is "
            "computed from. " + METRIC + ".",
    columns=("Loss Barrier", "Std. Err."),
    rows=(Row("Identity", (4.95, 0.38)), Row("First", (7.58, 0.19)), Row("Last", (7.41, 0.18)),
          Row("All", (7.34, 0.22)), Row("Separate", (9.38, 0.49))),
    plus_minus="the standard error (Std. Err. column)",
    claims=(Claim("an identity permutation performs significantly better than all other proposed approaches",
                  "per pair: Identity's barrier below First's, Last's, All's and Separate's"),),
    zoo=TABLE1.zoo, preset="verma-residual",
)

FIG3 = PaperTable(
    key="verma-fig3", paper=PAPER, source="003_ff7582e1dfd41900.txt", name="Fig. 3",
    caption="Figure 3. Pseudo-perplexity scores of BERTs",
    setting=("MultiBERTs merged with a growing set of components (vanilla averaging, all feed-forward sublayers, "
             "all attention sublayers, both), the residual and the output projection left as they are; "
             "pseudo-perplexity (their eq. 11, over the masked tokens) along the interpolation, 10 merges with "
             "standard-error regions. A figure: no values are printed."),
    columns=(), rows=(),
    claims=(Claim("Each additional merged component leads to further barrier reduction",
                  "per pair, on the eq. 11 pseudo-perplexity barrier (Fig. 3's measure, over the masked tokens): "
                  "feed-forward only and attention only each below vanilla averaging, and both below either "
                  "alone (the smallest of these four margins must be positive)"),),
    zoo=TABLE1.zoo, preset="verma-components",
)

TABLE3_TASKS = ("MNLI-mm", "QQP", "QNLI", "SST-2", "CoLA", "STS-B", "MRPC", "RTE")

TABLE3 = PaperTable(
    key="verma-table3", paper=PAPER, source="003_ff7582e1dfd41900.txt", name="Table 3",
    caption="Table 3. Loss barriers for both vanilla averaging of fine-tuned",
    setting=("MultiBERTs fine-tuned on 8 GLUE tasks (a new pooler and classifier, initialised the same in every "
             "model), merged by vanilla averaging and by their method with feed-forward, attention and residual "
             "permuted (the residual by the First strategy), features from each task's training data; the loss "
             "barrier of the task's own loss against the average of the two models' losses over the validation "
             "set, with its standard error over the 10 pairs of 5 models."),
    columns=("Vanilla averaging Barrier", "Vanilla averaging Error", "Ours Barrier", "Ours Error"),
    rows=tuple(Row(task, numbers) for task, numbers in zip(TABLE3_TASKS, (
        (0.61, 0.03, 0.72, 0.08), (1.37, 0.09, 1.20, 0.11), (0.64, 0.04, 0.77, 0.06), (0.42, 0.04, 0.36, 0.07),
        (1.31, 0.14, 1.11, 0.13), (5.15, 0.44, 4.24, 0.35), (2.74, 0.08, 1.93, 0.11), (0.53, 0.04, 0.41, 0.05)))),
    plus_minus="the standard error (Error columns)",
    claims=(Claim("6 of 8 tasks see a loss barrier reduction in using our method",
                  "per pair, on the loss barrier against the endpoints' average: vanilla averaging's barrier − "
                  "Ours' (the paper counts tasks; the zoo has one task and counts seed pairs)"),),
    zoo=("not comparable in size or task: the zoo's genre classifiers (bert-shakespeare-genre: each seed's "
         "bert-shakespeare fine-tuned to tell a speech's genre, one task where the paper has eight) stand in for "
         "the GLUE fine-tunes, three seed pairs for ten; their pooler and classifier start from each seed's own "
         "initialisation (the paper's share one) and are averaged as they are; Ours is activation matching of "
         "the feed-forward units, the heads (Head-Perm) with one permutation P_MHA for Q, K and V inside each, "
         "and one residual permutation from the first stream, features from the genre task's data."),
    preset="verma-classifiers",
)
