"""The performance targets, measured side by side in one run."""
