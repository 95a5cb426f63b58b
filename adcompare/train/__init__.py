"""Training real models with the nn library: data sets, the training loop,
its plots, and the training-step benchmark."""
