"""Rinaldi et al. 2025, "Update Your Transformer to the Latest Release: Re-Basin of Task Vectors"
(TransFusion): task vectors carried from one pre-training to another by a
permutation found without data."""

from symalign.match.config import CLASS_PRESETS
from symalign.papers.table import Claim, PaperTable, Row

PAPER = "Rinaldi et al. 2025 (TransFusion)"
TASKS = ("EuroSAT", "GTSRB", "SVHN")

# TransFusion permutes and nothing else: the residual stream, MLP units, heads (by their spectral,
# permutation-invariant distance) and the features inside each head (§3).
PERMUTATION_ONLY = CLASS_PRESETS["all-perm"]

TABLE1_TASKS = ("EuroSAT", "DTD", "GTSRB", "SVHN")

TABLE1 = PaperTable(
    key="transfusion-table1", paper=PAPER, source="004_76cd912b00fbd71b.txt", name="Table 1",
    caption="Table 1: Comparison of permutation-based methods on visual tasks",
    setting=("CLIP ViT-B/16 (θ_A: CommonPool pre-training, θ_B: Datacomp) fine-tuned on EuroSAT, DTD, GTSRB and "
             "SVHN (θ_A + τ), its task vector τ moved into θ_B at α = 1: as it is (θ_B + τ), by Optimal Transport "
             "(Imfeld et al.), by Git Re-Basin (Ainsworth et al.) and by TransFusion (permutations only: residual, "
             "MLP units, heads by their spectral distance, one P_attn per head for W_q, W_k and W_v; the residual "
             "composed per block). Each cell is the change in accuracy (percentage points) against θ_B's zero-shot "
             "accuracy: on the task (Task) and on ImageNet-R, the support set (Supp.)."),
    columns=tuple(f"{t} {w}" for t in TABLE1_TASKS for w in ("Task", "Supp.")),
    rows=(
        Row("θB\\theta_{B} zero-shot", (49.02, 68.73, 47.50, 68.73, 43.42, 68.73, 45.97, 68.73),
            "θ_B zero-shot (accuracy %)"),
        Row("θB\\theta_{B} + τ\\mathcal{\\tau}", (-7.62, -16.15, -0.15, -0.10, -5.39, -0.70, -22.00, -16.45),
            "θ_B + τ"),
        Row("θB\\theta_{B} + π(τ)\\pi(\\tau) (Optimal Transport)",
            (-14.05, -5.28, -0.53, -1.18, -2.43, -1.30, -12.30, -2.70), "θ_B + π(τ) (Optimal Transport)"),
        Row("θB\\theta_{B} + π(τ)\\pi(\\tau) (GiT Re-Basin)", (0.95, -0.48, -0.91, -0.02, 0.76, -0.05, 0.79, 0.30),
            "θ_B + π(τ) (Git Re-Basin)"),
        Row("TransFusion (Ours)", (4.95, -0.06, 0.21, -0.08, 1.10, -0.40, 3.64, -0.48)),
    ),
    claims=(
        Claim("our method enhances zero-shot performance on the downstream tasks",
              "per (fine-tune, receiver) combination: TransFusion's task accuracy change at α = 1 above zero"),
        Claim("preserves generalization on the support dataset",
              "per combination: TransFusion's support change within 1 pp of zero, either way (our reading of "
              "'preserves'; the paper's changes are at most 0.48 pp)"),
        Claim("outperforming existing permutation-based methods",
              "per combination: TransFusion's task change above the larger of Optimal Transport's and Git "
              "Re-Basin's"),
    ),
    zoo=("not comparable in size or task: the zoo transports fine-tunes of its digit ViTs (trained further on "
         "flipped digits) from seed 0 into seeds 1 and 2, six (fine-tune, receiver) combinations, one task where the "
         "paper has four, the support set the original digits; TransFusion as in Table 3 (permutations only, one "
         "P_attn per head for Q, K and V, the spectral head distance, the residual permuted per block from the "
         "weights as the paper's eq. 12); Git Re-Basin permutes MLP units and whole heads (circuit "
         "cost), not the residual; Optimal Transport is OT-WTS with exact plans on every space (residual, MLP, "
         "heads, the maps inside them), which at equal widths are permutations."),
    preset="transfusion-table1", fmt="+.2f",
)

TABLE2_TASKS = ("QQP", "SST2", "RTE", "CoLA")

