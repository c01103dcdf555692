"""The use cases the CLI and the app share, each recorded in the run history: a barrier, an
alignment (with its barrier), three or more models aligned at once, a merge or a transport, a fitted
curve. They sit above the history (symalign.runs: the store, the records, reuse) and below the
sweeps, the jobs and the two clients."""
