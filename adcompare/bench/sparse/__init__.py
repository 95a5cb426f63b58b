"""The sparse-derivative sweep: dense against sparse Jacobians and Hessians."""
