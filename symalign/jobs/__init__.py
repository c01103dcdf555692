"""The app's background job queue: long work (alignments, merges, sweeps) run by a worker process
while pages stay responsive. Sweeps themselves live in symalign.sweeps."""
