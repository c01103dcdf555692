"""The generators of the docs' numbers: each writes (or prints) a table or section that docs/ or the
README quotes, from sweeps recorded in the run history. Run from the repository root, e.g.
`python -m research.docgen.results_report --families vit-digits` (docs/results.md) or
`python -m research.docgen.zoo_barriers` (the README's barrier table). Not imported by the product:
they sit on the top floor, above everything they read."""