TABLE2 = PaperTable(
    key="transfusion-table2", paper=PAPER, source="004_76cd912b00fbd71b.txt", name="Table 2",
    caption="Table 2: Comparison of permutation-based methods on NLP tasks",
    setting=("a CLIP ViT-B-16 text encoder ϕ (θ_A: commonpool-l-s1b-b8k, θ_B: datacomp-l-s1b-b8k) with a "
             "classification head ω, fine-tuned on four GLUE tasks; the encoder's task vector τ_ϕ = ϕ_A^ft − ϕ_A "
             "moved onto ϕ_B at α = 1 as it is, by Optimal Transport, by Git Re-Basin and by TransFusion, and the "
             "originally fine-tuned classifier ω^ft re-used as it is (\"As access to data of the downstream task is "
             "restricted, we are unable to train a new classifier for θB\"). The first row is θ_B's task accuracy "
             "with ω^ft (%), the others its change (percentage points); no support set."),
    columns=TABLE2_TASKS,
    rows=(
        Row("θB\\theta_{B}", (55.00, 50.69, 54.51, 40.94), "θ_B (accuracy %)"),
        Row("θB\\theta_{B} + τ\\mathcal{\\tau}", (-8.29, 0.23, -2.53, -0.77), "θ_B + τ"),
        Row("θB\\theta_{B} + τ\\mathcal{\\tau} (OT)", (-8.31, 5.39, -1.08, -1.25), "θ_B + τ (OT)"),
        Row("θB\\theta_{B} + τ\\mathcal{\\tau} (GiT Re-Basin)", (3.58, 5.73, 2.17, 1.44), "θ_B + τ (Git Re-Basin)"),
        Row("TransFusion (Ours)", (6.50, 5.96, 3.61, 2.49)),
    ),
    claims=(
        Claim("simply applying the classification head from the original feature extractor ... yields poor "
              "performance",
              "per (fine-tune, receiver) combination: the fine-tune's own task accuracy (ω^ft on ϕ_A^ft) − θ_B's "
              "with ω^ft (our reading of 'poor': below the head's own encoder)"),
        Claim("our approach leads to the highest and more consistent performance gains",
              "per combination: TransFusion's Δ task above the largest of θ_B + τ's, OT's and Git Re-Basin's"),
    ),
    zoo=("not comparable in size or task: the zoo's masked-LM BERTs on the plays (bert-shakespeare, 2 layers, "
         "width 64) stand in for the two text encoders, each seed's genre classifier (bert-shakespeare-genre, a "
         "speech's genre: one task where the paper has four) for the fine-tunes; the encoder's task vector of seed "
         "s moves onto each other seed r, six (fine-tune, receiver) combinations, the fine-tune's pooler and "
         "classifier re-used unmoved as the paper's ω^ft. The support column (the masked-LM accuracy of ϕ_B + "
         "π(τ_ϕ) under B's own head) is ours; Table 2 prints none. TransFusion, Optimal Transport and Git "
         "Re-Basin as in Table 1 (TransFusion's residual permuted per block, as the paper)."),
    preset="transfusion-table2", fmt="+.2f",
)

TABLE4 = PaperTable(
    key="transfusion-table4", paper=PAPER, source="004_76cd912b00fbd71b.txt", name="Table 4",
    caption="Table 4: Fine-tuning results with permuted task vectors.",
    setting=("Table 1's transports (CLIP ViT-B/16, EuroSAT, DTD, GTSRB, SVHN) followed by few-shot fine-tuning as "
             "Zhang et al. (2024): 10 shots per class, learning one scaling coefficient per layer, α = [α_1, …, "
             "α_|L|], for θ_B + ατ (τ as it is) and for θ_B + απ(τ) (TransFusion's π). The first row is θ_B's "
             "zero-shot task accuracy (%), the others its change (percentage points); no support set printed."),
    columns=TABLE1_TASKS,
    rows=(
        Row("θB\\theta_{B} zero-shot", (49.02, 47.50, 43.42, 45.97), "θ_B zero-shot (accuracy %)"),
        Row("θB+ατ\\theta_{B}+\\alpha\\tau", (7.93, -1.44, 4.70, -15.98), "θ_B + ατ"),
        Row("θB+απ(τ)\\theta_{B}+\\alpha\\pi(\\tau)", (10.00, 1.21, 6.80, 10.52), "θ_B + απ(τ)"),
    ),
    claims=(
        Claim("a substantial improvement when fine-tuning a model that has undergone re-basin using our approach",
              "per (fine-tune, receiver) combination: θ_B + απ(τ)'s task accuracy above θ_B's"),
        Claim("without permutation, yields inferior outcomes",
              "per combination: θ_B + απ(τ)'s task accuracy above θ_B + ατ's"),
    ),
    zoo=("not comparable in size or task: Table 1's zoo transports (the digit ViTs' flipped-digit fine-tunes from "
         "seed 0 into seeds 1 and 2, six combinations, one task where the paper has four), then one α per layer "
         "(each block, the embeddings, the final norm, the head) learned from 1 by 100 full-batch Adam steps at "
         "learning rate 0.01 on the first 10 training examples of each digit (symalign's choice: the paper names "
         "Zhang et al.'s recipe, not its steps); the support column (the original digits) is ours."),
    preset="transfusion-table4", fmt="+.2f",
)

