"""Theus et al. 2025, "Generalized Linear Mode Connectivity for Transformers" (Tables 1-2
in the main text; the appendix's tables and figures)."""

from symalign.papers.table import Claim, PaperTable, Row

PAPER = "Theus et al. 2025 (Generalized LMC for Transformers)"
APPENDIX = "000_2d78e6879bf1c9a5.txt"  # the authors' appendix; 001 is a summary of the main text
DATASETS = ("CIFAR-10", "CIFAR-100", "Tiny ImageNet", "Tiny Shakespeare", "BookCorpus")

TABLE1 = PaperTable(
    key="theus-table1", paper=PAPER, source="001_52d604f193ce0b6d.txt", name="Table 1",
    caption="Table 1: Two-Model Alignment Loss Barrier Comparison",
    setting=("loss barrier between two independently trained models after alignment, lower is better. ViTs on "
             "CIFAR-10/100 (6 layers, 8 heads, width 256, MLP 512) and Tiny ImageNet (8 layers, width 384); GPT-2 "
             "on Tiny Shakespeare (6 layers, 4 heads, width 256, MLP 1024, 100 epochs) and BookCorpus (6 layers, "
             "8 heads, width 512, MLP 2048, 5 epochs); pre-LN models with LayerNorm re-parametrised as RMSNorm so "
             "the residual stream admits orthogonal maps. 'Learned matching (permutation only)' learns "
             "permutations in place of every orthogonal map (the residual stream included, appendix B.1)."),
    columns=tuple(c for d in DATASETS for c in (d, f"{d} ±")),
    rows=(
        Row("| Vanilla averaging", (1.69, 0.07, 2.46, 0.04, 2.84, 0.02, 2.02, 0.12, 4.34, 0.09), "Vanilla averaging"),
        Row("| Activation matching", (1.27, 0.13, 2.11, 0.17, 1.86, 0.10, 1.43, 0.16, 4.05, 0.13),
            "Activation matching"),
        Row("| Weight matching (Ours)", (0.36, 0.01, 0.69, 0.21, 0.47, 0.04, 0.34, 0.01, 1.56, 0.02),
            "Weight matching (Ours)"),
        Row("| Learned matching (permutation only)", (0.45, 0.02, 0.53, 0.07, 0.29, 0.02, 0.63, 0.17, 1.60, 0.04),
            "Learned matching (permutation only)"),
        Row("| Learned matching (Ours)", (0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.02, 0.00, 0.42, 0.01),
            "Learned matching (Ours)"),
    ),
    plus_minus="the spread over the paper's model pairs (its text gives no count or kind)",
    claims=(  # the authors' words (their appendix); the table's file is a summary of the paper
        Claim("Our proposed iterative weight matching algorithm, while not outperforming learned matching, "
              "requires significantly fewer computational resources",
              "per zoo pair: weight (all) − learned (all), the learned barrier no higher",
              source=APPENDIX),
        Claim("orthogonal matching provides a more effective path to convergence than permutation matching in the "
              "data-free setting",
              "per zoo pair: weight (all-perm) − weight (all), at the zoo's sweeps to convergence (App. B.2 / "
              "Fig. 6 counts iterations on CIFAR-10 ViTs)",
              source=APPENDIX),
    ),
    zoo=("not comparable in size: the zoo's vit-digits (4 layers, width 64, 8×8 digits) and gpt-shakespeare "
         "(2 layers, width 128, character-level) train in about a minute on 2 CPU cores; their classes and "
         "matchers are the paper's. symalign's `permutations` preset permutes MLP units and heads only, not the "
         "residual stream: the paper's permutation-only row permutes the residual too."),
    preset="table1",
)

# The zoo's rows and families under the paper's names: the report, the field table and the Ablations page's
# runner all read these (one mapping, not three copies).
ZOO_ROWS = {"vanilla": "Vanilla averaging", "activation (all)": "Activation matching",
            "weight (all)": "Weight matching (Ours)", "learned (all-perm)": "Learned matching (permutation only)",
            "learned (all)": "Learned matching (Ours)"}
ZOO_DATASET = {"vit-digits": "CIFAR-10", "gpt-shakespeare": "Tiny Shakespeare"}  # the zoo family standing in

FIG5 = PaperTable(
    key="theus-fig5", paper=PAPER, source=APPENDIX, name="Fig. 5",
    caption="We visualize the impact of these sampling strategies in Figure 5",
    setting=("App. B.1: learned matching with λ per step drawn from a narrow uniform U(0.4, 0.6) (what the paper "
             "adopts), a uniform U(0, 1), a Gaussian N(0.5, 0.1) clipped to [0, 1], or fixed at 0.5; the loss "
             "along the interpolation path, mean and standard deviation over seeds, ViTs on CIFAR-10. A figure: no "
             "values are printed."),
    columns=(), rows=(),
    claims=(Claim("both uniform and Gaussian sampling result in relatively high loss barriers",
                  "per zoo pair: the lower of uniform's and normal's barriers − uniform_mid's (learned, all "
                  "classes)"),),
    zoo=("not comparable in size: the zoo's vit-digits (4 layers, width 64, 8×8 digits) and gpt-shakespeare "
         "(2 layers, width 128, character-level) against 6-layer, width-256 CIFAR-10 ViTs; learned matching there "
         "may close the barrier under every sampler, and then the zoo cannot separate them."),
    preset="lambda-sampling",
)

FIG6 = PaperTable(
    key="theus-fig6", paper=PAPER, source=APPENDIX, name="Fig. 6",
    caption="Results for ViTs trained on CIFAR-10 are shown in Figure 6",
    setting=("App. B.2: weight matching stopped after a growing number of iterations, with permutations (the "
             "residual stream included) and with orthogonal maps; the loss barrier, ViTs on CIFAR-10. A figure: "
             "no values are printed."),
    columns=(), rows=(),
    claims=(Claim("for orthogonal matching, the loss barrier steadily decreases, converging after five iterations",
                  "per zoo pair: weight (all)'s barrier after 1 sweep − after 5 sweeps"),
            Claim("permutation-based matching shows no significant improvement across iterations",
                  "per zoo pair, as a comparison: orthogonal matching's fall from 1 to 5 sweeps − all-perm's fall"),),
    zoo=FIG5.zoo.replace("learned matching there may close the barrier under every sampler, and then the zoo "
                         "cannot separate them.", "the zoo's sweeps are symalign's coordinate-descent sweeps "
                         "(one pass over every space), the paper's iterations its own."),
    preset="wm-iterations",
)
