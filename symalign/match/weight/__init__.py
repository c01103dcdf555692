"""Weight matching (data-free, Git Re-Basin style): coordinate descent over the spec's spaces, B's running
copy, tensors that lag behind the residual, the assignment solves and whole-unit pairing."""