TABLE3 = PaperTable(
    key="transfusion-table3", paper=PAPER, source="004_76cd912b00fbd71b.txt", name="Table 3",
    caption="Table 3: TransFusion results by head alignment strategy.",
    setting=("CLIP ViT-B/16 fine-tuned on EuroSAT, GTSRB and SVHN (θ_A + τ), its task vector τ permuted into "
             "another pre-training θ_B with permutations only (residual, MLP units, heads, inside heads: one block "
             "permutation P_attn per head for W_q, W_k and W_v; the residual composed per block, I_i = P_W0 P_inᵀ), "
             "α = 1. "
             "Each cell is the change in accuracy (percentage points) against θ_B's zero-shot accuracy: on the task "
             "(Task) and on ImageNet-R, the support set (Supp.). Head strategies: Brute Force (every head pair "
             "aligned inside, then the Hungarian pairing), No Att-Align (heads kept in their order), Ours (Full) "
             "(the spectral, permutation-invariant inter-head distance)."),
    columns=tuple(f"{t} {w}" for t in TASKS for w in ("Task", "Supp.")),
    rows=(
        Row("θB\\theta_{B} zero-shot", (49.02, 68.73, 43.42, 68.73, 45.97, 68.73), "θ_B zero-shot (accuracy %)"),
        Row("Brute Force", (1.32, -0.21, 0.60, -0.46, 3.39, -0.40)),
        Row("No Att-Align", (2.22, -0.47, 0.71, 0.05, 0.24, -0.08)),
        Row("Ours (Full)", (4.95, -0.06, 1.10, -0.40, 3.64, -0.48)),
    ),
    claims=(
        Claim("Our attention-alignment strategy achieves superior performance on the downstream task ... compared "
              "to alternative approaches",
              "per (fine-tune, receiver) combination: Ours (Full)'s task gain above Brute Force's and above No "
              "Att-Align's (the paper: on all three tasks against Brute Force)"),
        Claim("preserving the original head ordering (as in the no-alignment strategy) yields better performance "
              "than brute-force inter-head matching for two of the three experimental tasks",
              "per combination: No Att-Align's task gain above Brute Force's (the paper: 2 of 3 tasks; a "
              "comparison, so 'agrees' needs the same direction, not every pair)"),
        Claim("while maintaining comparable zero-shot capabilities",
              "per combination: Ours (Full)'s support change within 1 pp of Brute Force's, either way (our "
              "reading of 'comparable'; the paper's cells differ by at most 0.15 pp)"),
    ),
    zoo=("not comparable in size or task: the zoo transports fine-tunes of its digit ViTs (trained further on "
         "flipped digits) from seed 0 into seeds 1 and 2, six (fine-tune, receiver) combinations, with the support "
         "set the original digits; permutation-only as in the paper (residual, MLP, heads, one P_attn per head for "
         "Q, K and V), the residual permuted per block from the weights as the paper's eq. 12 (one permutation "
         "for the whole stream is an ablation row)."),
    preset="transfusion-table3", fmt="+.2f",
)

FIG4 = PaperTable(
    key="transfusion-fig4", paper=PAPER, source="004_76cd912b00fbd71b.txt", name="Fig. 4",
    caption="Figure 4: Zero-shot gain/drop relative to",
    setting=("θ_B + α·τ (no permutation) against θ_B + α·π(τ) for α in [0.01, 2], on the task and the support "
             "set; a figure, so no values are printed."),
    columns=(), rows=(),
    claims=(
        Claim("applying the permuted ... leads to tangible improvements in the downstream task (top row), "
              "especially",
              "per combination at α = 1: task accuracy with π above without π"),
        Claim("the permuted task vector is considerably more reliable in terms of generalization (higher accuracy "
              "on the support set)",
              "per combination and α ≥ 0.5: support accuracy with π above without π"),
    ),
    zoo=TABLE3.zoo, preset="transfusion-fig4",
)

FIG5 = PaperTable(
    key="transfusion-fig5", paper=PAPER, source="004_76cd912b00fbd71b.txt", name="Fig. 5",
    caption="Figure 5: Loss values on CIFAR-10 test set during model interpolation",
    setting=("two Transformers trained from scratch on CIFAR-10, interpolated: TransFusion's permutation π(θ_A) "
             "against vanilla interpolation and a no-residual variant (top), and against π from Optimal Transport "
             "(Imfeld et al.'s hard alignment) and Git Re-Basin (bottom), which the paper finds high in loss as "
             "α → 0 (not functionally equivalent). A figure: no values are printed."),
    columns=(), rows=(),
    claims=(
        Claim("yields an interpolated model that exhibits consistent lower loss compared to the vanilla approach",
              "per zoo pair: vanilla's barrier − TransFusion's"),
        Claim("the no residual approach underscores the critical role of properly handling residual connections",
              "per zoo pair: the no-residual row's barrier − TransFusion's"),
        Claim("both OT and Git Re-Basin do not preserve functional equivalence",
              "per zoo pair and method: |loss at the aligned end − the model's own loss| − 1e-3 (positive where "
              "the function is lost)"),
    ),
    zoo=("not comparable in size: the zoo's vit-digits seeds (4 layers, width 64, 8×8 digits) stand in for the "
         "paper's CIFAR-10 Transformers; TransFusion here is weight matching with permutations only, one P_attn "
         "per head for Q, K and V and the spectral head distance, with one residual permutation for the whole "
         "stream (the paper composes one per block); no residual leaves the stream unpermuted; Git Re-Basin "
         "permutes MLP units and whole heads; OT is OT-WTS with exact plans on the FFN. symalign applies each as "
         "a symmetry of the model, so any of them keeps the function by construction."),
    preset="transfusion-fig5",
)
