"""The harness: problems measured cell by cell into a versioned results file."""
