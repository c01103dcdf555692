"""Zhang et al. 2025, "Beyond the Permutation Symmetry of Transformers: The Role of Rotation for Model
Fusion": FFN permutations, within-head rotations and QK rescaling matched in one
pass, then merged by six fusion methods."""

from symalign.papers.table import Claim, PaperTable, Row

PAPER = "Zhang et al. 2025 (rotation symmetry for model fusion)"

TABLE1 = PaperTable(
    key="zhang-table1", paper=PAPER, source="002_2050fa32fa7395c4.txt", name="Table 1",
    caption="Table 1. Experimental results of in-domain (Emotion and NER) and out-of-domain (NER-CoNLL)",
    setting=("RoBERTa-base and DeBERTa-v3-large, each fine-tuned (20 epochs, learning rate 1e-5, batch 16) on "
             "every in-domain dataset (5 for Emotion, 6 for NER) and merged pairwise by Simple averaging, Fisher "
             "and RegMean, without and with their matching (+match); Emotion reports the average macro F1 "
             "(×100) of the merged models, NER micro F1, NER-CoNLL the out-of-domain F1 of merging all NER "
             "models. \"We match only the parameters within the attention layers, while the classifier module is "
             "directly copied from the model fine-tuned on the corresponding downstream task.\""),
    columns=("Emotion RoBERTa", "Emotion DeBERTa", "NER RoBERTa", "NER DeBERTa", "NER-CoNLL RoBERTa",
             "NER-CoNLL DeBERTa"),
    rows=(
        Row("Simple", (35.87, 2.99, 60.88, 27.54, 26.86, 10.80)),
        Row("+match", (35.87, 2.99, 60.88, 31.31, 26.87, 23.30), name="Simple +match"),
        Row("Fisher", (44.02, 35.95, 54.55, 33.20, 23.06, 12.53)),
        Row("+match", (44.05, 35.98, 54.58, 33.83, 23.05, 18.33), name="Fisher +match"),
        Row("Regmean", (35.87, 2.99, 60.88, 27.54, 26.86, 10.80)),
        Row("+match", (39.95, 2.99, 60.88, 31.31, 26.87, 14.06), name="Regmean +match"),
    ),
    claims=(
        Claim("Our parameter matching algorithm consistently improves the performance of different model fusion "
              "methods",
              "per fusion method and zoo pair: the merged classifier's macro F1 with their attention matching "
              "above without"),
        Claim("Compared to RoBERTa-base, our method brings larger improvement for DeBERTa-large",
              "not decided: the zoo has one size of sequence classifier", testable=False),
        Claim("Among all the fusion methods, simple fusion shows the largest improvement after parameter matching",
              "per other method over the pairs (the paper's cells are means over pairwise merges): Simple's gain "
              "in macro F1 minus that method's"),
    ),
    notes=("The paper's Simple and Regmean rows print the same six values without matching; RegMean's matched "
           "Emotion DeBERTa cell (2.99) equals its unmatched one.",),
    zoo=("not comparable in size, data or pairing: the zoo's bert-shakespeare-genre classifiers (2 layers, width "
         "64; a speech's genre, 3 classes) are fine-tunes of three different pre-training seeds on the same task; "
         "Zhang et al. merge fine-tunes of one pre-trained model on different datasets of a task. The NER and "
         "NER-CoNLL columns (token classification) have no zoo stand-in. As the paper: attention only is "
         "matched (QK and VO rotations with rescaling), the classifier head is copied from A."),
    preset="zhang-table1",
)

TABLE2 = PaperTable(
    key="zhang-table2", paper=PAPER, source="002_2050fa32fa7395c4.txt", name="Table 2",
    caption="Table 2. Experimental results of ViT merging over the image classification task.",
    setting=("two pretrained ViTs (following Imfeld et al. 2024) merged and evaluated on CIFAR-10, accuracy % of "
             "the merged model. Columns: no matching, matching without QK rescaling (FFN permutations and "
             "within-head rotations), full matching. 'We match each layer separately before conducting model "
             "fusion. The merged model achieving the highest validation performance is selected.' The OT "
             "baselines in the paper's words: 'OT-ACTS measures activation similarity using Euclidean distance, "
             "while OT-ACTS-EMD employs Earth Mover’s Distance'; OT-WTS aligns the weights. (symalign's "
             "stand-ins: OT-ACTS with Sinkhorn plans, OT-ACTS-EMD with exact ones, symalign.sweeps.peers.)"),
    columns=("w/o match", "w/o rescale", "match"),
    rows=(
        Row("Simple", (7.60, 10.22, 10.19)),
        Row("Fisher", (17.96, 18.61, 18.58)),
        Row("Regmean", (14.24, 15.31, 15.35)),
        Row("OT-ACTS-EMD", (32.08, 32.50, 32.53)),
        Row("OT-ACTS", (61.15, 61.23, 61.25)),
        Row("OT-WTS", (57.11, 57.16, 57.17)),
    ),
    claims=(
        Claim("Our parameter matching algorithm consistently improves the performance of different model fusion "
              "methods",
              "per fusion method and zoo pair: merged accuracy with matching above without"),
        Claim("Among all the fusion methods, simple fusion shows the largest improvement after parameter matching",
              "per pair (the paper's table is one pair): simple fusion's gain minus the largest other method's gain"),
    ),
    notes=("The paper's own cells show rescaling lowering Simple (10.22 → 10.19) and Fisher (18.61 → 18.58): "
           "rescaling is not claimed to help every method in this table.",),
    zoo=("not comparable in size or protocol: the zoo merges its vit-digits seeds (4 layers, width 64, 8×8 digits) "
         "matched in one pass over all layers, with no per-layer matching and no selection on a validation split."),
    preset="zhang-table2",
)

