"""The investigations behind findings written up in docs/ (each module's docstring names its issue and
finding), kept runnable so a finding can be checked again: `python -m research.experiments.code_pair`,
`python -m research.experiments.learned_levers`, ... Speed, memory and GPU timings are not here: they are
the scripts in benchmarks/. Not imported by the product: the top floor."""