FIG3 = PaperTable(
    key="zhang-fig3", paper=PAPER, source="002_2050fa32fa7395c4.txt", name="Fig. 3",
    caption="Figure 3. Ablation Study of ViT merging",
    setting="Table 2's ViT merging with matching restricted: w/o ATTN (FFN only), w/o FFN (attention only), "
            "w/o rescaling; a figure, so no values are printed.",
    columns=(), rows=(),
    claims=(
        Claim("In Fisher and RegMean, attention matching contributes more significantly to the fusion process",
              "a comparison per pair for Fisher and RegMean: accuracy with attention-only matching above FFN-only"),
        Claim("In contrast, OTFusion benefits more from FFN matching",
              "a comparison per pair for the OT methods: accuracy with FFN-only matching above attention-only"),
        Claim("*w/o rescaling* results in performance degradation across most settings",
              "per method over the pairs: full matching above matching without rescaling; then counted over the "
              "six methods, 'most' when more than half agree"),
    ),
    zoo=TABLE2.zoo, preset="zhang-fig3",
)

FIG6 = PaperTable(
    key="zhang-fig6", paper=PAPER, source="002_2050fa32fa7395c4.txt", name="Fig. 6",
    caption="Figure 6. Evaluation loss of matching a subset of layers.",
    setting=("DeBERTa fine-tuned on CoLA and STS-B (GLUE), their attention layers matched before merging, but only a "
             "subset: one attention layer at a time (Single-Layer Matching, by layer index) or the last k layers "
             "(Tail-Layers Matching); the evaluation loss of the matched models. A figure: no values are printed."),
    columns=(), rows=(),
    claims=(
        Claim("matching head layers yields greater improvements in model utility compared to tail layers",
              "per pair: the merged model's evaluation loss with only the last attention layer matched minus "
              "with only the first (positive: the first layer's matching helps more)"),
        Claim("the loss value drops sharply when the first 5 layers are matched",
              "not testable on the zoo: its BERT classifiers have 2 layers", testable=False),
    ),
    zoo=("not comparable in size or task: the zoo's genre classifiers (bert-shakespeare-genre, 2 layers, width 64, "
         "three seed pairs) stand in for fine-tuned DeBERTas on CoLA and STS-B; Zhang et al.'s attention matching "
         "(rotations inside heads with rescaling, MLP and residual untouched) of the first layer only, the last "
         "only (Tail-Layers with k = 1) and both (k = 2), then Simple averaging with the classifier copied from "
         "A, as the zoo's Table 1; the paper does not say which fusion method its figure merges with."),
    preset="zhang-fig6",
)

FIG4 = PaperTable(
    key="zhang-fig4", paper=PAPER, source="002_2050fa32fa7395c4.txt", name="Fig. 4",
    caption="Figure 4. The Euclidean Distance of end ViT models",
    setting=("Table 2's two ViTs: the Euclidean distance between the anchor and the matched model over the whole "
             "model, after their matching (with and without rescaling), Git Re-Basin's permutations and OT fusion "
             "of the FFN modules only. A figure: no values are printed."),
    columns=(), rows=(),
    claims=(
        Claim("our rotation symmetry-based parameter matching algorithm consistently reduces the distance between "
              "end models more effectively than permutation symmetry-based methods",
              "per pair: the closest of Git Re-Basin's and OT fusion's rows − their matching without rescaling"),
        Claim("the integration of rescaling symmetry leads to additional distance reductions of end models",
              "per pair: their matching without rescaling − with it"),
    ),
    zoo=("not comparable in size: the zoo's vit-digits seeds (4 layers, width 64, 8×8 digits); the distance is "
         "relative, ‖A − T(B)‖ / ‖A‖ over every tensor."),
    preset="zhang-fig4",
)

FIG5 = PaperTable(
    key="zhang-fig5", paper=PAPER, source="002_2050fa32fa7395c4.txt", name="Fig. 5",
    caption="Figure 5. Loss landscapes and barriers between the two pretrained ViT models",
    setting=("Table 2's two ViTs: the loss along the straight path between A and B as given (w/o match), after "
             "attention-only matching (w/o FFN), FFN-only matching (w/o ATTN) and complete matching; the paper's "
             "loss barrier is \"the range of loss value along the interpolation path\". A figure: no values are "
             "printed."),
    columns=(), rows=(),
    claims=(Claim("Complete matching yields the lowest loss barrier",
                  "per pair: the lowest other curve's barrier − complete matching's, by the paper's range of loss "
                  "and by symalign's rise above the straight line, each decided"),),
    zoo=FIG4.zoo.replace("the distance is relative, ‖A − T(B)‖ / ‖A‖ over every tensor.",
                         "the path A → T(B) on the pair's evaluation split."),
    preset="zhang-fig5",
)
